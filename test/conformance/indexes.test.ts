/**
 * Indexes as mongod manages them: createIndexes reply shapes and conflicts, the stored shape
 * listIndexes shows (special index types included), dropIndexes forms and errors, and unique
 * enforcement on inserts, updates and index builds (multikey, compound, sparse, partial).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Double, Int32 } from 'mongodb';
import { conformance } from './harness.js';

conformance('indexes', (target) => {
  const db = () => target().db;

  test('createIndexes replies with index counts and notes indexes that already exist', async () => {
    const created = await db().command({ createIndexes: 'ix_reply', indexes: [{ key: { a: 1, b: -1 }, name: 'a_1_b_-1', unique: true }] });
    assert.equal(created.numIndexesBefore, 1);
    assert.equal(created.numIndexesAfter, 2);
    assert.equal(created.createdCollectionAutomatically, true);
    const again = await db().command({ createIndexes: 'ix_reply', indexes: [{ key: { a: 1, b: -1 }, name: 'a_1_b_-1', unique: true }] });
    assert.equal(again.numIndexesBefore, 2);
    assert.equal(again.numIndexesAfter, 2);
    assert.equal(again.note, 'all indexes already exist');
    const more = await db().command({
      createIndexes: 'ix_reply',
      indexes: [
        { key: { a: 1, b: -1 }, name: 'a_1_b_-1', unique: true },
        { key: { c: 1 }, name: 'c_1' },
      ],
    });
    assert.equal(more.numIndexesAfter, 3);
    assert.equal(more.createdCollectionAutomatically, false);
  });

  test('listIndexes shows each specification as mongod stores it', async () => {
    const coll = db().collection('ix_list');
    await coll.createIndex({ a: 1, b: -1 }, { unique: true });
    await coll.createIndex({ h: 'hashed' });
    await coll.createIndex({ t: 'text' });
    await coll.createIndex({ loc: '2dsphere' });
    await coll.createIndex({ at: 1 }, { expireAfterSeconds: 3600, hidden: true });
    await coll.createIndex({ s: 1 }, { name: 's_fr', collation: { locale: 'fr' } });
    const indexes = await coll.listIndexes().toArray();
    const byName = new Map(indexes.map((i) => [i.name, i]));
    assert.deepEqual(indexes[0], { v: 2, key: { _id: 1 }, name: '_id_' });
    assert.deepEqual(byName.get('a_1_b_-1'), { v: 2, key: { a: 1, b: -1 }, name: 'a_1_b_-1', unique: true });
    assert.deepEqual(Object.keys(byName.get('a_1_b_-1')!), ['v', 'key', 'name', 'unique']);
    assert.deepEqual(byName.get('h_hashed')?.key, { h: 'hashed' });
    const text = byName.get('t_text')!;
    assert.deepEqual(text.key, { _fts: 'text', _ftsx: 1 });
    assert.deepEqual(text.weights, { t: 1 });
    assert.equal(text.default_language, 'english');
    assert.equal(text.language_override, 'language');
    assert.equal(text.textIndexVersion, 3);
    assert.equal(byName.get('loc_2dsphere')?.['2dsphereIndexVersion'], 3);
    assert.equal(byName.get('at_1')?.expireAfterSeconds, 3600);
    assert.equal(byName.get('at_1')?.hidden, true);
    const fr = byName.get('s_fr')!;
    assert.equal(fr.collation.locale, 'fr');
    assert.equal(fr.collation.strength, 3);
    await assert.rejects(db().command({ listIndexes: 'ix_missing' }), { code: 26, codeName: 'NamespaceNotFound' });
  });

  test('conflicting and invalid specifications fail with mongod codes', async () => {
    await db().collection('ix_conflicts').createIndex({ a: 1 }, { name: 'a_1' });
    const create = (spec: object) => db().command({ createIndexes: 'ix_conflicts', indexes: [spec] });
    await assert.rejects(create({ key: { b: 1 }, name: 'a_1' }), { code: 86, codeName: 'IndexKeySpecsConflict' });
    await assert.rejects(create({ key: { a: 1 }, name: 'other' }), { code: 85, codeName: 'IndexOptionsConflict' });
    // `unique` is part of the index signature (5.0+): the same name with another signature is 86.
    await assert.rejects(create({ key: { a: 1 }, name: 'a_1', unique: true }), { code: 86, codeName: 'IndexKeySpecsConflict' });
    await assert.rejects(create({ key: { a: 1 }, name: 'a_1', expireAfterSeconds: 10 }), { code: 85, codeName: 'IndexOptionsConflict' });
    await assert.rejects(create({ key: { a: 0 }, name: 'zero' }), { code: 67, codeName: 'CannotCreateIndex' });
    await assert.rejects(create({ key: { a: 'nope' }, name: 'plugin' }), { code: 67, codeName: 'CannotCreateIndex' });
    await assert.rejects(create({ key: {}, name: 'empty' }), { code: 67, codeName: 'CannotCreateIndex' });
    await assert.rejects(create({ key: { a: 1 }, name: 'x', bogus: true }), { code: 197, codeName: 'InvalidIndexSpecificationOption' });
    await assert.rejects(create({ key: { a: 1, b: 1 }, name: 'ab', sparse: true, partialFilterExpression: { a: 1 } }), { code: 67 });
    assert.equal((await db().collection('ix_conflicts').listIndexes().toArray()).length, 2);
  });

  test('dropIndexes by name, key pattern, list and *', async () => {
    const coll = db().collection('ix_drop');
    for (const key of ['a', 'b', 'c', 'd']) await coll.createIndex({ [key]: 1 });
    assert.deepEqual(
      await db()
        .command({ dropIndexes: 'ix_drop', index: 'a_1' })
        .then((r) => r.nIndexesWas),
      5,
    );
    assert.equal((await db().command({ dropIndexes: 'ix_drop', index: { b: 1 } })).nIndexesWas, 4);
    await assert.rejects(db().command({ dropIndexes: 'ix_drop', index: '_id_' }), { code: 72, codeName: 'InvalidOptions' });
    await assert.rejects(db().command({ dropIndexes: 'ix_drop', index: 'nope' }), { code: 27, codeName: 'IndexNotFound' });
    await assert.rejects(db().command({ dropIndexes: 'ix_missing', index: '*' }), { code: 26, codeName: 'NamespaceNotFound' });
    const all = await db().command({ dropIndexes: 'ix_drop', index: '*' });
    assert.equal(all.nIndexesWas, 3);
    assert.equal(typeof all.msg, 'string');
    assert.deepEqual(
      (await coll.listIndexes().toArray()).map((i) => i.name),
      ['_id_'],
    );
  });

  test('unique indexes refuse duplicates on insert and update with keyPattern and keyValue', async () => {
    const coll = db().collection('ix_unique');
    await coll.createIndex({ email: 1 }, { unique: true });
    await coll.insertMany([
      { _id: 1, email: 'a@x' },
      { _id: 2, email: 'b@x' },
    ] as never[]);
    await assert.rejects(
      coll.insertOne({ _id: 3 as never, email: 'a@x' }),
      (e: { code: number; keyPattern: unknown; keyValue: unknown }) => {
        assert.equal(e.code, 11000);
        assert.deepEqual(e.keyPattern, { email: 1 });
        assert.deepEqual(e.keyValue, { email: 'a@x' });
        return true;
      },
    );
    await assert.rejects(coll.updateOne({ _id: 2 as never }, { $set: { email: 'a@x' } }), { code: 11000 });
    assert.equal((await coll.findOne({ _id: 2 as never }))?.email, 'b@x');
    // Missing fields index as null: a second document without the field collides too.
    await coll.insertOne({ _id: 4 as never });
    await assert.rejects(coll.insertOne({ _id: 5 as never }), { code: 11000 });
  });

  test('unique keys compare numbers by value and arrays element by element; compound keys as tuples', async () => {
    const coll = db().collection('ix_unique_kinds');
    await coll.createIndex({ n: 1 }, { unique: true });
    await coll.createIndex({ tags: 1 }, { unique: true });
    await coll.createIndex({ a: 1, b: 1 }, { unique: true });
    await coll.insertOne({ _id: 1 as never, n: new Int32(1), tags: ['x', 'x'], a: 1, b: 1 });
    await assert.rejects(coll.insertOne({ _id: 2 as never, n: new Double(1) }), { code: 11000 });
    await assert.rejects(coll.insertOne({ _id: 3 as never, n: 3, tags: ['y', 'x'] }), { code: 11000 });
    await coll.insertOne({ _id: 4 as never, n: 4, tags: ['z'], a: 1, b: 2 });
    await assert.rejects(coll.insertOne({ _id: 5 as never, n: 5, tags: ['w'], a: 1, b: 2 }), { code: 11000 });
  });

  test('sparse and partial unique indexes only constrain the documents they hold', async () => {
    const sparse = db().collection('ix_sparse');
    await sparse.createIndex({ code: 1 }, { unique: true, sparse: true });
    await sparse.insertMany([{ _id: 1 }, { _id: 2 }, { _id: 3, code: 'a' }] as never[]);
    await assert.rejects(sparse.insertOne({ _id: 4 as never, code: 'a' }), { code: 11000 });
    const partial = db().collection('ix_partial');
    await partial.createIndex({ sku: 1 }, { unique: true, partialFilterExpression: { active: true } });
    await partial.insertMany([
      { sku: 'p', active: false },
      { sku: 'p', active: false },
      { sku: 'p', active: true },
    ]);
    await assert.rejects(partial.insertOne({ sku: 'p', active: true }), { code: 11000 });
  });

  test('a unique index cannot be built over duplicates; compound keys cannot index parallel arrays', async () => {
    const coll = db().collection('ix_build');
    await coll.insertMany([{ a: 1 }, { a: 1.0 }, { p: [1, 2], q: [3, 4] }]);
    await assert.rejects(coll.createIndex({ a: 1 }, { unique: true }), { code: 11000 });
    await assert.rejects(coll.createIndex({ p: 1, q: 1 }), { code: 171, codeName: 'CannotIndexParallelArrays' });
    assert.deepEqual(
      (await coll.listIndexes().toArray()).map((i) => i.name),
      ['_id_'],
    );
    // Arrays met inside embedded documents count too.
    await db()
      .collection('ix_build_nested')
      .insertMany([
        { s: { t: 1 }, u: [1] },
        { s: { t: [1, 2] }, u: [3, 4] },
      ]);
    await assert.rejects(db().collection('ix_build_nested').createIndex({ 's.t': 1, u: 1 }), { code: 171 });
    await coll.createIndex({ p: 1, r: 1 });
    await assert.rejects(coll.insertOne({ p: [1], r: [2, 3] }), { code: 171 });
  });
});
