/**
 * Chunks and their migration: `split`, `moveChunk`, `moveRange` really move documents (the
 * recipient inserts them, the donor deletes them, both as migration writes), counts through
 * mongos stay right while the donor still holds orphans (`orphanCleanupDelaySecs`), change
 * streams through mongos show no migration, and a stopped balancer moves nothing.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Document } from 'mongodb';
import { shardCollection, shardCounts, shardedConformance, type ShardedTarget } from './harness.js';

async function chunksOf(t: ShardedTarget, coll: string): Promise<Document[]> {
  const config = t.client.db('config');
  const info = await config.collection('collections').findOne({ _id: `${t.db.databaseName}.${coll}` as never });
  return config.collection('chunks').find({ uuid: info!.uuid }).sort({ min: 1 }).toArray();
}

/** Waits until `check` holds (or fails after `ms`). */
async function eventually(check: () => Promise<boolean>, ms = 30_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error('condition not reached in time');
    await sleep(100);
  }
}

shardedConformance(
  'sharded chunks and migrations',
  (target) => {
    test('split divides a chunk; moveChunk moves its documents and counts through mongos stay right', async () => {
      const t = target();
      await shardCollection(t, 'items', { n: 1 });
      const coll = t.db.collection('items');
      await coll.insertMany(Array.from({ length: 100 }, (_, n) => ({ _id: n, n })) as never[]);
      const ns = `${t.db.databaseName}.items`;
      const admin = t.client.db('admin');
      await admin.command({ split: ns, middle: { n: 50 } });
      const chunks = await chunksOf(t, 'items');
      assert.equal(chunks.length, 2);
      assert.deepEqual(chunks[0].max, { n: 50 });
      assert.deepEqual(chunks[1].min, { n: 50 });
      await admin.command({ moveChunk: ns, find: { n: 75 }, to: t.shards[1]!.id, _waitForDelete: true });
      assert.deepEqual(await shardCounts(t, 'items'), [50, 50]);
      const moved = await chunksOf(t, 'items');
      assert.equal(moved[1].shard, t.shards[1]!.id);
      assert.ok(moved[1].lastmod.high > chunks[1].lastmod.high || moved[1].lastmod.t > chunks[1].lastmod.t, 'the major version grew');
      assert.equal(await coll.countDocuments(), 100);
      assert.deepEqual(await coll.findOne({ n: 75 }), { _id: 75, n: 75 });
      // moveRange with only min moves the rest of that chunk; within a chunk it splits first.
      await admin.command({ moveRange: ns, min: { n: 80 }, max: { n: 90 }, toShard: t.shards[0]!.id, _waitForDelete: true });
      assert.deepEqual(await shardCounts(t, 'items'), [60, 40]);
      assert.deepEqual(
        (await chunksOf(t, 'items')).map((c) => [c.min.n, c.shard]),
        [
          [chunks[0].min.n, t.shards[0]!.id],
          [50, t.shards[1]!.id],
          [80, t.shards[0]!.id],
          [90, t.shards[1]!.id],
        ],
      );
      assert.deepEqual(
        (await coll.find().sort({ n: 1 }).toArray()).map((d) => d.n),
        Array.from({ length: 100 }, (_, n) => n),
      );
    });

    test('the donor keeps orphans until its range deletion runs; mongos never returns them', async () => {
      const t = target();
      const [donor, recipient] = t.shards;
      await donor!.client.db('admin').command({ setParameter: 1, orphanCleanupDelaySecs: 2 });
      try {
        await shardCollection(t, 'orphans', { n: 1 });
        const coll = t.db.collection('orphans');
        await coll.insertMany(Array.from({ length: 40 }, (_, n) => ({ _id: n, n })) as never[]);
        const ns = `${t.db.databaseName}.orphans`;
        await t.client.db('admin').command({ split: ns, middle: { n: 20 } });
        await t.client.db('admin').command({ moveRange: ns, min: { n: 20 }, toShard: recipient!.id });
        // Right after the move the donor still holds the 20 moved documents.
        assert.deepEqual(await shardCounts(t, 'orphans'), [40, 20]);
        assert.equal(await coll.countDocuments(), 40);
        assert.equal((await coll.find({ n: { $gte: 15 } }).toArray()).length, 25);
        assert.deepEqual(await coll.distinct('n', { n: { $gte: 38 } }), [38, 39]);
        await eventually(async () => (await shardCounts(t, 'orphans'))[0] === 20);
        assert.equal(await coll.countDocuments(), 40);
      } finally {
        await donor!.client.db('admin').command({ setParameter: 1, orphanCleanupDelaySecs: 900 });
      }
    });

    test('change streams through mongos show no migration; the shards record it as fromMigrate writes', async () => {
      const t = target();
      await shardCollection(t, 'watched', { n: 1 });
      const coll = t.db.collection('watched');
      await coll.insertMany(Array.from({ length: 10 }, (_, n) => ({ _id: n, n })) as never[]);
      const ns = `${t.db.databaseName}.watched`;
      await t.client.db('admin').command({ split: ns, middle: { n: 5 } });
      const viaMongos = coll.watch([], { maxAwaitTimeMS: 200 });
      const onRecipient = t.shards[1]!.db.collection('watched').watch([], { maxAwaitTimeMS: 200 });
      await viaMongos.tryNext();
      await onRecipient.tryNext();
      await t.client.db('admin').command({ moveChunk: ns, find: { n: 7 }, to: t.shards[1]!.id, _waitForDelete: true });
      await coll.insertOne({ _id: 100, n: 100 } as Document);
      const seen: Document[] = [];
      for (let i = 0; i < 100 && seen.length === 0; i++) {
        const event = await viaMongos.tryNext();
        if (event) seen.push(event);
      }
      assert.equal(seen.length, 1);
      assert.equal(seen[0]!.operationType, 'insert');
      assert.equal(seen[0]!.documentKey._id, 100);
      // The recipient's own stream (without showMigrationEvents) shows only the user's insert too.
      const direct: Document[] = [];
      for (let i = 0; i < 100 && direct.length === 0; i++) {
        const event = await onRecipient.tryNext();
        if (event) direct.push(event);
      }
      assert.deepEqual(
        direct.map((e) => [e.operationType, e.documentKey._id]),
        [['insert', 100]],
      );
      assert.deepEqual(direct[0]!.documentKey, { n: 100, _id: 100 }, 'a sharded collection’s document key has the shard key first');
      await viaMongos.close();
      await onRecipient.close();
    });

    test('balancerStatus reports the mode; with the balancer stopped nothing moves on its own', async () => {
      const t = target();
      const admin = t.client.db('admin');
      await admin.command({ balancerStart: 1 });
      assert.equal((await admin.command({ balancerStatus: 1 })).mode, 'full');
      await admin.command({ balancerStop: 1 });
      const status = await admin.command({ balancerStatus: 1 });
      assert.equal(status.mode, 'off');
      assert.equal(typeof status.inBalancerRound, 'boolean');
      // 1 MB ranges: a shard holding 3 MB more than another is out of balance (7.0+'s rule).
      await t.client
        .db('config')
        .collection('settings')
        .updateOne({ _id: 'chunksize' as never }, { $set: { value: 1 } }, { upsert: true });
      try {
        await shardCollection(t, 'lopsided', { n: 1 });
        const pad = 'x'.repeat(4000);
        await t.db.collection('lopsided').insertMany(
          Array.from({ length: 1000 }, (_, n) => ({ n, pad })),
          { ordered: false },
        );
        const before = await chunksOf(t, 'lopsided');
        await sleep(t.local ? 1500 : 15_000);
        assert.deepEqual(await chunksOf(t, 'lopsided'), before);
        assert.deepEqual(await shardCounts(t, 'lopsided'), [1000, 0]);
        if (!t.local) return;
        // Started, the balancer evens the shards out by moving ranges (the test cluster rounds quickly).
        await admin.command({ balancerStart: 1 });
        await eventually(async () => (await shardCounts(t, 'lopsided'))[1]! > 0);
        await admin.command({ balancerStop: 1 });
        assert.equal(await t.db.collection('lopsided').countDocuments(), 1000);
      } finally {
        await admin.command({ balancerStop: 1 });
        await t.client
          .db('config')
          .collection('settings')
          .deleteOne({ _id: 'chunksize' as never });
      }
    });
  },
  { balancerIntervalMs: 300 },
);
