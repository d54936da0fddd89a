/**
 * A sharded source through its mongos, with one `ferry` process (spec §2.3): sharded → sharded
 * recreates each sharded collection sharded with the same key, its data over every destination
 * shard; sharded → replica set recreates them unsharded. Change events come from the
 * cluster-wide stream: shard-key changes, a transaction across shards, and a chunk migration on
 * the source (whose inserts and deletes must not be applied: they are not user writes). After
 * commit the destination holds the source's documents and indexes.
 *
 * The source is a 2-shard test cluster, the destinations another 2-shard cluster and a replica
 * set (each member its own process); `FERRY_TEST_SHARDED_URI`, `FERRY_TEST_SHARDED1_URI` and
 * `FERRY_TEST_RS_URI` point them at real deployments.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { MongoClient, type Document } from 'mongodb';
import { spawnCluster } from '../cluster/index.js';
import { emptyDestination, startFerry } from './ferry-process.js';

const RUN = String(process.pid);

let sourceUri: string;
let shardedUri: string;
let replicaSetUri: string;
let source: MongoClient;
let sharded: MongoClient;
let replicaSet: MongoClient;
const stops: (() => Promise<void>)[] = [];

before(async () => {
  const real = [process.env.FERRY_TEST_SHARDED_URI, process.env.FERRY_TEST_SHARDED1_URI, process.env.FERRY_TEST_RS_URI];
  if (real.every((uri) => uri !== undefined && uri !== '')) {
    [sourceUri, shardedUri, replicaSetUri] = real as string[];
  } else {
    const [a, b, c] = await Promise.all([spawnCluster({ shards: 2 }), spawnCluster({ shards: 2 }), spawnCluster()]);
    stops.push(
      () => a.stop(),
      () => b.stop(),
      () => c.stop(),
    );
    [sourceUri, shardedUri, replicaSetUri] = [a.uri, b.uri, c.uri];
  }
  source = new MongoClient(sourceUri);
  sharded = new MongoClient(shardedUri);
  replicaSet = new MongoClient(replicaSetUri);
});

after(async () => {
  await Promise.all([source?.close(), sharded?.close(), replicaSet?.close()]);
  await Promise.all(stops.map((stop) => stop()));
});

const pad = 'x'.repeat(200);

/** Shards of the source, in `listShards` order. */
async function sourceShards(): Promise<string[]> {
  const { shards } = await source.db('admin').command({ listShards: 1 });
  return (shards as { _id: string }[]).map((s) => s._id);
}

/**
 * A database on the source with `orders` (ranged key, split at customer 200, the upper chunk on
 * the second shard), `users` (hashed `_id`, pre-split on both shards) and `plain` (unsharded).
 */
async function writeSourceData(db: string): Promise<void> {
  const admin = source.db('admin');
  const shards = await sourceShards();
  await admin.command({ enableSharding: db });
  await admin.command({ shardCollection: `${db}.orders`, key: { customer: 1 } });
  await admin.command({ split: `${db}.orders`, middle: { customer: 200 } });
  await admin.command({ moveChunk: `${db}.orders`, find: { customer: 300 }, to: shards[1], _waitForDelete: true });
  await admin.command({ shardCollection: `${db}.users`, key: { _id: 'hashed' } });
  const src = source.db(db);
  await src.collection('orders').createIndex({ total: 1 }, { name: 'total_1' });
  await src
    .collection('orders')
    .insertMany(Array.from({ length: 2000 }, (_, i) => ({ _id: i, customer: i % 400, total: i, pad })) as never[]);
  await src.collection('users').insertMany(Array.from({ length: 1000 }, (_, i) => ({ _id: i, name: `user ${i}`, pad })) as never[]);
  await src.collection('plain').insertMany(Array.from({ length: 100 }, (_, i) => ({ _id: i, v: i })) as never[]);
}

