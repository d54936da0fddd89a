/**
 * Index signatures as mongod (5.0+) defines them: the key pattern with `unique`, `sparse`, the
 * partial filter and the collation. Indexes on the same keys that differ in any of these coexist
 * under different names; the same name with another signature is IndexKeySpecsConflict (86); the
 * same signature with other options, or under another name, IndexOptionsConflict (85). Also the
 * default collation mongod shows on `_id_` in listIndexes, and the validation settings collMod
 * fills in when it sets a validator.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { Document } from 'mongodb';
import { conformance } from './harness.js';

conformance('index signatures', (target) => {
  const db = () => target().db;
  const create = (coll: string, spec: object) => db().command({ createIndexes: coll, indexes: [spec] });
  const infoOf = async (name: string): Promise<Document> => ((await db().listCollections({ name }).toArray()) as Document[])[0];

  test('indexes on the same keys differing in unique, sparse, partial filter or collation coexist', async () => {
    const coll = db().collection('sig_coexist');
    await coll.insertMany([{ a: 1 }, { a: 2 }, { b: 1 }]);
    await create('sig_coexist', { key: { a: 1 }, name: 'plain' });
    await create('sig_coexist', { key: { a: 1 }, name: 'uniq', unique: true });
    await create('sig_coexist', { key: { a: 1 }, name: 'sparse', sparse: true });
    await create('sig_coexist', { key: { a: 1 }, name: 'partial', partialFilterExpression: { a: { $gt: 1 } } });
    await create('sig_coexist', { key: { a: 1 }, name: 'partial2', partialFilterExpression: { a: { $gt: 5 } } });
    await create('sig_coexist', { key: { a: 1 }, name: 'french', collation: { locale: 'fr' } });
    const names = (await coll.listIndexes().toArray()).map((i) => i.name);
    assert.deepEqual(names, ['_id_', 'plain', 'uniq', 'sparse', 'partial', 'partial2', 'french']);
    // The unique one is enforced although a non-unique index on the same key exists.
    await assert.rejects(coll.insertOne({ a: 1 }), { code: 11000 });
    // A key pattern now names several indexes: dropping by it is ambiguous.
    await assert.rejects(db().command({ dropIndexes: 'sig_coexist', index: { a: 1 } }), {
      code: 181,
      codeName: 'AmbiguousIndexKeyPattern',
    });
  });

  test('unique: false and sparse: false are the same signature as leaving them out', async () => {
    await create('sig_false', { key: { a: 1 }, name: 'a_1' });
    await assert.rejects(create('sig_false', { key: { a: 1 }, name: 'other', unique: false }), {
      code: 85,
      codeName: 'IndexOptionsConflict',
    });
    await assert.rejects(create('sig_false', { key: { a: 1 }, name: 'other', sparse: false }), { code: 85 });
  });

  test('the same name with another signature is IndexKeySpecsConflict; other options IndexOptionsConflict', async () => {
    await create('sig_conflict', { key: { a: 1 }, name: 'a_1', unique: true });
    await assert.rejects(create('sig_conflict', { key: { a: 1 }, name: 'a_1' }), { code: 86, codeName: 'IndexKeySpecsConflict' });
    await assert.rejects(create('sig_conflict', { key: { a: 1 }, name: 'a_1', unique: true, sparse: true }), { code: 86 });
    await assert.rejects(create('sig_conflict', { key: { a: 1 }, name: 'a_1', unique: true, collation: { locale: 'en' } }), { code: 86 });
    await assert.rejects(create('sig_conflict', { key: { a: 1 }, name: 'a_1', unique: true, expireAfterSeconds: 5 }), {
      code: 85,
      codeName: 'IndexOptionsConflict',
    });
    // Same signature under another name: 85 with either message.
    await assert.rejects(create('sig_conflict', { key: { a: 1 }, name: 'dup', unique: true }), (e: { code: number; message: string }) => {
      assert.equal(e.code, 85);
      assert.match(e.message, /Index already exists with a different name: a_1/);
      return true;
    });
    await assert.rejects(
      create('sig_conflict', { key: { a: 1 }, name: 'dup', unique: true, expireAfterSeconds: 5 }),
      (e: { code: number; message: string }) => {
        assert.equal(e.code, 85);
        assert.match(e.message, /equivalent index already exists with a different name and options/);
        return true;
      },
    );
    // An identical request is a no-op.
    const again = await create('sig_conflict', { key: { a: 1 }, name: 'a_1', unique: true });
    assert.equal(again.note, 'all indexes already exist');
  });

  test("listIndexes shows the collection's default collation on _id_, as listCollections does", async () => {
    await db().createCollection('sig_collated', { collation: { locale: 'de', strength: 2 } });
    const [idIndex] = await db().collection('sig_collated').listIndexes().toArray();
    assert.equal(idIndex.name, '_id_');
    const info = await infoOf('sig_collated');
    assert.deepEqual(idIndex.collation, info.options.collation);
    assert.deepEqual(idIndex, info.idIndex);
    assert.equal(idIndex.collation.locale, 'de');
    assert.equal(idIndex.collation.strength, 2);
  });

  test('collMod with a validator lists validationLevel strict and validationAction error afterwards', async () => {
    await db().createCollection('sig_validator');
    await db().command({ collMod: 'sig_validator', validator: { a: { $type: 'string' } } });
    const info = await infoOf('sig_validator');
    assert.deepEqual(info.options, {
      validator: { a: { $type: 'string' } },
      validationLevel: 'strict',
      validationAction: 'error',
    });
    // Given settings are kept.
    await db().createCollection('sig_validator_warn');
    await db().command({ collMod: 'sig_validator_warn', validator: { a: 1 }, validationAction: 'warn' });
    const warn = await infoOf('sig_validator_warn');
    assert.equal(warn.options.validationAction, 'warn');
    assert.equal(warn.options.validationLevel, 'strict');
  });

  test('getParameter reports authSchemaVersion 5', async () => {
    const reply = await target().client.db('admin').command({ getParameter: 1, authSchemaVersion: 1 });
    assert.equal(reply.authSchemaVersion, 5);
  });
});
