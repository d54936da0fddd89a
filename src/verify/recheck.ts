/**
 * Checking queued documents again (recheck-queue.ts): a batch of them, grouped by namespace, read
 * from both clusters with one `find({_id: {$in: [...]}})` each (raw BSON), and compared byte for
 * byte.
 *
 * The two clusters are never read at one instant, and the destination trails the source by
 * change-event application, so one difference proves nothing. A document is:
 * - equal: done (a difference recorded for it earlier is gone);
 * - different, the first time, or with the source changed since the last check: checked again
 *   once change events through the time of this source read are applied (`dueAt`);
 * - different again with the source unchanged (same bytes) since a check after whose source read
 *   every change event was applied, and neither change stream having reported a change of it since
 *   (both have read past this check's reads): a difference, recorded by kind (missing, extra,
 *   different) with what differs;
 * - written on the destination after commit (by the application): not verifiable, counted apart.
 * A document touched by a change stream while being checked is left to its next check.
 */
import { createHash } from 'node:crypto';
import type { Timestamp } from 'bson';
import type { MongoClient } from 'mongodb';
import { compareBsonValues, findId, readId } from '../bson/index.js';
import { batchDocumentStarts, documentSize, RawCursor } from '../cluster/raw-cursor.js';
import { retryTransient } from '../cluster/retry.js';
import { splitNamespace } from '../domain/namespaces.js';
import { timeAfter } from '../domain/time.js';
import type { MismatchKind } from '../domain/verification.js';
import { packElement, unpackValue } from '../meta/store.js';
import { describeDocumentDifference } from './difference.js';
import type { Recheck, RecheckQueue } from './recheck-queue.js';
import type { RecheckStore } from './recheck-store.js';

/** What a batch of checks decided. */
export interface RecheckOutcome {
  /** Documents read on each cluster. */
  read: { source: number; destination: number };
  equal: Recheck[];
  /** Confirmed differences. */
  differences: { entry: Recheck; kind: MismatchKind; detail: string }[];
  /** Written on the destination after commit: dropped, not verifiable. */
  notVerified: Recheck[];
}

export interface RecheckerOptions {
  source: MongoClient;
  destination: MongoClient;
  queue: RecheckQueue;
  store: RecheckStore;
  /** How far each change stream has read (source and destination time), for confirmation. */
  streamPositions(): { source?: Timestamp; destination?: Timestamp };
}

/** Documents of one namespace read by `_id`, and the time of the read. */
interface ReadResult {
  documents: Map<string, Uint8Array>;
  /** Documents that matched no asked `_id` by bytes (1 asked, 1.0 stored): matched by value. */
  others: Uint8Array[];
  time?: Timestamp;
}

const ABSENT = 'absent';

function hashOf(doc: Uint8Array | undefined): string {
  return doc === undefined ? ABSENT : createHash('sha1').update(doc).digest('base64');
}

/** Reads the documents of `ns` whose `_id`s are `ids` (packed), keyed by packed `_id`. */
async function readDocuments(client: MongoClient, ns: string, ids: readonly string[]): Promise<ReadResult> {
  const namespace = splitNamespace(ns);
  const cursor = new RawCursor(
    client,
    namespace.db,
    { find: namespace.coll, filter: { _id: { $in: ids.map(unpackValue) } }, batchSize: ids.length },
    { batchSize: ids.length },
  );
  const wanted = new Set(ids);
  const result: ReadResult = { documents: new Map(), others: [] };
  try {
    for (;;) {
      const reply = await cursor.nextReply();
      if (reply === undefined) break;
      const time = reply.reply.operationTime as Timestamp | undefined;
      if (time?._bsontype === 'Timestamp' && timeAfter(time, result.time)) result.time = time;
      for (const start of batchDocumentStarts(reply.cursor, reply.batch.valueOffset, reply.batch.valueEnd)) {
        const doc = reply.cursor.subarray(start, start + documentSize(reply.cursor, start));
        const id = packElement(doc, findId(doc));
        if (wanted.has(id)) result.documents.set(id, doc);
        else result.others.push(doc);
      }
    }
  } finally {
    await cursor.close();
  }
  // An `_id` stored as another numeric type than asked (1 and 1.0 are one `_id`): match by value.
  for (const doc of result.others) {
    const id = readId(doc);
    const asked = ids.find((packed) => !result.documents.has(packed) && compareBsonValues(unpackValue(packed), id) === 0);
    if (asked !== undefined) result.documents.set(asked, doc);
  }
  return result;
}

export class Rechecker {
  readonly #options: RecheckerOptions;

  constructor(options: RecheckerOptions) {
    this.#options = options;
  }

  /** Checks `entries` (marked in flight meanwhile) and settles each in the queue; see the module comment. */
  async check(entries: readonly Recheck[]): Promise<RecheckOutcome> {
    const { queue, store } = this.#options;
    const outcome: RecheckOutcome = { read: { source: 0, destination: 0 }, equal: [], differences: [], notVerified: [] };
    const touches = new Map(entries.map((entry) => [entry, entry.touches]));
    for (const entry of entries) entry.inFlight = true;
    try {
      const byNamespace = new Map<string, Recheck[]>();
      for (const entry of entries) byNamespace.set(entry.ns, [...(byNamespace.get(entry.ns) ?? []), entry]);
      await Promise.all([...byNamespace].map(([ns, group]) => this.#checkNamespace(ns, group, touches, outcome)));
    } finally {
      for (const entry of entries) entry.inFlight = false;
    }
    const settled = [...outcome.equal, ...outcome.differences.map((d) => d.entry), ...outcome.notVerified];
    for (const entry of settled) queue.remove(entry);
    await store.remove(settled.filter((entry) => entry.stored));
    return outcome;
  }

  async #checkNamespace(ns: string, entries: Recheck[], touches: Map<Recheck, number>, outcome: RecheckOutcome): Promise<void> {
    const { source, destination } = this.#options;
    const ids = entries.map((entry) => entry.id);
    const [fromSource, fromDestination] = await Promise.all([
      retryTransient(() => readDocuments(source, ns, ids)),
      retryTransient(() => readDocuments(destination, ns, ids)),
    ]);
    outcome.read.source += fromSource.documents.size;
    outcome.read.destination += fromDestination.documents.size;
    const positions = this.#options.streamPositions();
    // Both streams have read past these reads: a change of a document before them has touched it.
    const streamsPast =
      fromSource.time !== undefined &&
      fromDestination.time !== undefined &&
      !timeAfter(fromSource.time, positions.source) &&
      !timeAfter(fromDestination.time, positions.destination);
    for (const entry of entries) {
      if (entry.touches !== touches.get(entry)) continue; // changed meanwhile: its next check decides
      const s = fromSource.documents.get(entry.id);
      const d = fromDestination.documents.get(entry.id);
      if (s === undefined ? d === undefined : d !== undefined && Buffer.compare(s, d) === 0) {
        outcome.equal.push(entry);
        continue;
      }
      if (entry.afterCommit === true) {
        outcome.notVerified.push(entry);
        continue;
      }
      const hash = hashOf(s);
      if (entry.attempts > 0 && entry.sourceHash === hash && streamsPast) {
        outcome.differences.push({ entry, ...describeDocumentDifference(s, d) });
        continue;
      }
      // Check again once every change event up to this source read is applied.
      entry.attempts++;
      entry.sourceHash = hash;
      if (fromSource.time !== undefined) entry.dueAt = fromSource.time;
    }
  }
}
