/**
 * The oplog entries DDL writes on the test cluster, in mongod's shapes: change streams build
 * their rename, drop and modify events from them.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { MongoClient, type Db } from 'mongodb';
import { startCluster } from '../cluster/index.js';
import type { OplogEntry } from '../cluster/oplog.js';
import type { ClusterServer } from '../cluster/server.js';

let server: ClusterServer;
let stop: () => Promise<void>;
let client: MongoClient;
let db: Db;

before(async () => {
  const cluster = await startCluster({ noopIntervalMs: 0 });
  server = cluster.server;
  stop = cluster.stop;
  client = await MongoClient.connect(cluster.uri);
  db = client.db('oplogshapes');
});

after(async () => {
  await client.close();
  await stop();
});

/** The command entries written while `action` ran. */
async function commandEntries(action: () => Promise<unknown>): Promise<OplogEntry[]> {
  const oplog = server.instance.oplog;
  const from = oplog.newest()!.ts;
  await action();
  return oplog.read(from, true, 1000).filter((e) => e.op === 'c');
}

test('a rename within a database is one entry on the source database, with the source UUID', async () => {
  await db.collection('a').insertOne({});
  const uuid = server.instance.catalog.collection('oplogshapes', 'a')!.uuid;
  const [entry, ...rest] = await commandEntries(() =>
    client.db('admin').command({ renameCollection: 'oplogshapes.a', to: 'oplogshapes.b' }),
  );
  assert.equal(rest.length, 0);
  assert.equal(entry.ns, 'oplogshapes.$cmd');
  assert.equal(entry.ui?.toHexString(), uuid.toHexString());
  assert.deepEqual(entry.o, { renameCollection: 'oplogshapes.a', to: 'oplogshapes.b', stayTemp: false });
  assert.equal(entry.o2, undefined);
});

test('dropTarget names the dropped collection by UUID and counts its records in o2', async () => {
  await db.collection('c').insertOne({});
  await db.collection('d').insertMany([{}, {}]);
  const target = server.instance.catalog.collection('oplogshapes', 'd')!.uuid;
  const [entry] = await commandEntries(() =>
    client.db('admin').command({ renameCollection: 'oplogshapes.c', to: 'oplogshapes.d', dropTarget: true }),
  );
  assert.equal((entry.o as { dropTarget: { toHexString(): string } }).dropTarget.toHexString(), target.toHexString());
  assert.deepEqual(entry.o2, { numRecords: 2 });
});

test('drop records the number of documents in o2', async () => {
  await db.collection('e').insertMany([{}, {}, {}]);
  const [entry] = await commandEntries(() => db.command({ drop: 'e' }));
  assert.deepEqual(entry.o, { drop: 'e' });
  assert.deepEqual(entry.o2, { numRecords: 3 });
});

test('collMod records the changes in o and the previous options in o2', async () => {
  await db.createCollection('f', { validationLevel: 'moderate' });
  const collection = server.instance.catalog.collection('oplogshapes', 'f')!;
  collection.addIndex({ v: 2, key: { x: 1 }, name: 'x_1' });
  const [entry] = await commandEntries(() =>
    db.command({ collMod: 'f', index: { keyPattern: { x: 1 }, hidden: true }, validationAction: 'warn' }),
  );
  assert.deepEqual(entry.o, { collMod: 'f', validationAction: 'warn', index: { name: 'x_1', hidden: true } });
  const o2 = entry.o2 as { collectionOptions_old: Record<string, unknown>; indexOptions_old: Record<string, unknown> };
  assert.deepEqual(Object.keys(o2.collectionOptions_old), ['uuid', 'validationLevel']);
  assert.deepEqual(o2.indexOptions_old, { hidden: false });
});

test('a cross-database rename is a copy: create, inserts, rename, then drop of the source', async () => {
  await db.collection('g').insertMany([{ _id: 1 }, { _id: 2 }] as never[]);
  const oplog = server.instance.oplog;
  const from = oplog.newest()!.ts;
  await client.db('admin').command({ renameCollection: 'oplogshapes.g', to: 'oplogshapes2.h' });
  const entries = oplog.read(from, true, 1000);
  const tmp = (entries[0].o as { create: string }).create;
  assert.match(tmp, /^tmp[0-9A-Za-z]{5}\.renameCollection$/);
  assert.deepEqual(
    entries.map((e) => `${e.op} ${e.ns}`),
    ['c oplogshapes2.$cmd', `i oplogshapes2.${tmp}`, `i oplogshapes2.${tmp}`, 'c oplogshapes2.$cmd', 'c oplogshapes.$cmd'],
  );
  assert.deepEqual(entries[3].o, { renameCollection: `oplogshapes2.${tmp}`, to: 'oplogshapes2.h', stayTemp: false });
  assert.deepEqual(entries[4].o, { drop: 'g' });
  await client.db('oplogshapes2').dropDatabase();
});
