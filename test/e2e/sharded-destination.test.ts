/**
 * Replica set → sharded cluster through the real `ferry` process (spec §2.3, §4.1 rules 4–9):
 * the collections `sharding.shardingEntries` lists are sharded on the destination with their key
 * (ranged, hashed, compound with a unique shard-key index), their chunks pre-split and spread over
 * both shards before the copy; unlisted collections stay unsharded; change events — shard-key
 * changes and a transaction among them — are applied through mongos; after commit the
 * destination holds the source's documents and indexes, each listed collection's data on every
 * shard. Refused configurations answer a named error and write nothing.
 *
 * The source is a replica set, the destination a 2-shard test cluster (each member its own
 * process); `FERRY_TEST_RS_URI` and `FERRY_TEST_SHARDED_URI` point them at real deployments.
 */
import { after, before, describe, it } from 'node:test';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import assert from 'node:assert/strict';
import { MongoClient, type Document } from 'mongodb';
import { spawnCluster } from '../cluster/index.js';
import { emptyDestination, startFerry, type FerryProcess } from './ferry-process.js';
import { METADATA_DATABASE } from '../../src/domain/namespaces.js';

const RUN = String(process.pid);

let sourceUri: string;
let destinationUri: string;
let source: MongoClient;
let destination: MongoClient;
const stops: (() => Promise<void>)[] = [];

before(async () => {
  const realSource = process.env.FERRY_TEST_RS_URI;
  const realDestination = process.env.FERRY_TEST_SHARDED_URI;
  if (realSource && realDestination) {
    sourceUri = realSource;
    destinationUri = realDestination;
  } else {
    const [rs, sharded] = await Promise.all([spawnCluster(), spawnCluster({ shards: 2 })]);
    stops.push(
      () => rs.stop(),
      () => sharded.stop(),
    );
    sourceUri = rs.uri;
    destinationUri = sharded.uri;
  }
  source = new MongoClient(sourceUri);
  destination = new MongoClient(destinationUri);
});

after(async () => {
  await source?.close();
  await destination?.close();
  await Promise.all(stops.map((stop) => stop()));
});

/** A Ferry for a new sync, onto an emptied destination. */
async function ferry(): Promise<FerryProcess> {
  await emptyDestination(destinationUri);
  return startFerry(['--cluster0', sourceUri, '--cluster1', destinationUri], { FERRY_COMMIT_RETRY_INTERVAL_MS: '200' });
}

/** User databases on the destination (Ferry's metadata and mongod's own left out). */
async function destinationDatabases(): Promise<string[]> {
  const { databases } = await destination.db('admin').command({ listDatabases: 1, nameOnly: true });
  return (databases as { name: string }[]).map((d) => d.name).filter((name) => !['admin', 'config', 'local'].includes(name));
}

/** Documents of each shard's part of a collection (`$collStats` through mongos: one entry per shard). */
async function countsByShard(db: string, coll: string): Promise<Map<string, number>> {
  const stats = await destination
    .db(db)
    .collection(coll)
    .aggregate([{ $collStats: { count: {} } }])
    .toArray();
  return new Map(stats.map((s) => [String(s.shard), Number(s.count)]));
}

async function sortedDocs(client: MongoClient, db: string, coll: string): Promise<Document[]> {
  return client.db(db).collection(coll).find().sort({ _id: 1 }).toArray();
}

/** Index name → the fields that matter after commit (key, unique, expireAfterSeconds). */
async function indexShapes(client: MongoClient, db: string, coll: string): Promise<Record<string, Document>> {
  const indexes = await client.db(db).collection(coll).listIndexes().toArray();
  return Object.fromEntries(
    indexes.map((index) => [index.name, { key: index.key, unique: index.unique === true, hidden: index.hidden === true }]),
  );
}

