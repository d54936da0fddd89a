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
  let last: { key: unknown } | undefined;
  let done = false;
  const hasMin = options.min !== undefined;
  const hasMax = options.max !== undefined;

  function refill(): void {
    buffer = [];
    position = 0;
    if (options.order === 'id') {
      const tree = collection.byId;
      if (options.direction === 1) {
        const start = last ? last.key : hasMin ? options.min : undefined;
        const iterator = start === undefined ? tree.entries() : tree.entries(start);
        for (const [key, entry] of iterator) {
          if (last && collection.compareIds(key, last.key) <= 0) continue;
          if (hasMax && collection.compareIds(key, options.max) >= 0) {
            done = true;
            break;
          }
          buffer.push(entry);
          if (buffer.length >= chunk) break;
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
      const iterator =
        options.direction === 1
          ? start === undefined
            ? tree.entries()
            : tree.entries(start + 1)
          : start === undefined
            ? tree.entriesReversed()
            : tree.entriesReversed(start - 1);
      for (const [, entry] of iterator) {
        buffer.push(entry);
        if (buffer.length >= chunk) break;
      }
    }
    if (buffer.length < chunk) done = true;
    if (buffer.length > 0) {
      const tail = buffer[buffer.length - 1];
      last = { key: options.order === 'id' ? tail.id : tail.rid };
    }
  }

  return () => {
    if (position >= buffer.length) {
      if (done) return undefined;
      refill();
      if (buffer.length === 0) return undefined;
    }
    return buffer[position++];
  };
}
