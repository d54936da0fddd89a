/**
 * A sharded cluster seen through mongos (MongoDB 8.0 behaviour): the topology, the sharding
 * catalog, where documents go and which shards a query reaches (explain, and each shard's own
 * counters read directly), merged cursors, and the aggregation of counts and statistics.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Long, MaxKey, MinKey, type Document } from 'mongodb';
import { shardCollection, shardCounts, shardOpcounters, shardedConformance } from './harness.js';

shardedConformance('sharded routing and catalog', (target) => {
  test('mongos answers hello as a router and the driver sees a Sharded topology', async () => {
    const hello = await target().client.db('admin').command({ hello: 1 });
    assert.equal(hello.msg, 'isdbgrid');
    assert.equal(hello.setName, undefined);
    assert.equal(hello.isWritablePrimary, true);
    const description = (target().client as unknown as { topology: { description: { type: string } } }).topology.description;
    assert.equal(description.type, 'Sharded');
  });

  test('listShards shows each shard as <setName>/<host:port>, and each shard answers as that replica set', async () => {
    const { shards } = await target().client.db('admin').command({ listShards: 1 });
    assert.ok(shards.length >= 2);
    for (const shard of shards) {
      assert.match(shard.host, /^[^/]+\/[^/]+:\d+/);
      assert.equal(shard.state, 1);
    }
    for (const [i, shard] of target().shards.entries()) {
      const hello = await shard.client.db('admin').command({ hello: 1 });
      assert.equal(hello.setName, shards[i].host.split('/')[0]);
    }
  });

  test('shardCollection records config.collections and config.chunks covering the key space', async () => {
    const t = target();
    await shardCollection(t, 'ranged', { a: 1 });
    const ns = `${t.db.databaseName}.ranged`;
    const config = t.client.db('config');
    const coll = await config.collection('collections').findOne({ _id: ns as never });
    assert.ok(coll);
    assert.deepEqual(coll.key, { a: 1 });
    assert.equal(coll.unique, false);
    const chunks = await config.collection('chunks').find({ uuid: coll.uuid }).sort({ min: 1 }).toArray();
    assert.equal(chunks.length, 1);
    assert.ok(chunks[0].min.a instanceof MinKey);
    assert.ok(chunks[0].max.a instanceof MaxKey);
    assert.equal(chunks[0].shard, t.shards[0]!.id);
    const database = await config.collection('databases').findOne({ _id: t.db.databaseName as never });
    assert.equal(database?.primary, t.shards[0]!.id);
    // Sharding again with the same key is accepted; another key is refused.
    await t.client.db('admin').command({ shardCollection: ns, key: { a: 1 } });
    await assert.rejects(t.client.db('admin').command({ shardCollection: ns, key: { b: 1 } }), { codeName: 'AlreadyInitialized' });
  });

  test('an empty collection sharded on a hashed key is presplit over the shards, and documents spread by hash', async () => {
    const t = target();
    await shardCollection(t, 'hashed', { _id: 'hashed' });
    const config = t.client.db('config');
    const coll = await config.collection('collections').findOne({ _id: `${t.db.databaseName}.hashed` as never });
    const chunks = await config.collection('chunks').find({ uuid: coll!.uuid }).sort({ min: 1 }).toArray();
    assert.ok(chunks.length >= 2);
    assert.deepEqual([...new Set(chunks.map((c) => c.shard))].sort(), t.shards.map((s) => s.id).sort());
    for (let i = 1; i < chunks.length; i++) assert.deepEqual(chunks[i].min, chunks[i - 1].max, 'chunks are contiguous');
    const docs = Array.from({ length: 200 }, (_, i) => ({ _id: i, v: `value-${i}` }));
    await t.db.collection('hashed').insertMany(docs as never[], { ordered: false });
    const counts = await shardCounts(t, 'hashed');
    assert.equal(
      counts.reduce((a, b) => a + b, 0),
      200,
    );
    assert.ok(
      counts.every((n) => n > 30),
      `both shards hold documents: ${counts.join(', ')}`,
    );
    assert.equal(await t.db.collection('hashed').countDocuments(), 200);
    // The shard key index exists on every shard, hashed: a hinted scan bounded in hash space works.
    for (const shard of t.shards) {
      const indexes = await shard.db.collection('hashed').indexes();
      assert.ok(indexes.some((i) => i.key._id === 'hashed'));
    }
    const firstChunk = chunks[0]!;
    const inFirst = await t.shards
      .find((s) => s.id === firstChunk.shard)!
      .db.collection('hashed')
      .find({})
      .hint({ _id: 'hashed' })
      .min({ _id: new MinKey() })
      .max({ _id: firstChunk.max._id })
      .toArray();
    assert.ok(inFirst.length > 0 && inFirst.length < 200);
  });

  test('a query fixing the shard key reaches one shard; others reach every shard (explain and shard counters)', async () => {
    const t = target();
    const coll = t.db.collection('hashed');
    const targeted = await coll.find({ _id: 7 } as Document).explain();
    assert.equal(targeted.queryPlanner.winningPlan.stage, 'SINGLE_SHARD');
    assert.equal(targeted.queryPlanner.winningPlan.shards.length, 1);
    const broadcast = await coll.find({ v: 'value-7' }).explain();
    assert.equal(broadcast.queryPlanner.winningPlan.shards.length, t.shards.length);

    const before = await shardOpcounters(t);
    assert.deepEqual(await coll.findOne({ _id: 7 } as Document), { _id: 7, v: 'value-7' });
    const middle = await shardOpcounters(t);
    const queried = middle.map((c, i) => c.query - before[i]!.query);
    assert.deepEqual(
      queried.filter((n) => n > 0),
      [1],
      `one shard ran the targeted find: ${queried.join(', ')}`,
    );
    assert.deepEqual(await coll.findOne({ v: 'value-7' }), { _id: 7, v: 'value-7' });
    const after = await shardOpcounters(t);
    assert.ok(
      after.every((c, i) => c.query > middle[i]!.query),
      'every shard ran the broadcast find',
    );
  });

  test('merged cursors honour sort, skip, limit, batchSize and projection across shards', async () => {
    const coll = target().db.collection('hashed');
    const desc = await coll.find({}, { batchSize: 7 }).sort({ _id: -1 }).skip(5).limit(40).project({ _id: 1 }).toArray();
    assert.deepEqual(
      desc.map((d) => d._id),
      Array.from({ length: 40 }, (_, i) => 194 - i),
    );
    const byValue = await coll
      .find({ _id: { $lt: 20 } } as Document)
      .sort({ v: 1 })
      .project({ v: 1, _id: 0 })
      .toArray();
    assert.deepEqual(
      byValue.map((d) => d.v),
      Array.from({ length: 20 }, (_, i) => `value-${i}`).sort(),
    );
    assert.ok(byValue.every((d) => Object.keys(d).join() === 'v'));
    const all = await coll.find({}, { batchSize: 3 }).toArray();
    assert.equal(all.length, 200);
    assert.equal(new Set(all.map((d) => d._id)).size, 200);
  });

  test('count, distinct and aggregate combine the shards; $collStats gives one document per shard', async () => {
    const t = target();
    const coll = t.db.collection('hashed');
    assert.equal(await coll.countDocuments({ _id: { $gte: 100 } } as Document), 100);
    assert.equal((await t.db.command({ count: 'hashed', query: {}, skip: 10, limit: 50 })).n, 50);
    assert.equal((await t.db.command({ count: 'hashed', query: {}, skip: 190 })).n, 10);
    const distinct = await coll.distinct('v', { _id: { $lt: 3 } } as Document);
    assert.deepEqual(distinct, ['value-0', 'value-1', 'value-2']);
    const grouped = await coll
      .aggregate([{ $match: { _id: { $lt: 10 } } }, { $group: { _id: null, n: { $sum: 1 }, total: { $sum: '$_id' } } }])
      .toArray();
    assert.deepEqual(grouped, [{ _id: null, n: 10, total: 45 }]);
    const sorted = await coll.aggregate([{ $sort: { _id: 1 } }, { $limit: 3 }, { $project: { _id: 1 } }]).toArray();
    assert.deepEqual(sorted, [{ _id: 0 }, { _id: 1 }, { _id: 2 }]);
    const stats = await coll.aggregate([{ $collStats: { storageStats: {}, count: {} } }]).toArray();
    assert.deepEqual(stats.map((s) => s.shard).sort(), t.shards.map((s) => s.id).sort());
    assert.equal(
      stats.reduce((n, s) => n + s.count, 0),
      200,
    );
    const dbStats = await t.db.command({ dbStats: 1 });
    assert.ok(dbStats.objects >= 200);
    const collStats = await t.db.command({ collStats: 'hashed' });
    assert.equal(collStats.sharded, true);
    assert.equal(collStats.count, 200);
    assert.deepEqual(Object.keys(collStats.shards).sort(), t.shards.map((s) => s.id).sort());
    const sampled = await coll.aggregate([{ $sample: { size: 20 } }, { $project: { _id: 1 } }]).toArray();
    assert.equal(sampled.length, 20);
    assert.equal(new Set(sampled.map((d) => d._id)).size, 20);
  });

  test('a document missing a shard-key field routes as if it held null', async () => {
    const t = target();
    await shardCollection(t, 'compound', { region: 1, n: 1 });
    const ns = `${t.db.databaseName}.compound`;
    const admin = t.client.db('admin');
    await admin.command({ split: ns, middle: { region: 'm', n: new MinKey() } });
    await admin.command({ moveChunk: ns, find: { region: 'z', n: 1 }, to: t.shards[1]!.id, _waitForDelete: true });
    const coll = t.db.collection('compound');
    await coll.insertMany([
      { _id: 1, region: 'a', n: 1 },
      { _id: 2, region: 'z', n: 1 },
      { _id: 3 },
      { _id: 4, region: null, n: null },
    ] as never[]);
    const [first, second] = await shardCounts(t, 'compound');
    assert.equal(first, 3, 'a, and both null-keyed documents, are below "m"');
    assert.equal(second, 1);
    assert.deepEqual(
      (
        await coll
          .find({ region: null, n: null } as Document)
          .sort({ _id: 1 })
          .toArray()
      ).map((d) => d._id),
      [3, 4],
    );
  });

  test('updates and deletes: targeted by shard key, broadcast when multi, one document without the key (8.0)', async () => {
    const coll = target().db.collection('hashed');
    const one = await coll.updateOne({ _id: 3 } as Document, { $set: { touched: true } });
    assert.equal(one.modifiedCount, 1);
    const many = await coll.updateMany({ _id: { $lt: 10 } } as Document, { $inc: { n: 1 } });
    assert.equal(many.modifiedCount, 10);
    const withoutKey = await coll.updateOne({ v: 'value-42' }, { $set: { found: true } });
    assert.equal(withoutKey.matchedCount, 1);
    assert.equal((await coll.findOne({ _id: 42 } as Document))?.found, true);
    await assert.rejects(coll.updateOne({ v: 'nowhere' }, { $set: { x: 1 } }, { upsert: true }), { code: 61 });
    const upserted = await coll.updateOne({ _id: 1000 } as Document, { $set: { v: 'new' } }, { upsert: true });
    assert.equal(upserted.upsertedId, 1000);
    assert.equal((await coll.deleteOne({ v: 'value-43' })).deletedCount, 1);
    assert.equal((await coll.deleteMany({ _id: { $in: [44, 45, 46] } } as Document)).deletedCount, 3);
    const fam = await coll.findOneAndUpdate({ v: 'value-47' }, { $set: { fam: 1 } }, { returnDocument: 'after' });
    assert.equal(fam?._id, 47);
    assert.equal(await coll.countDocuments(), 200 + 1 - 4);
  });

  test("changing a document's shard key moves it to the owning shard in a retryable write, and is refused otherwise", async () => {
    const t = target();
    await shardCollection(t, 'moving', { k: 1 });
    const ns = `${t.db.databaseName}.moving`;
    const admin = t.client.db('admin');
    await admin.command({ split: ns, middle: { k: 100 } });
    await admin.command({ moveChunk: ns, find: { k: 100 }, to: t.shards[1]!.id, _waitForDelete: true });
    const coll = t.db.collection('moving');
    await coll.insertOne({ _id: 1, k: 5, payload: 'p' } as Document);
    assert.deepEqual(await shardCounts(t, 'moving'), [1, 0]);
    const moved = await coll.updateOne({ _id: 1, k: 5 } as Document, { $set: { k: 500 } });
    assert.equal(moved.modifiedCount, 1);
    assert.deepEqual(await shardCounts(t, 'moving'), [0, 1]);
    assert.deepEqual(await coll.findOne({ k: 500 }), { _id: 1, k: 500, payload: 'p' });
    const back = await coll.findOneAndUpdate({ _id: 1, k: 500 } as Document, { $set: { k: 6 } }, { returnDocument: 'after' });
    assert.deepEqual(back, { _id: 1, k: 6, payload: 'p' });
    assert.deepEqual(await shardCounts(t, 'moving'), [1, 0]);
    // Without a retryable write or a transaction, MongoDB 7.0+ refuses to move a document.
    const plain = await (await import('mongodb')).MongoClient.connect(t.uri, { retryWrites: false });
    try {
      // The driver wraps IllegalOperation write errors (its MMAPv1 message); the server's error is inside.
      await assert.rejects(
        plain
          .db(t.db.databaseName)
          .collection('moving')
          .updateOne({ _id: 1, k: 6 } as Document, { $set: { k: 600 } }),
        (e: { code?: number; originalError?: { code?: number } }) => (e.originalError?.code ?? e.code) === 20,
      );
    } finally {
      await plain.close();
    }
    assert.deepEqual(await shardCounts(t, 'moving'), [1, 0]);
  });

  test('unique shard keys refuse duplicates; hashed keys cannot be unique; only the simple collation', async () => {
    const t = target();
    await shardCollection(t, 'uniq', { email: 1 }, { unique: true });
    const coll = t.db.collection('uniq');
    await coll.insertOne({ email: 'a@x' });
    await assert.rejects(coll.insertOne({ email: 'a@x' }), { code: 11000 });
    const admin = t.client.db('admin');
    await assert.rejects(admin.command({ shardCollection: `${t.db.databaseName}.uniqHashed`, key: { e: 'hashed' }, unique: true }));
    await assert.rejects(admin.command({ shardCollection: `${t.db.databaseName}.coll2`, key: { e: 1 }, collation: { locale: 'fr' } }));
    await admin.command({ shardCollection: `${t.db.databaseName}.coll3`, key: { e: 1 }, collation: { locale: 'simple' } });
  });

  test('hashed chunk bounds are NumberLongs and each shard owns the documents hashing into its chunks', async () => {
    const t = target();
    const coll = await t.client
      .db('config')
      .collection('collections')
      .findOne({ _id: `${t.db.databaseName}.hashed` as never });
    const chunks = await t.client.db('config').collection('chunks').find({ uuid: coll!.uuid }).sort({ min: 1 }).toArray();
    for (const chunk of chunks.slice(1)) assert.ok(chunk.min._id instanceof Long || typeof chunk.min._id === 'number');
    let total = 0;
    for (const chunk of chunks) {
      const shard = t.shards.find((s) => s.id === chunk.shard)!;
      total += (
        await shard.db
          .collection('hashed')
          .find({})
          .hint({ _id: 'hashed' })
          .min({ _id: chunk.min._id })
          .max({ _id: chunk.max._id })
          .project({ _id: 1 })
          .toArray()
      ).length;
    }
    assert.equal(total, await t.db.collection('hashed').countDocuments());
  });
});