/** Writes during change-event application, a migration among them (see the module comment). */
async function writeDuringCea(db: string): Promise<void> {
  const src = source.db(db);
  const orders = src.collection('orders');
  // Shard-key changes across the split: each document moves to the other shard.
  for (let i = 0; i < 30; i++) await orders.updateOne({ _id: i } as Document, { $set: { customer: 399 - i, moved: true } });
  const session = source.startSession();
  try {
    await session.withTransaction(async () => {
      await orders.updateOne({ _id: 50 } as Document, { $inc: { total: 1000 } }, { session });
      await orders.updateOne({ _id: 250 } as Document, { $inc: { total: -1000 } }, { session });
      await src.collection('users').insertOne({ _id: 5000, name: 'in a transaction' } as Document, { session });
    });
  } finally {
    await session.endSession();
  }
  // A migration: its inserts on the recipient and deletes on the donor are not user writes.
  const shards = await sourceShards();
  await source.db('admin').command({ moveChunk: `${db}.orders`, find: { customer: 0 }, to: shards[1], _waitForDelete: true });
  await orders.updateOne({ _id: 400 } as Document, { $set: { afterMigration: true } });
  await orders.deleteMany({ _id: { $gte: 1990 } } as Document);
  await src.collection('users').deleteMany({ _id: { $lt: 10 } } as Document);
  await src.collection('plain').updateMany({}, { $inc: { v: 1 } });
}

async function sortedDocs(client: MongoClient, db: string, coll: string): Promise<Document[]> {
  return client.db(db).collection(coll).find().sort({ _id: 1 }).toArray();
}

async function indexShapes(client: MongoClient, db: string, coll: string): Promise<Record<string, Document>> {
  const indexes = await client.db(db).collection(coll).listIndexes().toArray();
  return Object.fromEntries(indexes.map((index) => [index.name, { key: index.key, unique: index.unique === true }]));
}

async function shardKeys(client: MongoClient, db: string): Promise<Record<string, Document>> {
  const entries = await client
    .db('config')
    .collection('collections')
    .find({ _id: { $regex: `^${db}\\.` } } as Document)
    .toArray();
  return Object.fromEntries(entries.map((entry) => [String(entry._id), entry.key as Document]));
}

/** Runs one sync of `db` from the source to `destinationUri` to commit. */
async function syncToCommit(db: string, destinationUri: string, extra: Document = {}): Promise<void> {
  await emptyDestination(destinationUri);
  const ferry = await startFerry(['--cluster0', sourceUri, '--cluster1', destinationUri], { FERRY_COMMIT_RETRY_INTERVAL_MS: '200' });
  try {
    const started = await ferry.post('start', {
      source: 'cluster0',
      destination: 'cluster1',
      includeNamespaces: [{ database: db }],
      ...extra,
    });
    assert.equal(started.status, 200, JSON.stringify(started.body));
    await ferry.waitForProgress((p) => p.canCommit === true, 180_000);
    await writeDuringCea(db);
    assert.equal((await ferry.post('commit', {})).status, 200);
    const done = await ferry.waitForProgress((p) => p.state === 'COMMITTED', 120_000);
    // Only the reminder that the source stays write-blocked after a commit with sourceAndDestination.
    assert.deepEqual(
      (done.warnings ?? []).filter((warning: string) => !warning.startsWith('User writes are blocked on the source')),
      [],
    );
  } finally {
    assert.equal(await ferry.stop(), 0);
  }
}

async function assertSameData(destination: MongoClient, db: string): Promise<void> {
  for (const coll of ['orders', 'users', 'plain']) {
    const [there, here] = [await sortedDocs(destination, db, coll), await sortedDocs(source, db, coll)];
    const ids = new Set(there.map((d) => String(d._id)));
    const missing = here.filter((d) => !ids.has(String(d._id))).map((d) => d._id as unknown);
    assert.equal(there.length, here.length, `${coll}: as many documents (missing: ${JSON.stringify(missing.slice(0, 20))})`);
    assert.deepEqual(there, here, `${coll}: the same documents`);
    assert.deepEqual(await indexShapes(destination, db, coll), await indexShapes(source, db, coll), `${coll}: the same indexes`);
  }
}

