// A partition copy whose read cursor is killed because its collection was dropped or renamed
// (QueryPlanKilled, 175, as mongod answers the next getMore since 4.1.7): the read restarts from
// the watermark, finds the collection gone (an empty cursor) and the partition finishes with what
// was written, instead of failing the sync.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Int32, Long, MaxKey, MinKey, serialize, type Document } from 'bson';
import { MongoServerError, type MongoClient } from 'mongodb';
import { copyPartition, type CopyResources, type PartitionTask } from '../../src/copy/partition-copier.js';
import { SharedCounters, StopFlag } from '../../src/copy/shared-state.js';
import { isTransientError } from '../../src/copy/transient.js';
import { packValue } from '../../src/meta/store.js';
import { HistogramSet } from '../../src/metrics/index.js';

const REPLY_DOCUMENTS = 40;

function queryPlanKilled(message: string): MongoServerError {
  return new MongoServerError({ ok: 0, code: 175, codeName: 'QueryPlanKilled', errmsg: message });
}

/** A source whose collection is dropped after the first reply: getMore then fails with 175 and later finds see nothing. */
function droppingSource(ids: number[], finds: Document[]): MongoClient {
  let pending: number[] = [];
  let dropped = false;
  const reply = (first: boolean) => {
    const batch = pending.splice(0, REPLY_DOCUMENTS).map((i) => ({ _id: new Int32(i), body: 'x'.repeat(30) }));
    const id = Long.fromNumber(pending.length > 0 ? 1 : 0);
    return { cursor: serialize({ id, ns: 'db.coll', [first ? 'firstBatch' : 'nextBatch']: batch }), ok: 1 };
  };
  const db = {
    command: async (command: Document) => {
      if ('find' in command) {
        finds.push(command);
        pending = dropped ? [] : [...ids];
        return reply(true);
      }
      if ('getMore' in command) {
        if (!dropped) {
          dropped = true;
          throw queryPlanKilled('collection dropped. UUID 0b9f1b1e-5d0c-4c7e-9a57-3d2f2f1c9a10');
        }
        return reply(false);
      }
      return { ok: 1 };
    },
  };
  return { db: () => db, startSession: () => ({ endSession: async () => undefined }) } as unknown as MongoClient;
}

function recordingDestination(written: number[]): MongoClient {
  const collection = {
    namespace: 'db.coll',
    insertMany: async (docs: Document[]) => {
      for (const doc of docs) written.push(Number(doc._id));
      return { insertedCount: docs.length };
    },
  };
  return { db: () => ({ databaseName: 'db', collection: () => collection }) } as unknown as MongoClient;
}

function resources(source: MongoClient, destination: MongoClient): CopyResources {
  return { source, destination, checkpoint: async () => undefined, histograms: new HistogramSet(), counters: new SharedCounters(), stop: new StopFlag() };
}

function task(order: 'id' | 'natural'): PartitionTask {
  return {
    key: { instance: 'test', ns: 'db.coll', index: 0 },
    db: 'db',
    coll: 'coll',
    order,
    min: packValue(new MinKey()),
    max: packValue(new MaxKey()),
    copiedDocs: 0,
    copiedBytes: 0,
    averageDocumentBytes: 50,
    settings: { batchBytes: 1024, batchesInFlight: 1, checkpointIntervalMs: 0, writePath: 'decode' },
  };
}

describe('a partition copy whose collection is dropped or renamed under its cursor', () => {
  it('counts QueryPlanKilled as transient', () => {
    assert.equal(isTransientError(queryPlanKilled("collection renamed from 'db.a' to 'db.b'. UUID x")), true);
    assert.equal(isTransientError({ code: 175 }), true);
  });

  for (const order of ['id', 'natural'] as const) {
    it(`restarts the read, finds the collection gone and finishes (${order} order)`, async () => {
      const ids = Array.from({ length: 200 }, (_, i) => i);
      const written: number[] = [];
      const finds: Document[] = [];
      const outcome = await copyPartition(task(order), resources(droppingSource(ids, finds), recordingDestination(written)));
      assert.equal(outcome.status, 'done');
      assert.equal(finds.length, 2, 'one restarted read');
      // The batches written before the drop stay (a batch still being filled is dropped with the
      // pass); change-event application then replays the drop.
      assert.ok(written.length > 0 && written.length <= REPLY_DOCUMENTS);
      assert.deepEqual(written, ids.slice(0, written.length), 'what was written before the drop, in order');
      // Natural order (capped) restarts its count from nothing, as it restarts its read.
      assert.equal(outcome.copiedDocs, order === 'id' ? written.length : 0);
      if (order === 'id') assert.equal(Number(finds[1]!.min._id), written.at(-1), 'the restart reads from the watermark');
    });
  }
});
