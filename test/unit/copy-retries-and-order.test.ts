// A partition copy against a flaky source and a slow destination: transient failures are retried
// for as long as each pass makes progress, and a capped collection's documents land on the
// destination in the source's insertion order.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Int32, Long, MaxKey, MinKey, serialize, type Document } from 'bson';
import { MongoNetworkError, type MongoClient } from 'mongodb';
import { copyPartition, type CopyResources, type PartitionTask } from '../../src/copy/partition-copier.js';
import { SharedCounters, StopFlag } from '../../src/copy/shared-state.js';
import { packValue } from '../../src/meta/store.js';
import { HistogramSet } from '../../src/metrics/index.js';

const REPLY_DOCUMENTS = 40;

/**
 * A source serving `ids` (in this order for a natural-order read, in `_id` order within
 * `min`/`max` otherwise), whose every `failEvery`-th getMore fails with a network error.
 */
function fakeSource(ids: number[], failEvery = 0): MongoClient {
  let pending: number[] = [];
  let getMores = 0;
  const reply = (first: boolean) => {
    const batch = pending.splice(0, REPLY_DOCUMENTS).map((i) => ({ _id: new Int32(i), body: 'x'.repeat(30) }));
    const id = Long.fromNumber(pending.length > 0 ? 1 : 0);
    return { cursor: serialize({ id, ns: 'db.coll', [first ? 'firstBatch' : 'nextBatch']: batch }), ok: 1 };
  };
  const db = {
    command: async (command: Document) => {
      if ('find' in command) {
        const min = command.min?._id === undefined ? -Infinity : Number(command.min._id);
        const max = command.max?._id === undefined ? Infinity : Number(command.max._id);
        pending = command.hint?.$natural === undefined ? ids.filter((i) => i >= min && i < max).sort((a, b) => a - b) : [...ids];
        return reply(true);
      }
      if ('getMore' in command) {
        getMores++;
        if (failEvery > 0 && getMores % failEvery === 0) throw new MongoNetworkError('connection reset by the test');
        return reply(false);
      }
      return { ok: 1 };
    },
  };
  return { db: () => db, startSession: () => ({ endSession: async () => undefined }) } as unknown as MongoClient;
}

/** A destination recording the `_id`s in the order their batches were written; `delayMs(n)` delays the n-th batch. */
function fakeDestination(written: number[], delayMs: (batch: number) => number = () => 0): MongoClient {
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

function resources(source: MongoClient, destination: MongoClient): CopyResources {
  return { source, destination, checkpoint: async () => undefined, histograms: new HistogramSet(), counters: new SharedCounters(), stop: new StopFlag() };
}

function task(overrides: Partial<PartitionTask> = {}): PartitionTask {
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

describe('a partition copy that meets failures', () => {
  it('retries transient failures for as long as each pass moves on, more often in all than the retry budget', async () => {
    // Every second getMore fails: each pass copies two replies, then fails (7 failures in all).
    const ids = Array.from({ length: 600 }, (_, i) => i);
    const written: number[] = [];
    const outcome = await copyPartition(task(), resources(fakeSource(ids, 2), fakeDestination(written)));
    assert.equal(outcome.status, 'done');
    assert.deepEqual(
      ids.filter((i) => !written.includes(i)),
      [],
      'every document is copied',
    );
  });

  it('writes a capped collection one batch at a time, in the source’s insertion order, whatever the batches in flight', async () => {
    // Insertion order is not _id order; the first batch's write is the slowest.
    const ids = Array.from({ length: 300 }, (_, i) => (i * 7919) % 300);
    const written: number[] = [];
    const destination = fakeDestination(written, (batch) => (batch === 0 ? 50 : 0));
    const outcome = await copyPartition(
      task({ order: 'natural', settings: { batchBytes: 1024, batchesInFlight: 4, checkpointIntervalMs: 0, writePath: 'decode' } }),
      resources(fakeSource(ids), destination),
    );
    assert.equal(outcome.status, 'done');
    assert.deepEqual(written, ids);
  });
});
