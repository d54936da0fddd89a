/**
 * Cluster-wide operations through mongos: transactions that write to several shards commit
 * atomically (or not at all), sessions and retryable writes, killCursors, appendOplogNote on
 * every shard, and user write blocking set through mongos on every shard (with access control,
 * where only holders of bypassWriteBlockingMode bypass it).
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { type Document, Long, MongoClient } from 'mongodb';
import { spawnCluster, type ShardedClusterHandle } from '../../cluster/index.js';
import { shardCollection, shardCounts, shardedConformance } from './harness.js';

shardedConformance('sharded transactions, sessions and cluster-wide commands', (target) => {
  test('a transaction writing to two shards commits both writes, or neither on abort', async () => {
    const t = target();
    await shardCollection(t, 'accounts', { _id: 1 });
    const ns = `${t.db.databaseName}.accounts`;
    await t.client.db('admin').command({ split: ns, middle: { _id: 100 } });
    await t.client.db('admin').command({ moveChunk: ns, find: { _id: 100 }, to: t.shards[1]!.id, _waitForDelete: true });
    const coll = t.db.collection('accounts');
    await coll.insertMany([
      { _id: 1, balance: 100 },
      { _id: 200, balance: 0 },
    ] as never[]);
    const session = t.client.startSession();
    try {
      await session.withTransaction(async () => {
        await coll.updateOne({ _id: 1 } as Document, { $inc: { balance: -30 } }, { session });
        await coll.updateOne({ _id: 200 } as Document, { $inc: { balance: 30 } }, { session });
        // Inside, the transaction sees its own writes; outside, nobody does yet.
        assert.equal((await coll.findOne({ _id: 200 } as Document, { session }))?.balance, 30);
        assert.equal((await coll.findOne({ _id: 200 } as Document))?.balance, 0);
      });
      assert.deepEqual(
        (await coll.find().sort({ _id: 1 }).toArray()).map((d) => d.balance),
        [70, 30],
      );
      session.startTransaction();
      await coll.updateOne({ _id: 1 } as Document, { $inc: { balance: -50 } }, { session });
      await coll.insertOne({ _id: 300, balance: 50 } as Document, { session });
      await session.abortTransaction();
    } finally {
      await session.endSession();
    }
    assert.deepEqual(
      (await coll.find().sort({ _id: 1 }).toArray()).map((d) => [d._id, d.balance]),
      [
        [1, 70],
        [200, 30],
      ],
    );
  });

  test('a cross-shard transaction is one set of events with one lsid and txnNumber in the merged stream', async () => {
    const t = target();
    const coll = t.db.collection('accounts');
    const stream = coll.watch([], { maxAwaitTimeMS: 200 });
    await stream.tryNext();
    const session = t.client.startSession();
    try {
      await session.withTransaction(async () => {
        await coll.updateOne({ _id: 1 } as Document, { $inc: { balance: -1 } }, { session });
        await coll.updateOne({ _id: 200 } as Document, { $inc: { balance: 1 } }, { session });
      });
    } finally {
      await session.endSession();
    }
    const events: Document[] = [];
    for (let i = 0; i < 100 && events.length < 2; i++) {
      const event = await stream.tryNext();
      if (event) events.push(event);
    }
    await stream.close();
    assert.equal(events.length, 2);
    assert.deepEqual(
      events.map((e) => e.documentKey._id).sort((a, b) => a - b),
      [1, 200],
    );
    assert.ok(events.every((e) => e.txnNumber !== undefined && e.lsid !== undefined));
    assert.equal(String(events[0]!.txnNumber), String(events[1]!.txnNumber));
  });

  test('concurrent transactions on the same document: one commits, the other gets a transient WriteConflict', async () => {
    const t = target();
    const coll = t.db.collection('accounts');
    const a = t.client.startSession();
    const b = t.client.startSession();
    try {
      a.startTransaction();
      b.startTransaction();
      await coll.updateOne({ _id: 200 } as Document, { $inc: { balance: 1 } }, { session: a });
      await coll.updateOne({ _id: 1 } as Document, { $inc: { balance: 1 } }, { session: a });
      const conflict = await coll.updateOne({ _id: 200 } as Document, { $inc: { balance: 100 } }, { session: b }).then(
        () => undefined,
        (e: { code?: number; errorLabels?: string[] }) => e,
      );
      assert.equal(conflict?.code, 112);
      assert.ok(conflict?.errorLabels?.includes('TransientTransactionError'));
      await a.commitTransaction();
      await b.abortTransaction().catch(() => {});
    } finally {
      await a.endSession();
      await b.endSession();
    }
    assert.equal((await coll.findOne({ _id: 200 } as Document))?.balance, 32, 'only the committed increment');
  });

  test('when one shard cannot commit its part, no shard commits (two-phase commit)', async (ctx) => {
    const t = target();
    // On mongod the outside write below would wait for the transaction; the test cluster lets it
    // through and fails the transaction at commit (see its README), which is what this checks.
    if (!t.local) return ctx.skip('relies on the test cluster’s write-conflict model');
    const coll = t.db.collection('accounts');
    const before = await coll.find().sort({ _id: 1 }).toArray();
    const session = t.client.startSession();
    try {
      session.startTransaction();
      await coll.updateOne({ _id: 1 } as Document, { $set: { balance: -1 } }, { session });
      await coll.updateOne({ _id: 200 } as Document, { $set: { balance: -1 } }, { session });
      // Another writer changes the second shard's document: that part can no longer commit.
      await t.shards[1]!.db.collection('accounts').updateOne({ _id: 200 } as Document, { $set: { note: 'outside' } });
      const failure = await session.commitTransaction().then(
        () => undefined,
        (e: { code?: number; errorLabels?: string[] }) => e,
      );
      assert.equal(failure?.code, 112);
      assert.ok(failure?.errorLabels?.includes('TransientTransactionError'));
    } finally {
      await session.endSession();
    }
    const now = await coll.find().sort({ _id: 1 }).toArray();
    assert.deepEqual(
      now.map((d) => d.balance),
      before.map((d) => d.balance),
      'neither shard applied its part',
    );
  });

  test('a retried retryable write through mongos is applied once', async () => {
    const t = target();
    await shardCollection(t, 'retried', { _id: 'hashed' });
    const session = t.client.startSession();
    try {
      const command = {
        insert: 'retried',
        documents: Array.from({ length: 10 }, (_, i) => ({ _id: i })),
        lsid: session.id,
        txnNumber: Long.fromNumber(7),
      };
      const first = await t.db.command(command);
      const again = await t.db.command(command);
      assert.equal(first.n, 10);
      assert.equal(again.n, 10);
      assert.equal(again.writeErrors, undefined);
      assert.equal(await t.db.collection('retried').countDocuments(), 10);
      const counts = await shardCounts(t, 'retried');
      assert.ok(
        counts.every((n) => n > 0),
        'the batch spanned both shards',
      );
    } finally {
      await session.endSession();
    }
  });

  test('killCursors through mongos ends a merged cursor', async () => {
    const t = target();
    const reply = await t.db.command({ find: 'retried', batchSize: 2 });
    const id = reply.cursor.id;
    assert.ok(!Long.fromValue(id).isZero());
    const killed = await t.db.command({ killCursors: 'retried', cursors: [id] });
    assert.deepEqual(killed.cursorsKilled.map(String), [String(id)]);
    await assert.rejects(t.db.command({ getMore: id, collection: 'retried' }), { code: 43, codeName: 'CursorNotFound' });
  });

  test('appendOplogNote through mongos advances every shard’s oplog', async () => {
    const t = target();
    const before = await Promise.all(t.shards.map(async (s) => (await s.client.db('admin').command({ ping: 1 })).operationTime));
    await t.client.db('admin').command({ appendOplogNote: 1, data: { ferry: 'note' } });
    const after = await Promise.all(
      t.shards.map(async (s) => (await s.client.db('admin').command({ serverStatus: 1, oplog: 1 })).oplog.latestOptime),
    );
    after.forEach((ts, i) => assert.ok(ts.greaterThan(before[i]), `shard ${t.shards[i]!.id} wrote the note`));
  });

  test('setUserWriteBlockMode through mongos reaches every shard', async (ctx) => {
    const t = target();
    const admin = t.client.db('admin');
    const status = await admin.command({ connectionStatus: 1 });
    if (status.authInfo.authenticatedUsers.length > 0) return ctx.skip('the target runs with access control');
    await admin.command({ setUserWriteBlockMode: 1, global: true });
    try {
      for (const shard of t.shards) {
        assert.equal((await shard.client.db('admin').command({ serverStatus: 1 })).repl.userWriteBlockMode, 2);
      }
    } finally {
      await admin.command({ setUserWriteBlockMode: 1, global: false });
    }
    for (const shard of t.shards) assert.equal((await shard.client.db('admin').command({ serverStatus: 1 })).repl.userWriteBlockMode, 1);
  });
});

describe('write blocking across shards with access control [test cluster]', () => {
  let cluster: ShardedClusterHandle;
  let root: MongoClient;
  let app: MongoClient;

  before(async () => {
    cluster = await spawnCluster({
      shards: 2,
      users: [
        { user: 'admin', password: 'admin-pw', roles: ['root'] },
        { user: 'app', password: 'app-pw', roles: ['readWriteAnyDatabase', 'clusterManager'] },
      ],
    });
    const host = new URL(cluster.uri).host;
    root = await MongoClient.connect(`mongodb://admin:admin-pw@${host}/`);
    app = await MongoClient.connect(`mongodb://app:app-pw@${host}/`);
  });

  after(async () => {
    await app?.close();
    await root?.close();
    await cluster?.stop();
  });

  test('users authenticate through mongos and unauthenticated clients are refused', async () => {
    const anonymous = await MongoClient.connect(cluster.uri);
    try {
      await assert.rejects(anonymous.db('shop').collection('x').insertOne({}), { code: 13 });
    } finally {
      await anonymous.close();
    }
    await root.db('admin').command({ enableSharding: 'shop' });
    await root.db('admin').command({ shardCollection: 'shop.orders', key: { _id: 'hashed' } });
    await app
      .db('shop')
      .collection('orders')
      .insertMany(Array.from({ length: 20 }, (_, i) => ({ _id: i })) as never[]);
    assert.equal(await app.db('shop').collection('orders').countDocuments(), 20);
  });

  test('while blocked, writes to every shard fail with UserWritesBlocked; root bypasses', async () => {
    const orders = app.db('shop').collection('orders');
    await root.db('admin').command({ setUserWriteBlockMode: 1, global: true });
    try {
      for (const id of [100, 101, 102, 103]) await assert.rejects(orders.insertOne({ _id: id } as Document), { code: 371 });
      await assert.rejects(orders.deleteMany({}), { code: 371 });
      await root
        .db('shop')
        .collection('orders')
        .insertMany([{ _id: 200 }, { _id: 201 }, { _id: 202 }] as never[]);
    } finally {
      await root.db('admin').command({ setUserWriteBlockMode: 1, global: false });
    }
    await orders.insertOne({ _id: 300 } as Document);
    assert.equal(await orders.countDocuments(), 24);
  });
});