describe('sharded source through its mongos', () => {
  // First: once a sync committed, the destination remembers it (the default id's state).
  it('refuses sharding entries, a replicaSet option on a mongos, an --id that is no source shard and a running source balancer, writing nothing', async () => {
    const db = `refused_${RUN}`;
    await source
      .db(db)
      .collection('things')
      .insertMany(Array.from({ length: 10 }, (_, i) => ({ _id: i })) as never[]);
    const start = { source: 'cluster0', destination: 'cluster1', includeNamespaces: [{ database: db }] };
    const expectRefused = async (args: string[], body: Document, error: string, describes: RegExp) => {
      const ferry = await startFerry(['--cluster0', sourceUri, '--cluster1', shardedUri, ...args]);
      try {
        const reply = await ferry.post('start', { ...start, ...body });
        assert.equal(reply.status, 422, JSON.stringify(reply.body));
        assert.equal(reply.body.error, error);
        assert.match(reply.body.errorDescription, describes);
        assert.equal((await ferry.progress()).state, 'IDLE');
      } finally {
        assert.equal(await ferry.stop(), 0);
      }
    };
    const entry = { database: db, collection: 'things', shardCollection: { key: [{ _id: 1 }] } };
    await expectRefused([], { sharding: { createSupportingIndexes: false, shardingEntries: [entry] } }, 'ShardingNotAllowed', /sharding/);
    // An id that is not a source shard (a shard's id makes the instance one of several: multi-instance.test.ts).
    await expectRefused(['--id', 'shard77'], {}, 'InstanceIdNotAllowed', /--id "shard77" is not a shard of the source.*"shard01"/);
    const url = new URL(sourceUri);
    url.searchParams.set('replicaSet', 'rs0');
    const withReplicaSet = url.toString();
    const ferry = await startFerry(['--cluster0', withReplicaSet, '--cluster1', shardedUri]);
    try {
      const reply = await ferry.post('start', start);
      assert.equal(reply.status, 422, JSON.stringify(reply.body));
      assert.equal(reply.body.error, 'ReplicaSetOptionOnMongos');
      assert.match(reply.body.errorDescription, /replicaSet/);
    } finally {
      assert.equal(await ferry.stop(), 0);
    }
    await source.db('admin').command({ balancerStart: 1 });
    try {
      await expectRefused([], {}, 'BalancerRunning', /balancerStop/);
    } finally {
      await source.db('admin').command({ balancerStop: 1 });
    }
    const { databases } = await sharded.db('admin').command({ listDatabases: 1, nameOnly: true });
    assert.ok(!(databases as { name: string }[]).some((d) => d.name === db), 'nothing of it on the destination');
  });

  it('sharded → sharded: the same keys, data on every destination shard, migrations not applied', async () => {
    const db = `s2s_${RUN}`;
    await writeSourceData(db);
    await syncToCommit(db, shardedUri, { enableUserWriteBlocking: 'sourceAndDestination' });
    try {
      // Commit blocked user writes on the whole source: every shard says so (serverStatus:
      // userWriteBlockMode 2 is enabled). (Without access control every client may bypass it.)
      const { shards } = await source.db('admin').command({ listShards: 1 });
      for (const shard of shards as { _id: string; host: string }[]) {
        const [setName, hosts] = shard.host.split('/');
        const client = new MongoClient(`mongodb://${hosts}/?replicaSet=${setName}`);
        try {
          const status = await client.db('admin').command({ serverStatus: 1 });
          assert.equal(status.repl?.userWriteBlockMode, 2, `${shard._id}: user writes blocked`);
        } finally {
          await client.close();
        }
      }
    } finally {
      await source.db('admin').command({ setUserWriteBlockMode: 1, global: false });
    }
    await assertSameData(sharded, db);
    assert.deepEqual(await shardKeys(sharded, db), { [`${db}.orders`]: { customer: 1 }, [`${db}.users`]: { _id: 'hashed' } });
    for (const coll of ['orders', 'users']) {
      const stats = await sharded
        .db(db)
        .collection(coll)
        .aggregate([{ $collStats: { count: {} } }])
        .toArray();
      const total = stats.reduce((sum, s) => sum + Number(s.count), 0);
      assert.equal(stats.length, 2, `${coll} on both destination shards`);
      for (const s of stats) assert.ok(Number(s.count) <= 0.75 * total, `${coll} on ${String(s.shard)}: ${String(s.count)} of ${total}`);
    }
  });

  it('sharded → replica set: every collection unsharded, the same documents and indexes', async () => {
    const db = `s2rs_${RUN}`;
    await writeSourceData(db);
    await syncToCommit(db, replicaSetUri);
    await assertSameData(replicaSet, db);
  });
});
