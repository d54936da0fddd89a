// Copying a partition from a sharded source: through mongos, a `find` hinted on `_id` returns the
// shards' documents interleaved unless it is sorted, while checkpoints assume `_id` order. A copy
// stopped and resumed from its checkpoint must still copy every document.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { deserialize, serialize, type Document } from 'bson';
import type { MongoClient } from 'mongodb';
import { copyPartition } from '../../src/copy/partition-copier.js';
import { StopFlag } from '../../src/copy/shared-state.js';
import { copyResources, fakeSource, idBounds, partitionTask, recordingDestination } from './copy-fakes.js';

const IDS = Array.from({ length: 200 }, (_, i) => i);
/** Two shards: even `_id`s on one, odd on the other. */
const SHARDS = [IDS.filter((i) => i % 2 === 0), IDS.filter((i) => i % 2 === 1)];

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
  const client = fakeSource({
    finds,
    replyDocuments: 10,
    serve: (find) => {
      const { min, max } = idBounds(find);
      const inRange = SHARDS.map((shard) => shard.filter((i) => i >= min && i < max));
      return find.sort?._id === 1 ? inRange.flat().sort((a, b) => a - b) : inRange.flat();
    },
  });
  return { client, finds };
}

/** Resources whose stop flag is raised by the first checkpoint when `stopAtFirstCheckpoint`. */
function resources(source: MongoClient, destination: MongoClient, stopAtFirstCheckpoint: boolean) {
  const stop = new StopFlag();
  return copyResources(source, destination, {
    stop,
    checkpoint: async () => {
      if (stopAtFirstCheckpoint) stop.raise();
    },
  });
}

describe('copying a partition through mongos', () => {
  it('copies every document when stopped at a checkpoint and resumed from it', async () => {
    const mongos = fakeMongos();
    const written: number[] = [];
    const destination = recordingDestination(written);
    const first = await copyPartition(partitionTask(), resources(mongos.client, destination, true));
    assert.equal(first.status, 'stopped');
    assert.ok(first.lastId !== undefined && new Set(written).size < IDS.length, 'stopped part way');
    const resumed = await copyPartition(
      partitionTask({ lastId: first.lastId, copiedDocs: first.copiedDocs, copiedBytes: first.copiedBytes }),
      resources(mongos.client, destination, false),
    );
    assert.equal(resumed.status, 'done');
    assert.deepEqual(
      IDS.filter((i) => !written.includes(i)),
      [],
      'no document is left behind by the resume',
    );
  });

  it('reads _id partitions sorted on _id, and natural-order (capped) ones unsorted', async () => {
    const mongos = fakeMongos();
    const destination = recordingDestination([]);
    await copyPartition(partitionTask(), resources(mongos.client, destination, false));
    await copyPartition(partitionTask({ order: 'natural' }), resources(mongos.client, destination, false));
    const [byId, natural] = mongos.finds;
    assert.deepEqual(deserialize(serialize(byId!.sort)), { _id: 1 });
    assert.deepEqual(byId!.hint, { _id: 1 });
    assert.equal(natural!.sort, undefined);
    assert.deepEqual(natural!.hint, { $natural: 1 });
  });
});
