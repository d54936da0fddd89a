/**
 * TTL expiry. mongod's monitor runs every 60 s, so these tests run only against the test
 * cluster, started with a short `ttlIntervalMs`; they wait for monitor passes (counted in
 * serverStatus.metrics.ttl.passes), never for wall-clock time.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { MongoClient, type Db } from 'mongodb';
import { startCluster, type ClusterHandle } from '../cluster/index.js';

let cluster: ClusterHandle;
let client: MongoClient;
let db: Db;

before(async () => {
  cluster = await startCluster({ ttlIntervalMs: 50 });
  client = await MongoClient.connect(cluster.uri);
  db = client.db('ferry_ttl');
});

after(async () => {
  await client?.close();
  await cluster?.stop();
});

/** Resolves once the monitor has completed `count` more passes. */
async function monitorPasses(count: number): Promise<void> {
  const passes = async () => Number((await client.db('admin').command({ serverStatus: 1 })).metrics.ttl.passes);
  const target = (await passes()) + count;
  while ((await passes()) < target) await new Promise((resolve) => setImmediate(resolve));
}

async function ids(name: string): Promise<unknown[]> {
  return (
    await db
      .collection(name)
      .find({}, { sort: { _id: 1 } })
      .toArray()
  ).map((d) => d._id);
}

const past = new Date(Date.now() - 3600_000);
const future = new Date(Date.now() + 3600_000);

test('documents whose date is older than expireAfterSeconds are deleted; others stay', async () => {
  await db.collection('sessions').createIndex({ at: 1 }, { expireAfterSeconds: 60 });
  await db
    .collection('sessions')
    .insertMany([
      { _id: 'old', at: past },
      { _id: 'fresh', at: future },
      { _id: 'notADate', at: 'yesterday' },
      { _id: 'missing' },
      { _id: 'arrayWithOld', at: [future, past] },
      { _id: 'arrayAllFresh', at: [future] },
    ] as never[]);
  await monitorPasses(2);
  assert.deepEqual(await ids('sessions'), ['arrayAllFresh', 'fresh', 'missing', 'notADate']);
});

test('dates before 1970, at a dotted path, under a non-ASCII name, and with a partial filter', async () => {
  const cases: [string, Record<string, unknown>, object][] = [
    ['beforeEpoch', { at: 1 }, {}],
    ['dotted', { 's.at': 1 }, {}],
    ['accented', { été: 1 }, {}],
    ['partial', { at: 1 }, { partialFilterExpression: { kind: 'temp' } }],
  ];
  for (const [name, key, options] of cases) await db.collection(name).createIndex(key as never, { expireAfterSeconds: 60, ...options });
  await db.collection('beforeEpoch').insertMany([
    { _id: 1, at: new Date(-86_400_000) },
    { _id: 2, at: future },
  ] as never[]);
  await db.collection('dotted').insertMany([
    { _id: 1, s: { at: past } },
    { _id: 2, s: [{ at: future }, { at: past }] },
    { _id: 3, s: { at: future } },
    { _id: 4, at: past },
  ] as never[]);
  await db.collection('accented').insertMany([
    { _id: 1, été: past },
    { _id: 2, été: future },
  ] as never[]);
  await db.collection('partial').insertMany([
    { _id: 1, at: past, kind: 'temp' },
    { _id: 2, at: past, kind: 'kept' },
  ] as never[]);
  await monitorPasses(2);
  assert.deepEqual(await ids('beforeEpoch'), [2]);
  assert.deepEqual(await ids('dotted'), [3, 4]);
  assert.deepEqual(await ids('accented'), [2]);
  assert.deepEqual(await ids('partial'), [2]);
});

test('a hidden TTL index still expires documents', async () => {
  await db.collection('hiddenTtl').createIndex({ at: 1 }, { expireAfterSeconds: 0, hidden: true });
  await db.collection('hiddenTtl').insertMany([
    { _id: 1, at: past },
    { _id: 2, at: future },
  ] as never[]);
  await monitorPasses(2);
  assert.deepEqual(await ids('hiddenTtl'), [2]);
});

test('expireAfterSeconds 2147483647 never expires anything', async () => {
  await db.collection('forever').createIndex({ at: 1 }, { expireAfterSeconds: 2147483647 });
  await db.collection('forever').insertOne({ _id: 1, at: new Date(0) } as never);
  await monitorPasses(2);
  assert.deepEqual(await ids('forever'), [1]);
});

test('TTL deletes are ordinary deletes: change streams see them', async () => {
  await db.collection('watched').createIndex({ at: 1 }, { expireAfterSeconds: 0 });
  const stream = db.collection('watched').watch();
  await stream.tryNext(); // opens the stream before the write
  await db.collection('watched').insertOne({ _id: 'gone', at: past } as never);
  const seen: string[] = [];
  while (!seen.includes('delete')) {
    const change = await stream.next();
    seen.push(change.operationType);
    if (change.operationType === 'delete') assert.deepEqual(change.documentKey, { _id: 'gone' });
  }
  await stream.close();
  assert.deepEqual(seen, ['insert', 'delete']);
});