describe('replica set → sharded cluster', () => {
  it('refuses a missing sharding, a key without an index, an incompatible unique index and a running balancer, writing nothing', async () => {
    const db = `refused_${RUN}`;
    await source
      .db(db)
      .collection('things')
      .insertMany(Array.from({ length: 20 }, (_, i) => ({ _id: i, k: i, code: `c${i}` })) as never[]);
    await source.db(db).collection('things').createIndex({ code: 1 }, { unique: true, name: 'code_unique' });
    const include = { includeNamespaces: [{ database: db }] };
    const entry = (key: Document[]) => ({ database: db, collection: 'things', shardCollection: { key } });
    const ferryProcess = await ferry();
    const refused = async (body: Document, error: string, describes: RegExp) => {
      const reply = await ferryProcess.post('start', { source: 'cluster0', destination: 'cluster1', ...include, ...body });
      assert.equal(reply.status, 422, JSON.stringify(reply.body));
      assert.equal(reply.body.error, error);
      assert.match(reply.body.errorDescription, describes);
      assert.equal((await ferryProcess.progress()).state, 'IDLE');
    };
    try {
      await refused({}, 'ShardingRequired', /sharding/);
      await refused(
        { sharding: { createSupportingIndexes: true, shardingEntries: [entry([{ k: 1 }])] } },
        'UniqueIndexIncompatible',
        /code_unique/,
      );
      await source.db(db).collection('things').dropIndex('code_unique');
      await refused({ sharding: { createSupportingIndexes: false, shardingEntries: [entry([{ k: 1 }])] } }, 'ShardKeyIndexMissing', /k: 1/);
      await source.db(db).createCollection('thingsView', { viewOn: 'things', pipeline: [] });
      const viewEntry = { database: db, collection: 'thingsView', shardCollection: { key: [{ k: 1 }] } };
      await refused({ sharding: { createSupportingIndexes: true, shardingEntries: [viewEntry] } }, 'ShardingEntryInvalid', /view/);
      const outside = { database: `elsewhere_${RUN}`, collection: 'c', shardCollection: { key: [{ k: 1 }] } };
      await refused({ sharding: { createSupportingIndexes: true, shardingEntries: [outside] } }, 'ShardingEntryInvalid', /filters/);
      await destination.db('admin').command({ balancerStart: 1 });
      try {
        await refused(
          { sharding: { createSupportingIndexes: true, shardingEntries: [entry([{ k: 1 }])] } },
          'BalancerRunning',
          /balancerStop/,
        );
      } finally {
        await destination.db('admin').command({ balancerStop: 1 });
      }
      assert.deepEqual(await destinationDatabases(), [], 'nothing written on the destination');
    } finally {
      assert.equal(await ferryProcess.stop(), 0);
      await source.db(db).dropDatabase();
    }
  });

  it('shards the listed collections before the copy, applies change events through mongos and restores everything at commit', async () => {
    const db = `tosharded_${RUN}`;
    const src = source.db(db);
    const pad = 'x'.repeat(200);
    // Ranged key with a source index; a skewed distribution (most documents on low customers).
    await src
      .collection('orders')
      .insertMany(Array.from({ length: 3000 }, (_, i) => ({ _id: i, customer: i % 3 === 0 ? i % 50 : i % 400, total: i, pad })) as never[]);
    await src.collection('orders').createIndex({ customer: 1, total: -1 }, { name: 'customer_total' });
    // Hashed key, no source index: created on the destination (createSupportingIndexes).
    await src
      .collection('users')
      .insertMany(Array.from({ length: 2000 }, (_, i) => ({ _id: i, email: `u${i}@example.com`, pad })) as never[]);
    // Compound key whose index is unique.
    await src
      .collection('events')
      .insertMany(Array.from({ length: 2000 }, (_, i) => ({ _id: i, region: ['eu', 'us', 'ap', 'sa'][i % 4], seq: i, pad })) as never[]);
    await src.collection('events').createIndex({ region: 1, seq: 1 }, { unique: true, name: 'region_seq_unique' });
    // Left unsharded.
    await src.collection('plain').insertMany(Array.from({ length: 100 }, (_, i) => ({ _id: i, v: i })) as never[]);

    const process = await ferry();
    try {
      const started = await process.post('start', {
        source: 'cluster0',
        destination: 'cluster1',
        includeNamespaces: [{ database: db }],
        sharding: {
          createSupportingIndexes: true,
          shardingEntries: [
            { database: db, collection: 'orders', shardCollection: { key: [{ customer: 1 }] } },
            { database: db, collection: 'users', shardCollection: { key: [{ email: 'hashed' }] } },
            { database: db, collection: 'events', shardCollection: { key: [{ region: 1 }, { seq: 1 }] } },
          ],
        },
      });
      assert.equal(started.status, 200, JSON.stringify(started.body));
      await process.waitForProgress((p) => p.canCommit === true, 180_000);

      // Sharded before commit, with the keys asked for; `plain` is not.
      const sharded = await destination
        .db('config')
        .collection('collections')
        .find({ _id: { $regex: `^${db}\\.` } } as Document)
        .toArray();
      const keys = Object.fromEntries(sharded.map((c) => [String(c._id), c.key]));
      assert.deepEqual(Object.keys(keys).sort(), [`${db}.events`, `${db}.orders`, `${db}.users`]);
      assert.deepEqual(keys[`${db}.orders`], { customer: 1 });
      assert.deepEqual(keys[`${db}.users`], { email: 'hashed' });
      assert.deepEqual(keys[`${db}.events`], { region: 1, seq: 1 });

      // Change events: updates that move documents to another chunk (shard-key changes), a
      // cross-document transaction, deletes, inserts, an update without the key in the filter.
      const orders = src.collection('orders');
      for (let i = 0; i < 40; i++) await orders.updateOne({ _id: i } as Document, { $set: { customer: 399 - (i % 50), moved: true } });
      await orders.updateOne({ _id: 41 } as Document, { $set: { customer: 3 } });
      await orders.updateOne({ _id: 41 } as Document, { $set: { customer: 398 } }); // twice in a row
      await orders.deleteMany({ _id: { $gte: 2900 } } as Document);
      await orders.insertMany(Array.from({ length: 50 }, (_, i) => ({ _id: 10_000 + i, customer: i * 7, pad })) as never[]);
      await src.collection('users').updateMany({ _id: { $lt: 30 } } as Document, { $set: { email: 'changed@example.com' } });
      await src.collection('users').deleteMany({ _id: { $gte: 1990 } } as Document);
      await src.collection('events').updateOne({ _id: 5 } as Document, { $set: { region: 'zz' } });
      await src.collection('events').replaceOne({ _id: 6 } as Document, { region: 'aa', seq: 6, replaced: true });
      const session = source.startSession();
      try {
        await session.withTransaction(async () => {
          await orders.updateOne({ _id: 100 } as Document, { $set: { customer: 250 } }, { session });
          await src.collection('events').insertOne({ _id: 5000, region: 'eu', seq: 5000 } as Document, { session });
          await src.collection('plain').deleteOne({ _id: 1 } as Document, { session });
        });
      } finally {
        await session.endSession();
      }

      assert.equal((await process.post('commit', {})).status, 200);
      const done = await process.waitForProgress((p) => p.state === 'COMMITTED', 120_000);
      assert.deepEqual(done.warnings ?? [], []);
    } finally {
      assert.equal(await process.stop(), 0);
    }

    for (const coll of ['orders', 'users', 'events', 'plain']) {
      assert.deepEqual(await sortedDocs(destination, db, coll), await sortedDocs(source, db, coll), `${coll}: the same documents`);
    }
    // Indexes as on the source, unique restored; `users` keeps the created supporting index.
    for (const coll of ['orders', 'events', 'plain']) {
      assert.deepEqual(await indexShapes(destination, db, coll), await indexShapes(source, db, coll), `${coll}: the same indexes`);
    }
    // Restored on every shard, not only on the one mongos lists indexes from.
    const stats = await destination
      .db(db)
      .collection('events')
      .aggregate([{ $indexStats: {} }])
      .toArray();
    const uniqueOn = stats.filter((s) => s.name === 'region_seq_unique' && s.spec?.unique === true).map((s) => String(s.shard));
    assert.deepEqual(uniqueOn.sort(), [...(await countsByShard(db, 'events')).keys()].sort(), 'unique on every shard');
    const users = await indexShapes(destination, db, 'users');
    assert.deepEqual(users.email_hashed?.key, { email: 'hashed' });
    // Every shard holds about its share of each sharded collection (at most twice its fair share).
    for (const coll of ['orders', 'users', 'events']) {
      const counts = await countsByShard(db, coll);
      const total = [...counts.values()].reduce((a, b) => a + b, 0);
      assert.equal(counts.size, 2, `${coll} on both shards`);
      // Two shards: "at most twice the fair share" would allow everything on one; ask for 3/4 at most.
      for (const [shard, count] of counts) assert.ok(count <= 0.75 * total, `${coll} on ${shard}: ${count} of ${total}`);
    }
    assert.equal((await countsByShard(db, 'plain')).size, 1, 'plain is not sharded');
  });
  it('builds a placeholder index for a key whose supporting index buildIndexes never leaves unbuilt, and keeps it after commit', async () => {
    // The previous sync committed as the single instance ("coordinator"): start the next one afresh.
    await destination.db(METADATA_DATABASE).dropDatabase();
    const db = `placeholder_${RUN}`;
    const src = source.db(db);
    await src
      .collection('orders')
      .insertMany(Array.from({ length: 1000 }, (_, i) => ({ _id: i, customer: i % 100, pad: 'y'.repeat(100) })) as never[]);
    await src.collection('orders').createIndex({ customer: 1 }, { name: 'customer_1' });
    await src.collection('orders').createIndex({ pad: 1 }, { name: 'pad_1' });
    const ferryProcess = await ferry();
    try {
      const started = await ferryProcess.post('start', {
        source: 'cluster0',
        destination: 'cluster1',
        includeNamespaces: [{ database: db }],
        buildIndexes: 'never',
        sharding: {
          createSupportingIndexes: false,
          shardingEntries: [{ database: db, collection: 'orders', shardCollection: { key: [{ customer: 1 }] } }],
        },
      });
      assert.equal(started.status, 200, JSON.stringify(started.body));
      await ferryProcess.waitForProgress((p) => p.canCommit === true, 120_000);
      assert.equal((await ferryProcess.post('commit', {})).status, 200);
      await ferryProcess.waitForProgress((p) => p.state === 'COMMITTED', 120_000);
    } finally {
      assert.equal(await ferryProcess.stop(), 0);
    }
    assert.deepEqual(await sortedDocs(destination, db, 'orders'), await sortedDocs(source, db, 'orders'));
    const indexes = await indexShapes(destination, db, 'orders');
    assert.deepEqual(Object.keys(indexes).sort(), ['_id_', 'customer_1_shardKey'], 'only _id and the placeholder: buildIndexes never');
    assert.deepEqual(indexes.customer_1_shardKey!.key, { customer: 1 });
    assert.equal((await countsByShard(db, 'orders')).size, 2, 'sharded over both shards');
  });
  it('stops on a rename into another database (rule 8) before applying any of it', async () => {
    await destination.db(METADATA_DATABASE).dropDatabase();
    const [a, b] = [`renamefrom_${RUN}`, `renameto_${RUN}`];
    await source
      .db(a)
      .collection('x')
      .insertMany(Array.from({ length: 50 }, (_, i) => ({ _id: i, k: i })) as never[]);
    await source
      .db(b)
      .collection('other')
      .insertOne({ _id: 1 } as Document);
    const ferryProcess = await ferry();
    try {
      const started = await ferryProcess.post('start', {
        source: 'cluster0',
        destination: 'cluster1',
        includeNamespaces: [{ database: a }, { database: b }],
        sharding: {
          createSupportingIndexes: true,
          shardingEntries: [{ database: a, collection: 'x', shardCollection: { key: [{ k: 1 }] } }],
        },
      });
      assert.equal(started.status, 200, JSON.stringify(started.body));
      await ferryProcess.waitForProgress((p) => p.canCommit === true, 120_000);
      await source.db('admin').command({ renameCollection: `${a}.x`, to: `${b}.y` });
      const stopped = await ferryProcess.waitForProgress((p) => p.state === 'PAUSED', 60_000);
      const warning = (stopped.warnings as string[]).find((w) => /renameCollection across databases/.test(w));
      assert.ok(warning !== undefined, JSON.stringify(stopped));
      assert.match(warning, /not supported|does not support/);
      assert.equal(stopped.canCommit, false);
    } finally {
      assert.equal(await ferryProcess.stop(), 0);
    }
    assert.equal(await destination.db(a).collection('x').countDocuments(), 50, 'the listed collection is still there, whole');
    const inTarget = (await destination.db(b).listCollections().toArray()).map((c) => c.name);
    assert.deepEqual(inTarget, ['other'], 'nothing of the rename in the target database');
  });
  it('survives SIGKILL of Ferry during the copy and during CEA: sharded once, no document lost or doubled', async () => {
    await destination.db(METADATA_DATABASE).dropDatabase();
    const db = `tokill_${RUN}`;
    for (const coll of ['hashed', 'ranged']) {
      await source
        .db(db)
        .collection(coll)
        .insertMany(Array.from({ length: 4000 }, (_, i) => ({ _id: i, n: i, body: 'x'.repeat(1000) })) as never[]);
    }
    const logDir = mkdtempSync(join(tmpdir(), 'ferry-sharded-kill-'));
    // Slow and fine-grained on purpose, so that the kill lands in the middle of the copy.
    const args = ['--cluster0', sourceUri, '--cluster1', destinationUri, '--copyWorkers', '1', '--batchesInFlight', '1'];
    const slow = [...args, '--batchBytes', '16384', '--partitionSizeMB', '1'];
    await emptyDestination(destinationUri);
    const first = await startFerry(slow, { FERRY_CHECKPOINT_INTERVAL_MS: '20' }, logDir);
    const started = await first.post('start', {
      source: 'cluster0',
      destination: 'cluster1',
      includeNamespaces: [{ database: db }],
      sharding: {
        createSupportingIndexes: true,
        shardingEntries: [
          { database: db, collection: 'hashed', shardCollection: { key: [{ n: 'hashed' }] } },
          { database: db, collection: 'ranged', shardCollection: { key: [{ n: 1 }] } },
        ],
      },
    });
    assert.equal(started.status, 200, JSON.stringify(started.body));
    const mid = await first.waitForProgress((p) => (p.collectionCopy?.estimatedCopiedBytes ?? 0) > 0, 120_000);
    assert.ok(mid.collectionCopy.estimatedCopiedBytes < mid.collectionCopy.estimatedTotalBytes, 'killed during the copy');
    first.child.kill('SIGKILL');
    await first.exit;

    const second = await startFerry(args, {}, logDir);
    await second.waitForProgress((p) => p.canCommit === true, 180_000);
    const ranged = source.db(db).collection('ranged');
    for (let i = 0; i < 30; i++) await ranged.updateOne({ _id: i } as Document, { $set: { n: 3999 - i } });
    await source
      .db(db)
      .collection('hashed')
      .deleteMany({ _id: { $lt: 20 } } as Document);
    second.child.kill('SIGKILL');
    await second.exit;

    const third = await startFerry(args, { FERRY_COMMIT_RETRY_INTERVAL_MS: '200' }, logDir);
    try {
      await ranged.updateOne({ _id: 100 } as Document, { $set: { n: -1 } });
      await third.waitForProgress((p) => p.canCommit === true, 180_000);
      assert.equal((await third.post('commit', {})).status, 200);
      await third.waitForProgress((p) => p.state === 'COMMITTED', 120_000);
    } finally {
      assert.equal(await third.stop(), 0);
    }
    for (const coll of ['hashed', 'ranged']) {
      assert.deepEqual(await sortedDocs(destination, db, coll), await sortedDocs(source, db, coll), `${coll}: the same documents`);
      const counts = await countsByShard(db, coll);
      assert.equal(counts.size, 2, `${coll} on both shards`);
    }
    const keys = await destination
      .db('config')
      .collection('collections')
      .find({ _id: { $regex: `^${db}\\.` } } as Document)
      .toArray();
    assert.deepEqual(keys.map((k) => [String(k._id), k.key]).sort(), [
      [`${db}.hashed`, { n: 'hashed' }],
      [`${db}.ranged`, { n: 1 }],
    ]);
  });
});
