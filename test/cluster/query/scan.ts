/**
 * How a query walks a collection: by `_id` (the `_id` index, canonical order, optionally
 * bounded by `min`/`max`) or in natural (insertion) order, forward or backward. Scans resume
 * from the last key they returned, so documents written between batches never break them.
 */
import type { Collection, DocEntry } from '../storage/collection.js';

export interface ScanOptions {
  order: 'id' | 'natural';
  direction: 1 | -1;
  /** Inclusive lower bound on `_id` (order 'id' only). */
  min?: unknown;
  /** Exclusive upper bound on `_id` (order 'id' only). */
  max?: unknown;
}

/** Returns a function yielding successive entries, undefined at the end. */
export function scanCollection(collection: Collection, scanOptions: ScanOptions): () => DocEntry | undefined {
  // A clustered collection stores its documents in _id order: that is its natural order too.
  const options: ScanOptions =
    scanOptions.order === 'natural' && collection.options.clusteredIndex !== undefined ? { ...scanOptions, order: 'id' } : scanOptions;
  const chunk = 256;
  let buffer: DocEntry[] = [];
  let position = 0;
  /** The last entry returned: the next chunk is read after its key. */
  let returned: DocEntry | undefined;
  /** The collection's `changes` when the chunk was read. */
  let readAt = -1;
  let done = false;
  const hasMin = options.min !== undefined;
  const hasMax = options.max !== undefined;

  function refill(): void {
    buffer = [];
    position = 0;
    readAt = collection.changes;
    const last = returned === undefined ? undefined : { key: options.order === 'id' ? returned.id : returned.rid };
    if (options.order === 'id') {
      const tree = collection.byId;
      if (options.direction === 1) {
        // The tree's own range walk: its bounds found once per leaf, no pair per document.
        const low = last ? last.key : hasMin ? options.min : tree.minKey();
        const high = hasMax ? options.max : tree.maxKey();
        // Only the first key can be the last one returned (it may have been deleted since).
        let atLast = last !== undefined;
        if (low !== undefined && high !== undefined) {
          tree.forRange(low, high, !hasMax, (key, entry) => {
            if (atLast) {
              atLast = false;
              if (collection.compareIds(key, last!.key) <= 0) return false;
            }
            buffer.push(entry);
            return buffer.length >= chunk;
          });
        }
      } else {
        const start = last ? last.key : undefined;
        const iterator = start === undefined ? tree.entriesReversed() : tree.entriesReversed(start);
        for (const [key, entry] of iterator) {
          if (last && collection.compareIds(key, last.key) >= 0) continue;
          if (hasMax && collection.compareIds(key, options.max) >= 0) continue;
          if (hasMin && collection.compareIds(key, options.min) < 0) {
            done = true;
            break;
          }
          buffer.push(entry);
          if (buffer.length >= chunk) break;
        }
      }
    } else {
      const tree = collection.byRid;
      const start = last?.key as number | undefined;
      if (options.direction === 1) {
        const high = tree.maxKey();
        if (high !== undefined) {
          tree.forRange(start === undefined ? 0 : start + 1, high, true, (_, entry) => {
            buffer.push(entry);
            return buffer.length >= chunk;
          });
        }
      } else {
        for (const [, entry] of start === undefined ? tree.entriesReversed() : tree.entriesReversed(start - 1)) {
          buffer.push(entry);
          if (buffer.length >= chunk) break;
        }
      }
    }
    done = buffer.length < chunk;
  }

  return () => {
    // A chunk read before a document was inserted or removed is read again from where the scan
    // is, as mongod's cursor, reading one document at a time, sees the collection as it is now.
    if (position < buffer.length ? collection.changes !== readAt : !done) refill();
    if (position >= buffer.length) return undefined;
    returned = buffer[position++];
    return returned;
  };
}
