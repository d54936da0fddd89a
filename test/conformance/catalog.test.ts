/**
 * Catalog commands through the driver: listDatabases/listCollections (internal databases
 * included, options as mongod stores them, views), create (re-create, option errors, collation
 * filled in), drop/dropDatabase, and the statistics commands' reply shapes.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Binary, type Db, type Document } from 'mongodb';
import { conformance } from './harness.js';

/** listCollections entries as plain documents. */
function collectionInfos(db: Db, filter: Document = {}): Promise<Document[]> {
  return db.listCollections(filter).toArray() as Promise<Document[]>;
}

conformance('catalog', (target) => {
  test('listDatabases includes the internal databases of a replica set member', async () => {
    const admin = target().client.db('admin');
    const db = target().db;
    await db.collection('present').insertOne({ a: 1 });
    const reply = await admin.command({ listDatabases: 1 });
    const names = reply.databases.map((d: { name: string }) => d.name);
    for (const name of ['admin', 'config', 'local', db.databaseName]) assert.ok(names.includes(name), `${name} listed`);
    const mine = reply.databases.find((d: { name: string }) => d.name === db.databaseName);
    assert.equal(typeof mine.sizeOnDisk, 'number');
    assert.equal(mine.empty, false);
    assert.equal(typeof reply.totalSize, 'number');
    const nameOnly = await admin.command({ listDatabases: 1, nameOnly: true });
    assert.deepEqual(Object.keys(nameOnly.databases[0]), ['name']);
    const filtered = await admin.command({ listDatabases: 1, filter: { name: db.databaseName } });
    assert.deepEqual(
      filtered.databases.map((d: { name: string }) => d.name),
      [db.databaseName],
    );
  });

  test('local holds the oplog (capped) and admin the server configuration collection', async () => {
    const local = await collectionInfos(target().client.db('local'));
    const oplog = local.find((c) => c.name === 'oplog.rs');
    assert.ok(oplog, 'local.oplog.rs listed');
    assert.equal(oplog.options.capped, true);
    assert.equal(typeof oplog.options.size, 'number');
    assert.ok(local.some((c) => c.name === 'startup_log'));
    assert.ok(local.some((c) => c.name === 'system.replset'));
    const admin = await target().client.db('admin').listCollections({}, { nameOnly: true }).toArray();
    assert.ok(admin.some((c) => c.name === 'system.version'));
  });

  test('listCollections shows options as stored, the uuid and the _id index', async () => {
    const db = target().db;
    await db.createCollection('withOptions', { capped: true, size: 8192, max: 10, validator: { a: { $exists: true } } });
    const [info] = await collectionInfos(db, { name: 'withOptions' });
    assert.equal(info.type, 'collection');
    assert.deepEqual(info.options, { capped: true, size: 8192, max: 10, validator: { a: { $exists: true } } });
    assert.equal(info.info.readOnly, false);
    assert.ok(info.info.uuid instanceof Binary && info.info.uuid.sub_type === 4, 'info.uuid is a UUID');
    assert.deepEqual(info.idIndex, { v: 2, key: { _id: 1 }, name: '_id_' });
    const plain = await db.createCollection('plain').then(() => collectionInfos(db, { name: 'plain' }));
    assert.deepEqual(plain[0].options, {});
  });

  test('a collection collation is listed with every ICU attribute filled in', async () => {
    const db = target().db;
    await db.createCollection('french', { collation: { locale: 'fr', strength: 2 } });
    const [info] = await collectionInfos(db, { name: 'french' });
    const collation = info.options.collation;
    assert.equal(collation.locale, 'fr');
    assert.equal(collation.strength, 2);
    for (const [field, type] of Object.entries({
      caseLevel: 'boolean',
      caseFirst: 'string',
      numericOrdering: 'boolean',
      alternate: 'string',
      maxVariable: 'string',
      normalization: 'boolean',
      backwards: 'boolean',
      version: 'string',
    })) {
      assert.equal(typeof collation[field], type, `collation.${field}`);
    }
    assert.equal(collation.alternate, 'non-ignorable');
    assert.equal(collation.maxVariable, 'punct');
    assert.deepEqual(info.idIndex.collation, collation, 'the _id index inherits the collation');
    await assert.rejects(db.createCollection('badLocale', { collation: { locale: 'xx_NOPE' } }), { code: 2, codeName: 'BadValue' });
    await db.createCollection('simple', { collation: { locale: 'simple' } });
    const [simple] = await collectionInfos(db, { name: 'simple' });
    assert.equal(simple.options.collation, undefined, 'the simple collation is no collation');
  });

  test('create again with the same options succeeds, with other options fails with NamespaceExists', async () => {
    const db = target().db;
    await db.command({ create: 'twice', capped: true, size: 4096 });
    assert.equal((await db.command({ create: 'twice', capped: true, size: 4096 })).ok, 1);
    await assert.rejects(db.command({ create: 'twice' }), (e: { code: number; codeName: string; message: string }) => {
      assert.equal(e.code, 48);
      assert.equal(e.codeName, 'NamespaceExists');
      assert.match(e.message, /already exists, but with different options/);
      return true;
    });
  });

  test('create checks capped options and refuses unknown ones', async () => {
    const db = target().db;
    await assert.rejects(db.command({ create: 'noSize', capped: true }), { code: 72, codeName: 'InvalidOptions' });
    await assert.rejects(db.command({ create: 'notCapped', size: 1000 }), { code: 72, codeName: 'InvalidOptions' });
    await assert.rejects(db.command({ create: 'negative', capped: true, size: -1 }), { code: 2 });
    await assert.rejects(db.command({ create: 'unknown', frobnicate: true }), {
      code: 40415,
      message: "BSON field 'create.frobnicate' is an unknown field.",
    });
    await assert.rejects(db.command({ create: 'pipelineOnly', pipeline: [] }), { code: 72 });
    await assert.rejects(db.command({ create: 'badLevel', validationLevel: 'sometimes' }), { code: 2 });
    await assert.rejects(db.command({ create: 'system.mine' }), { code: 73, codeName: 'InvalidNamespace' });
    const names = (await db.listCollections({}, { nameOnly: true }).toArray()).map((c) => c.name);
    for (const name of ['noSize', 'notCapped', 'negative', 'unknown', 'pipelineOnly', 'badLevel'])
      assert.ok(!names.includes(name), `${name} not created`);
  });

  test('views are listed with their definition and refuse writes', async () => {
    const db = target().db;
    await db.collection('source').insertMany([
      { _id: 1, kept: true },
      { _id: 2, kept: false },
    ] as never[]);
    await db.createCollection('kept', { viewOn: 'source', pipeline: [{ $match: { kept: true } }] });
    const all = await collectionInfos(db);
    const view = all.find((c) => c.name === 'kept');
    assert.ok(view);
    assert.equal(view.type, 'view');
    assert.deepEqual(view.options, { viewOn: 'source', pipeline: [{ $match: { kept: true } }] });
    assert.deepEqual(view.info, { readOnly: true });
    assert.ok(
      all.some((c) => c.name === 'system.views' && c.type === 'collection'),
      'system.views is listed',
    );
    await assert.rejects(db.collection('kept').insertOne({ _id: 3 } as never), { code: 166, codeName: 'CommandNotSupportedOnView' });
    await assert.rejects(db.command({ create: 'loop', viewOn: 'loop', pipeline: [] }), { code: 5, codeName: 'GraphContainsCycle' });
    assert.equal((await db.command({ drop: 'kept' })).ok, 1);
    assert.ok(!(await db.listCollections({ name: 'kept' }).toArray()).length, 'view dropped');
    assert.equal((await db.collection('source').find().toArray()).length, 2, 'dropping a view leaves its source');
  });

  test('drop reports the indexes it removed; dropping a missing collection succeeds', async () => {
    const db = target().db;
    await db.collection('toDrop').insertOne({ a: 1 });
    const reply = await db.command({ drop: 'toDrop' });
    assert.equal(reply.nIndexesWas, 1);
    assert.equal(reply.ns, `${db.databaseName}.toDrop`);
    assert.equal((await db.command({ drop: 'neverExisted' })).ok, 1);
  });

  test('the internal databases cannot be dropped', async () => {
    // Through runCommand: the driver's dropDatabase() rewrites code 20 into a retryable-writes message.
    await assert.rejects(target().client.db('admin').command({ dropDatabase: 1 }), { code: 20, codeName: 'IllegalOperation' });
    await assert.rejects(target().client.db('local').command({ dropDatabase: 1 }), { code: 20, codeName: 'IllegalOperation' });
  });

  test('collStats and dbStats report mongod field names', async () => {
    const db = target().db;
    const docs = Array.from({ length: 10 }, (_, i) => ({ _id: i, pad: 'x'.repeat(100) }));
    await db.collection('stats').insertMany(docs as never[]);
    const stats = await db.command({ collStats: 'stats' });
    assert.equal(stats.ns, `${db.databaseName}.stats`);
    assert.equal(stats.count, 10);
    assert.ok(stats.size >= 10 * 100, 'size counts the documents');
    assert.equal(stats.avgObjSize, Math.floor(stats.size / 10));
    assert.equal(stats.capped, false);
    assert.equal(stats.nindexes, 1);
    assert.equal(typeof stats.indexSizes._id_, 'number');
    assert.equal(typeof stats.totalIndexSize, 'number');
    assert.equal(typeof stats.storageSize, 'number');
    assert.equal(stats.scaleFactor, 1);
    const scaled = await db.command({ collStats: 'stats', scale: 1024 });
    assert.equal(scaled.scaleFactor, 1024);
    assert.equal(scaled.size, Math.floor(stats.size / 1024));

    await db.createCollection('statsView', { viewOn: 'stats', pipeline: [] });
    const dbStats = await db.command({ dbStats: 1 });
    assert.equal(dbStats.db, db.databaseName);
    assert.ok(dbStats.collections >= 1);
    assert.ok(dbStats.views >= 1);
    assert.ok(dbStats.objects >= 10);
    for (const field of [
      'avgObjSize',
      'dataSize',
      'storageSize',
      'indexes',
      'indexSize',
      'totalSize',
      'scaleFactor',
      'fsUsedSize',
      'fsTotalSize',
    ]) {
      assert.equal(typeof dbStats[field], 'number', `dbStats.${field}`);
    }
  });

  test('serverStatus describes the process, connections, counters and replication', async () => {
    const admin = target().client.db('admin');
    const before = await admin.command({ serverStatus: 1 });
    await target()
      .db.collection('counted')
      .insertMany([{ a: 1 }, { a: 2 }, { a: 3 }]);
    const status = await admin.command({ serverStatus: 1 });
    assert.equal(status.process, 'mongod');
    assert.equal(typeof status.host, 'string');
    assert.equal(typeof status.version, 'string');
    assert.ok(Number(status.pid) > 0);
    assert.ok(status.uptime >= 0);
    assert.ok(Number(status.uptimeMillis) >= 0);
    assert.ok(status.localTime instanceof Date);
    assert.ok(status.connections.current >= 1);
    assert.ok(status.connections.totalCreated >= status.connections.current);
    assert.equal(typeof status.connections.available, 'number');
    assert.ok(Number(status.opcounters.insert) - Number(before.opcounters.insert) >= 3, 'inserts are counted per document');
    assert.equal(typeof status.mem.resident, 'number');
    assert.equal(typeof status.mem.virtual, 'number');
    assert.equal(typeof status.repl.setName, 'string');
    assert.equal(status.repl.isWritablePrimary, true);
    assert.equal(typeof status.storageEngine.name, 'string');
    assert.equal(status.oplog, undefined, 'the oplog section is shown only on request');
    const withOplog = await admin.command({ serverStatus: 1, oplog: 1, repl: 0 });
    assert.ok(withOplog.oplog.latestOptime, 'oplog.latestOptime');
    assert.ok(withOplog.oplog.earliestOptime, 'oplog.earliestOptime');
    assert.equal(withOplog.repl, undefined, 'a section can be left out');
  });

  test('serverStatus metrics.commands counts each command and its failures by name', async () => {
    const admin = target().client.db('admin');
    const commands = async () => (await admin.command({ serverStatus: 1 })).metrics.commands;
    const before = await commands();
    for (let i = 0; i < 3; i++) await target().db.command({ ping: 1 });
    await assert.rejects(target().db.command({ collMod: 'never_created_for_metrics' }), { codeName: 'NamespaceNotFound' });
    await assert.rejects(target().db.command({ noSuchCommandFerry: 1 }), { codeName: 'CommandNotFound' });
    const after = await commands();
    const total = (m: typeof before, name: string) => Number(m[name]?.total ?? 0);
    const failed = (m: typeof before, name: string) => Number(m[name]?.failed ?? 0);
    assert.ok(total(after, 'ping') - total(before, 'ping') >= 3, 'each request is counted');
    assert.equal(total(after, 'collMod') - total(before, 'collMod'), 1);
    assert.equal(failed(after, 'collMod') - failed(before, 'collMod'), 1, 'a command that answers with an error is counted as failed');
    assert.equal(failed(after, 'ping') - failed(before, 'ping'), 0);
    assert.ok(Number(after['<UNKNOWN>']) - Number(before['<UNKNOWN>']) >= 1, 'a request naming no command counts as <UNKNOWN>');
  });

  test('getParameter answers the parameters it knows', async () => {
    const admin = target().client.db('admin');
    const fcv = await admin.command({ getParameter: 1, featureCompatibilityVersion: 1, comment: 'generic arguments are not parameters' });
    assert.match(fcv.featureCompatibilityVersion.version, /^\d+\.\d+$/);
    const some = await admin.command({ getParameter: 1, featureCompatibilityVersion: 1, noSuchParameterFerry: 1 });
    assert.equal(some.noSuchParameterFerry, undefined, 'unknown names are ignored');
    await assert.rejects(admin.command({ getParameter: 1, noSuchParameterFerry: 1 }), { code: 72, codeName: 'InvalidOptions' });
    await assert.rejects(target().db.command({ getParameter: 1, featureCompatibilityVersion: 1 }), { code: 13 });
  });
});
