/**
 * Clustered collections (mongod 5.3+, shapes as 7.0): `create` with `clusteredIndex` (and a
 * collection-level `expireAfterSeconds`), how listCollections and listIndexes show them, natural
 * order being `_id` order, `collMod` of the TTL (seconds or 'off'), mongod's errors, the create
 * event a change stream reports, and the TTL deleting documents whose `_id` date has expired
 * (that last one on the test cluster only: mongod's TTL monitor runs every 60 s).
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { Long, MongoClient, type Document } from 'mongodb';
import { conformance } from './harness.js';
import { openStream, readEvents } from './change-stream-helpers.js';
import { startCluster, type ClusterHandle } from '../cluster/index.js';

const CLUSTERED = { key: { _id: 1 }, unique: true };

conformance('clustered collections', (target) => {
  const db = () => target().db;
  const infoOf = async (name: string): Promise<Document> => ((await db().listCollections({ name }).toArray()) as Document[])[0];

  test('listCollections shows the clustered index and TTL and no idIndex; listIndexes the clustered index', async () => {
    await db().createCollection('cl_listed', { clusteredIndex: CLUSTERED, expireAfterSeconds: 3600 } as never);
    const info = await infoOf('cl_listed');
    assert.equal(info.type, 'collection');
    assert.deepEqual(info.options, {
      clusteredIndex: { v: 2, key: { _id: 1 }, name: '_id_', unique: true },
      expireAfterSeconds: 3600,
    });
    assert.equal(info.idIndex, undefined);
    const indexes = await db().collection('cl_listed').listIndexes().toArray();
    assert.deepEqual(indexes, [{ v: 2, key: { _id: 1 }, name: '_id_', unique: true, expireAfterSeconds: 3600, clustered: true }]);
    // A named clustered index keeps its name; secondary indexes list after it.
    await db().createCollection('cl_named', { clusteredIndex: { ...CLUSTERED, name: 'byId' } } as never);
    await db().collection('cl_named').createIndex({ a: 1 });
    assert.deepEqual(
      (await db().collection('cl_named').listIndexes().toArray()).map((i) => [i.name, i.clustered ?? false]),
      [
        ['byId', true],
        ['a_1', false],
      ],
    );
  });

  test('documents come back in _id order without a sort; _id stays unique', async () => {
    await db().createCollection('cl_order', { clusteredIndex: CLUSTERED } as never);
    const coll = db().collection<{ _id: number; v: string }>('cl_order');
    await coll.insertMany([
      { _id: 3, v: 'c' },
      { _id: 1, v: 'a' },
      { _id: 2, v: 'b' },
    ]);
    assert.deepEqual(
      (await coll.find().toArray()).map((d) => d._id),
      [1, 2, 3],
    );
    assert.deepEqual(
      (await coll.find({}, { hint: { $natural: -1 } }).toArray()).map((d) => d._id),
      [3, 2, 1],
    );
    await assert.rejects(coll.insertOne({ _id: 2, v: 'again' }), { code: 11000 });
    assert.equal((await coll.findOne({ _id: 2 }))?.v, 'b');
  });

  test('create checks the clustered index specification as mongod does', async () => {
    await assert.rejects(db().command({ create: 'cl_bad1', clusteredIndex: { key: { _id: 1 }, unique: false } }), { code: 5979700 });
    await assert.rejects(db().command({ create: 'cl_bad2', clusteredIndex: { key: { a: 1 }, unique: true } }), {
      code: 197,
      codeName: 'InvalidIndexSpecificationOption',
    });
    await assert.rejects(db().command({ create: 'cl_bad3', clusteredIndex: CLUSTERED, size: 1000 }), { code: 6049200 });
    await assert.rejects(db().command({ create: 'cl_bad4', expireAfterSeconds: 10 }), { code: 72, codeName: 'InvalidOptions' });
    await assert.rejects(db().command({ create: 'cl_bad5', clusteredIndex: CLUSTERED, expireAfterSeconds: -1 }), { code: 72 });
    const names = (await db().listCollections({}, { nameOnly: true }).toArray()).map((c) => c.name);
    assert.ok(!names.some((n) => n.startsWith('cl_bad')), 'nothing was created');
    // The same request again succeeds (7.0+); other options are NamespaceExists.
    await db().command({ create: 'cl_again', clusteredIndex: CLUSTERED });
    await db().command({ create: 'cl_again', clusteredIndex: CLUSTERED });
    await assert.rejects(db().command({ create: 'cl_again', clusteredIndex: CLUSTERED, expireAfterSeconds: 5 }), { code: 48 });
  });

  test("collMod sets, changes and turns off a clustered collection's expireAfterSeconds", async () => {
    await db().createCollection('cl_ttl', { clusteredIndex: CLUSTERED } as never);
    await db().command({ collMod: 'cl_ttl', expireAfterSeconds: 10 });
    assert.deepEqual((await infoOf('cl_ttl')).options.expireAfterSeconds, 10);
    await db().command({ collMod: 'cl_ttl', expireAfterSeconds: 0 });
    assert.deepEqual((await infoOf('cl_ttl')).options.expireAfterSeconds, 0);
    await db().command({ collMod: 'cl_ttl', expireAfterSeconds: 'off' });
    assert.equal((await infoOf('cl_ttl')).options.expireAfterSeconds, undefined);
    await assert.rejects(db().command({ collMod: 'cl_ttl', expireAfterSeconds: '10' }), { code: 72, codeName: 'InvalidOptions' });
    await assert.rejects(db().command({ collMod: 'cl_ttl', expireAfterSeconds: {} }), { code: 14, codeName: 'TypeMismatch' });
    await assert.rejects(db().command({ collMod: 'cl_ttl', expireAfterSeconds: -10 }), { code: 72 });
    await db().createCollection('cl_plain');
    await assert.rejects(db().command({ collMod: 'cl_plain', expireAfterSeconds: 10 }), { code: 72 });
  });

  test('a change stream reports the create with the clustered index and no idIndex', async () => {
    const stream = await openStream(db(), undefined, { showExpandedEvents: true });
    await db().command({ create: 'cl_events', clusteredIndex: CLUSTERED, expireAfterSeconds: new Long(60) });
    await db()
      .collection('cl_events')
      .insertOne({ _id: 'x' } as never);
    const events = await readEvents(stream, 2);
    const created = events.find((e) => e.operationType === 'create' && e.ns.coll === 'cl_events')!;
    assert.deepEqual(created.operationDescription, {
      clusteredIndex: { v: 2, key: { _id: 1 }, name: '_id_', unique: true },
      expireAfterSeconds: 60,
    });
    assert.ok(events.some((e) => e.operationType === 'insert' && e.documentKey._id === 'x'));
  });
});

describe('clustered collection TTL [test cluster]', () => {
  let cluster: ClusterHandle;
  let client: MongoClient;
  before(async () => {
    cluster = await startCluster({ ttlIntervalMs: 50 });
    client = await MongoClient.connect(cluster.uri);
  });
  after(async () => {
    await client?.close();
    await cluster?.stop();
  });

  /** Resolves once the TTL monitor has completed `count` more passes. */
  async function monitorPasses(count: number): Promise<void> {
    const passes = async () => Number((await client.db('admin').command({ serverStatus: 1 })).metrics.ttl.passes);
    const target = (await passes()) + count;
    while ((await passes()) < target) await new Promise((resolve) => setImmediate(resolve));
  }

  test('documents whose _id is a date older than expireAfterSeconds are deleted; others stay', async () => {
    const db = client.db('ferry_clustered_ttl');
    await db.createCollection('events', { clusteredIndex: CLUSTERED, expireAfterSeconds: 60 } as never);
    const past = new Date(Date.now() - 3600_000);
    const future = new Date(Date.now() + 3600_000);
    await db.collection('events').insertMany([{ _id: past }, { _id: future }, { _id: 'not a date' }, { _id: 7 }] as never[]);
    await monitorPasses(2);
    const left = (await db.collection('events').find().toArray()).map((d) => d._id);
    assert.deepEqual(left, [7, 'not a date', future]);
  });

  test('a time-series collection expires whole buckets once all their measurements are older', async () => {
    const db = client.db('ferry_clustered_ttl');
    await db.createCollection('readings', { timeseries: { timeField: 't', metaField: 'm' }, expireAfterSeconds: 3600 });
    const old = new Date(Date.now() - 3 * 3600_000);
    const recent = new Date(Date.now() - 60_000);
    await db.collection('readings').insertMany([
      { t: old, m: 'a', v: 1 },
      { t: new Date(old.getTime() + 1000), m: 'a', v: 2 },
      { t: recent, m: 'a', v: 3 },
    ]);
    await monitorPasses(2);
    assert.deepEqual(
      (await db.collection('readings').find().toArray()).map((d) => d.v),
      [3],
    );
  });
});
