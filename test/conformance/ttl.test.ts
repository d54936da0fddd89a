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
