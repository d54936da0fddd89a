// Fakes for driving `copyPartition` without a server: a source answering `find`/`getMore` with
// documents `{_id: Int32, body}` as raw replies, a destination recording what the decode write path
// inserts, and the task and resources a worker would hand it.
import { Int32, Long, MaxKey, MinKey, serialize, type Document } from 'bson';
import type { MongoClient } from 'mongodb';
import type { CopyResources, PartitionTask } from '../../src/copy/partition-copier.js';
import { SharedCounters, StopFlag } from '../../src/copy/shared-state.js';
import { packValue } from '../../src/meta/store.js';
import { HistogramSet } from '../../src/metrics/histograms.js';

export interface FakeSourceOptions {
  /** The `_id`s a `find` returns, in reply order. */
  serve(find: Document): number[];
  /** Called before the n-th getMore (from 1) is answered; may throw to fail it. */
  beforeGetMore?(n: number): void;
  /** Every `find` received, in order. */
  finds?: Document[];
  /** Documents per reply. Default 40. */
  replyDocuments?: number;
}

/** A source whose cursor replies carry `{_id: Int32(i), body}` for the `_id`s `serve` gives. */
export function fakeSource(options: FakeSourceOptions): MongoClient {
  const perReply = options.replyDocuments ?? 40;
  let pending: number[] = [];
  let getMores = 0;
  const reply = (first: boolean) => {
    const batch = pending.splice(0, perReply).map((i) => ({ _id: new Int32(i), body: 'x'.repeat(30) }));
    const id = Long.fromNumber(pending.length > 0 ? 1 : 0);
    return { cursor: serialize({ id, ns: 'db.coll', [first ? 'firstBatch' : 'nextBatch']: batch }), ok: 1 };
  };
  const db = {
    command: async (command: Document) => {
      if ('find' in command) {
        options.finds?.push(command);
        pending = options.serve(command);
        return reply(true);
      }
      if ('getMore' in command) {
        options.beforeGetMore?.(++getMores);
        return reply(false);
      }
      return { ok: 1 };
    },
  };
  return { db: () => db, startSession: () => ({ endSession: async () => undefined }) } as unknown as MongoClient;
}

/** The `find`'s `min`/`max` on `_id` as numbers (unbounded when absent). */
export function idBounds(find: Document): { min: number; max: number } {
  return {
    min: find.min?._id === undefined ? -Infinity : Number(find.min._id),
    max: find.max?._id === undefined ? Infinity : Number(find.max._id),
  };
}

/** A destination recording the `_id`s in the order their batches were written; `delayMs(n)` delays the n-th batch. */
export function recordingDestination(written: number[], delayMs: (batch: number) => number = () => 0): MongoClient {
  let batches = 0;
  const collection = {
    namespace: 'db.coll',
    insertMany: async (docs: Document[]) => {
      const delay = delayMs(batches++);
      if (delay > 0) await new Promise((resolve) => setTimeout(resolve, delay));
      for (const doc of docs) written.push(Number(doc._id));
      return { insertedCount: docs.length };
    },
  };
  return { db: () => ({ databaseName: 'db', collection: () => collection }) } as unknown as MongoClient;
}

export function copyResources(source: MongoClient, destination: MongoClient, overrides: Partial<CopyResources> = {}): CopyResources {
  return {
    source,
    destination,
    checkpoint: async () => undefined,
    histograms: new HistogramSet(),
    counters: new SharedCounters(),
    stop: new StopFlag(),
    ...overrides,
  };
}

/** A whole-collection partition of `db.coll`, copied through the decode write path in small batches. */
export function partitionTask(overrides: Partial<PartitionTask> = {}): PartitionTask {
  return {
    key: { instance: 'test', ns: 'db.coll', index: 0 },
    db: 'db',
    coll: 'coll',
    order: 'id',
    min: packValue(new MinKey()),
    max: packValue(new MaxKey()),
    copiedDocs: 0,
    copiedBytes: 0,
    averageDocumentBytes: 50,
    settings: { batchBytes: 1024, batchesInFlight: 1, checkpointIntervalMs: 0, writePath: 'decode' },
    ...overrides,
  };
}
