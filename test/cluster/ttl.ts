/**
 * The TTL monitor: every `ttlIntervalMs` (mongod's `ttlMonitorSleepSecs`, 60 s by default) it
 * deletes the documents whose TTL-indexed field holds a date (for an array, its earliest date)
 * older than the index's `expireAfterSeconds`. Documents without a date there never expire;
 * hidden TTL indexes still expire documents; a partial index only expires what it covers.
 * Deletes go through the instance's write path, so the oplog and change streams see them, and
 * bypass user write blocking as mongod's internal TTL client does.
 */
import { BSON } from 'bson';
import { Query } from './mingo.js';
import type { Instance, OpContext } from './instance.js';
import type { Collection, DocEntry } from './storage/collection.js';
import type { Index } from './storage/indexes.js';
import { fieldDecoder, findElement, promoted } from './raw.js';
import { valuesAtPath } from './storage/keys.js';
import { expiredByCollectionTtl } from './storage/clustered.js';

/** The monitor acts as an internal client: its deletes are not user writes. */
const TTL_CLIENT: OpContext = { bypassWriteBlocking: true };

function isTtlIndex(index: Index): boolean {
  const seconds = index.spec.expireAfterSeconds;
  return typeof seconds === 'number' && Number.isFinite(seconds) && Object.keys(index.spec.key).length === 1 && index.name !== '_id_';
}

/** The earliest date a document holds at `path`, if any. */
function earliestDate(doc: Record<string, unknown>, path: string): number | undefined {
  let earliest: number | undefined;
  for (const value of valuesAtPath(doc, path)) {
    if (value instanceof Date) {
      const t = value.getTime();
      if (earliest === undefined || t < earliest) earliest = t;
    }
  }
  return earliest;
}

const BSON_DATE = 0x09;
const BSON_ARRAY = 0x04;

/**
 * How a pass reads a document's earliest date at `path`. A pass reads every document of the
 * collection (mongod walks the TTL index instead), so nothing else is decoded: a top-level date is
 * read straight from its bytes, anything else from the path's top-level field alone.
 */
function earliestDateReader(path: string): (raw: Buffer) => number | undefined {
  const top = path.split('.')[0]!;
  const decodeTop = fieldDecoder([top], promoted);
  const fromField = (raw: Buffer): number | undefined => earliestDate(decodeTop(raw), path);
  // findElement compares names as Latin-1: ASCII names only.
  if (path !== top || !/^[\x20-\x7e]+$/.test(top)) return fromField;
  return (raw) => {
    const element = findElement(raw, top);
    if (element === undefined) return undefined;
    if (element.type === BSON_DATE) return raw.readUInt32LE(element.end - 8) + raw.readInt32LE(element.end - 4) * 2 ** 32;
    return element.type === BSON_ARRAY ? fromField(raw) : undefined;
  };
}

function expiredEntries(collection: Collection, index: Index, now: number): DocEntry[] {
  const path = Object.keys(index.spec.key)[0]!;
  const cutoff = now - (index.spec.expireAfterSeconds as number) * 1000;
  const partial = index.spec.partialFilterExpression ? new Query(index.spec.partialFilterExpression) : undefined;
  const dateOf = earliestDateReader(path);
  const expired: DocEntry[] = [];
  for (const entry of collection.byRid.values()) {
    const date = dateOf(entry.raw);
    if (date === undefined || date > cutoff) continue;
    if (partial && !partial.test(BSON.deserialize(entry.raw, promoted))) continue;
    expired.push(entry);
  }
  return expired;
}

/** One pass over every TTL index of every collection; returns the number of documents deleted. */
export function runTtlPass(instance: Instance, now = Date.now()): number {
  let deleted = 0;
  for (const db of instance.catalog.databaseNames()) {
    for (const ns of instance.catalog.namespaces(db)) {
      if (ns.kind !== 'collection' || ns.capped) continue;
      for (const entry of expiredByCollectionTtl(ns, now)) {
        instance.deleteDocument(TTL_CLIENT, ns, entry);
        deleted++;
      }
      for (const index of ns.indexes) {
        if (!isTtlIndex(index)) continue;
        for (const entry of expiredEntries(ns, index, now)) {
          if (ns.get(entry.id) !== entry) continue; // already gone (another TTL index of the same pass)
          instance.deleteDocument(TTL_CLIENT, ns, entry);
          deleted++;
        }
      }
    }
  }
  instance.counters.ttlPasses++;
  instance.counters.ttlDeletedDocuments += deleted;
  return deleted;
}

/** Starts the periodic monitor (unless `ttlIntervalMs` is 0). */
export function startTtlMonitor(instance: Instance): void {
  if (instance.options.ttlIntervalMs > 0) instance.every(instance.options.ttlIntervalMs, () => runTtlPass(instance));
}
