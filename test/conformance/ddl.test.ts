/**
 * DDL through the driver: renameCollection (within and across databases, dropTarget, mongod's
 * errors) and collMod (index options with their reply fields, the two-step unique conversion,
 * validation settings, capped limits, views).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { Db, Document } from 'mongodb';
import { conformance } from './harness.js';

async function infoOf(db: Db, name: string): Promise<Document | undefined> {
  const [info] = (await db.listCollections({ name }).toArray()) as Document[];
  return info;
}

async function indexNamed(db: Db, collection: string, name: string): Promise<Document | undefined> {
  return (await db.collection(collection).listIndexes().toArray()).find((i) => i.name === name);
}

conformance('ddl', (target) => {
  const admin = () => target().client.db('admin');

  test('renaming within a database keeps the collection (its UUID and documents)', async () => {
    const db = target().db;
    await db.collection('before').insertMany([{ _id: 1 }, { _id: 2 }] as never[]);
    const uuid = (await infoOf(db, 'before'))!.info.uuid;
    const reply = await admin().command({ renameCollection: `${db.databaseName}.before`, to: `${db.databaseName}.after` });
    assert.equal(reply.ok, 1);
    assert.equal(await infoOf(db, 'before'), undefined);
    const after = await infoOf(db, 'after');
    assert.ok(after);
    assert.equal(after.info.uuid.toString('hex'), uuid.toString('hex'), 'same UUID');
    assert.deepEqual(
      (await db.collection('after').find().sort({ _id: 1 }).toArray()).map((d) => d._id),
      [1, 2],
    );
  });

  test('renaming onto an existing collection needs dropTarget', async () => {
    const db = target().db;
    await db.collection('src').insertOne({ from: 'src' });
    await db.collection('dst').insertOne({ from: 'dst' });
    const names = { renameCollection: `${db.databaseName}.src`, to: `${db.databaseName}.dst` };
    await assert.rejects(admin().command(names), { code: 48, codeName: 'NamespaceExists', message: 'target namespace exists' });
    await admin().command({ ...names, dropTarget: true });
    const docs = await db
      .collection('dst')
      .find({}, { projection: { _id: 0 } })
      .toArray();
    assert.deepEqual(docs, [{ from: 'src' }]);
    assert.equal(await infoOf(db, 'src'), undefined);
  });

  test('renaming across databases copies documents and indexes under a new UUID', async () => {
    const db = target().db;
    const other = target().client.db(`${db.databaseName}_b`);
    try {
      await db.collection('moving').insertMany([
        { _id: 1, k: 'a' },
        { _id: 2, k: 'b' },
      ] as never[]);
      await db.collection('moving').createIndex({ k: 1 }, { unique: true });
      const uuid = (await infoOf(db, 'moving'))!.info.uuid;
      await admin().command({ renameCollection: `${db.databaseName}.moving`, to: `${other.databaseName}.moved` });
      assert.equal(await infoOf(db, 'moving'), undefined);
      const moved = await infoOf(other, 'moved');
      assert.ok(moved);
      assert.notEqual(moved.info.uuid.toString('hex'), uuid.toString('hex'), 'a copy has a new UUID');
      assert.deepEqual(
        (await other.collection('moved').find().sort({ _id: 1 }).toArray()).map((d) => d.k),
        ['a', 'b'],
      );
      const index = await indexNamed(other, 'moved', 'k_1');
      assert.equal(index?.unique, true, 'the unique index came along');
      await assert.rejects(other.collection('moved').insertOne({ k: 'a' }), { code: 11000 });
    } finally {
      await other.dropDatabase();
    }
  });

  test("renameCollection errors are mongod's", async () => {
    const db = target().db;
    const ns = (name: string) => `${db.databaseName}.${name}`;
    await assert.rejects(admin().command({ renameCollection: ns('missing'), to: ns('x') }), { code: 26, codeName: 'NamespaceNotFound' });
    await db.collection('exists').insertOne({});
    await assert.rejects(admin().command({ renameCollection: ns('exists'), to: ns('exists') }), { code: 20, codeName: 'IllegalOperation' });
    await assert.rejects(admin().command({ renameCollection: ns('exists'), to: ns('system.foo') }), { code: 20 });
    await assert.rejects(admin().command({ renameCollection: ns('exists'), to: 'nodot' }), { code: 73, codeName: 'InvalidNamespace' });
    await db.createCollection('aView', { viewOn: 'exists', pipeline: [] });
    await assert.rejects(admin().command({ renameCollection: ns('aView'), to: ns('y') }), {
      code: 166,
      codeName: 'CommandNotSupportedOnView',
    });
    await assert.rejects(admin().command({ renameCollection: ns('exists'), to: ns('aView') }), { code: 48 });
    await assert.rejects(db.command({ renameCollection: ns('exists'), to: ns('z') }), { code: 13, codeName: 'Unauthorized' });
  });

  test('collMod hides an index and reports old and new values', async () => {
    const db = target().db;
    await db.collection('hide').createIndex({ a: 1 });
    const reply = await db.command({ collMod: 'hide', index: { name: 'a_1', hidden: true } });
    assert.equal(reply.hidden_old, false);
    assert.equal(reply.hidden_new, true);
    assert.equal((await indexNamed(db, 'hide', 'a_1'))?.hidden, true);
    const byKey = await db.command({ collMod: 'hide', index: { keyPattern: { a: 1 }, hidden: false } });
    assert.equal(byKey.hidden_old, true);
    assert.equal(byKey.hidden_new, false);
    await assert.rejects(db.command({ collMod: 'hide', index: { name: '_id_', hidden: true } }), { code: 2 });
    await assert.rejects(db.command({ collMod: 'hide', index: { name: 'nope', hidden: true } }), { code: 27, codeName: 'IndexNotFound' });
    await assert.rejects(db.command({ collMod: 'hide', index: { name: 'a_1' } }), { code: 72, codeName: 'InvalidOptions' });
  });

  test("collMod changes a TTL index's expireAfterSeconds", async () => {
    const db = target().db;
    await db.collection('ttlMod').createIndex({ at: 1 }, { expireAfterSeconds: 60 });
    const reply = await db.command({ collMod: 'ttlMod', index: { keyPattern: { at: 1 }, expireAfterSeconds: 120 } });
    assert.equal(reply.expireAfterSeconds_old, 60);
    assert.equal(reply.expireAfterSeconds_new, 120);
    assert.equal((await indexNamed(db, 'ttlMod', 'at_1'))?.expireAfterSeconds, 120);
  });

  test('an index becomes unique in two steps, and not while duplicates exist', async () => {
    const db = target().db;
    const coll = db.collection('uniq');
    await coll.insertMany([
      { _id: 1, k: 1 },
      { _id: 2, k: 1 },
      { _id: 3, k: 2 },
    ] as never[]);
    await coll.createIndex({ k: 1 });
    await assert.rejects(db.command({ collMod: 'uniq', index: { keyPattern: { k: 1 }, unique: true } }), {
      code: 72,
      codeName: 'InvalidOptions',
    });
    const prepared = await db.command({ collMod: 'uniq', index: { keyPattern: { k: 1 }, prepareUnique: true } });
    assert.equal(prepared.prepareUnique_old, false);
    assert.equal(prepared.prepareUnique_new, true);
    await assert.rejects(coll.insertOne({ _id: 4, k: 2 } as never), { code: 11000 });
    await assert.rejects(
      db.command({ collMod: 'uniq', index: { keyPattern: { k: 1 }, unique: true } }),
      (e: { code: number; codeName: string; violations: { ids: number[] }[] }) => {
        assert.equal(e.code, 359);
        assert.equal(e.codeName, 'CannotConvertIndexToUnique');
        assert.deepEqual(
          e.violations.map((v) => [...v.ids].sort()),
          [[1, 2]],
        );
        return true;
      },
    );
    assert.equal((await indexNamed(db, 'uniq', 'k_1'))?.unique, undefined, 'a failed conversion changes nothing');
    await coll.deleteOne({ _id: 2 } as never);
    const converted = await db.command({ collMod: 'uniq', index: { keyPattern: { k: 1 }, unique: true } });
    assert.equal(converted.unique_new, true);
    assert.equal((await indexNamed(db, 'uniq', 'k_1'))?.unique, true);
  });

  test('collMod sets validation and capped limits; refuses what does not apply', async () => {
    const db = target().db;
    await db.createCollection('modded');
    await db.command({ collMod: 'modded', validator: { n: { $type: 'number' } }, validationLevel: 'moderate', validationAction: 'error' });
    const info = await infoOf(db, 'modded');
    assert.deepEqual(info!.options, { validator: { n: { $type: 'number' } }, validationLevel: 'moderate', validationAction: 'error' });
    await assert.rejects(db.collection('modded').insertOne({ n: 'text' }), { code: 121 });
    await assert.rejects(db.command({ collMod: 'modded', cappedSize: 4096 }), { code: 72, codeName: 'InvalidOptions' });
    await assert.rejects(db.command({ collMod: 'modded', frobnicate: 1 }), { code: 40415 });
    await assert.rejects(db.command({ collMod: 'absent', validator: {} }), { code: 26, codeName: 'NamespaceNotFound' });

    await db.createCollection('cappedMod', { capped: true, size: 100000, max: 100 });
    await db.command({ collMod: 'cappedMod', cappedSize: 200000, cappedMax: 50 });
    const capped = await infoOf(db, 'cappedMod');
    assert.equal(capped!.options.size, 200000);
    assert.equal(capped!.options.max, 50);
  });

  test('collMod redefines a view', async () => {
    const db = target().db;
    await db.collection('base').insertMany([
      { _id: 1, t: 'a' },
      { _id: 2, t: 'b' },
    ] as never[]);
    await db.createCollection('onlyA', { viewOn: 'base', pipeline: [{ $match: { t: 'a' } }] });
    await db.command({ collMod: 'onlyA', viewOn: 'base', pipeline: [{ $match: { t: 'b' } }] });
    const info = await infoOf(db, 'onlyA');
    assert.deepEqual(info!.options.pipeline, [{ $match: { t: 'b' } }]);
    await assert.rejects(db.command({ collMod: 'onlyA', validator: {} }), { code: 72 });
    await assert.rejects(db.command({ collMod: 'base', pipeline: [] }), { code: 72 });
  });
});
