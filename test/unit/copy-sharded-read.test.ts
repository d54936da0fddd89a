// Copying a partition from a sharded source: through mongos, a `find` hinted on `_id` returns the
// shards' documents interleaved unless it is sorted, while checkpoints assume `_id` order. A copy
// stopped and resumed from its checkpoint must still copy every document.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { deserialize, Int32, Long, MaxKey, MinKey, serialize, type Document } from 'bson';
import type { MongoClient } from 'mongodb';
import { copyPartition, type CopyResources, type PartitionTask } from '../../src/copy/partition-copier.js';
import { SharedCounters, StopFlag } from '../../src/copy/shared-state.js';
import { packValue } from '../../src/meta/store.js';
import { HistogramSet } from '../../src/metrics/index.js';

const IDS = Array.from({ length: 200 }, (_, i) => i);
/** Two shards: even `_id`s on one, odd on the other. */
const SHARDS = [IDS.filter((i) => i % 2 === 0), IDS.filter((i) => i % 2 === 1)];
const REPLY_DOCUMENTS = 10;

interface Mongos {
  client: MongoClient;
  finds: Document[];
}

/**
 * A mongos in front of `SHARDS`: `find` with `min`/`max` on `_id` returns each shard's range in
 * turn, unless sorted on `_id`, when it merges them (as mongos does).
 */
function fakeMongos(): Mongos {
  const finds: Document[] = [];
  let pending: number[] = [];
  const reply = (first: boolean) => {
    const batch = pending.splice(0, REPLY_DOCUMENTS).map((i) => ({ _id: new Int32(i), body: 'x'.repeat(30) }));
    const id = Long.fromNumber(pending.length > 0 ? 1 : 0);
    return { cursor: serialize({ id, ns: 'db.coll', [first ? 'firstBatch' : 'nextBatch']: batch }), ok: 1 };
  };
  const db = {
    command: async (command: Document) => {
      if ('find' in command) {
        finds.push(command);
        const min = command.min?._id === undefined ? -Infinity : Number(command.min._id);
        const max = command.max?._id === undefined ? Infinity : Number(command.max._id);
        const inRange = SHARDS.map((shard) => shard.filter((i) => i >= min && i < max));
        pending = command.sort?._id === 1 ? inRange.flat().sort((a, b) => a - b) : inRange.flat();
        return reply(true);
      }
      if ('getMore' in command) return reply(false);
      return { ok: 1 };
    },
  };
  const client = { db: () => db, startSession: () => ({ endSession: async () => undefined }) };
  return { client: client as unknown as MongoClient, finds };
}

/** A destination recording the `_id`s written (decode write path: `insertMany`). */
function fakeDestination(written: Set<number>): MongoClient {
  const collection = {
    namespace: 'db.coll',
    insertMany: async (docs: Document[]) => {
      for (const doc of docs) written.add(Number(doc._id));
      return { insertedCount: docs.length };
    },
  };
  return { db: () => ({ databaseName: 'db', collection: () => collection }) } as unknown as MongoClient;
}

function resources(source: MongoClient, destination: MongoClient, stopAtFirstCheckpoint: boolean): CopyResources {
  const stop = new StopFlag();
  return {
    source,
    destination,
    checkpoint: async () => {
      if (stopAtFirstCheckpoint) stop.raise();
    },
    histograms: new HistogramSet(),
    counters: new SharedCounters(),
    stop,
  };
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

describe('copying a partition through mongos', () => {
  it('copies every document when stopped at a checkpoint and resumed from it', async () => {
    const mongos = fakeMongos();
    const written = new Set<number>();
    const destination = fakeDestination(written);
    const first = await copyPartition(task(), resources(mongos.client, destination, true));
    assert.equal(first.status, 'stopped');
    assert.ok(first.lastId !== undefined && written.size < IDS.length, 'stopped part way');
    const resumed = await copyPartition(
      task({ lastId: first.lastId, copiedDocs: first.copiedDocs, copiedBytes: first.copiedBytes }),
      resources(mongos.client, destination, false),
    );
    assert.equal(resumed.status, 'done');
    assert.deepEqual(
      IDS.filter((i) => !written.has(i)),
      [],
      'no document is left behind by the resume',
    );
  });

  it('reads _id partitions sorted on _id, and natural-order (capped) ones unsorted', async () => {
    const mongos = fakeMongos();
    const destination = fakeDestination(new Set());
    await copyPartition(task(), resources(mongos.client, destination, false));
    await copyPartition(task({ order: 'natural' }), resources(mongos.client, destination, false));
    const [byId, natural] = mongos.finds;
    assert.deepEqual(deserialize(serialize(byId!.sort)), { _id: 1 });
    assert.deepEqual(byId!.hint, { _id: 1 });
    assert.equal(natural!.sort, undefined);
    assert.deepEqual(natural!.hint, { $natural: 1 });
  });
});
