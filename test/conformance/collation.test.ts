/**
 * Collations applied, as mongod's ICU collator applies them: equality and range filters, sorts,
 * `_id` lookups and uniqueness under a collection's default collation, an operation's own
 * `collation` (find, aggregate, count, distinct, update, delete, findAndModify), unique indexes
 * with a collation, min/max index bounds that need the index's collation, and views whose
 * collation a query may not override. The expectations are ICU's (stable across versions for
 * these strings).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { CollationOptions } from 'mongodb';
import { conformance } from './harness.js';

const caseInsensitive = { locale: 'en', strength: 2 };

conformance('collations', (target) => {
  const db = () => target().db;

  test("a collection's default collation applies to filters, sorts, _id lookups and _id uniqueness", async () => {
    await db().createCollection('co_default', { collation: caseInsensitive });
    const coll = db().collection<{ _id: string; name: string }>('co_default');
    await coll.insertMany([
      { _id: 'a', name: 'Apple' },
      { _id: 'B', name: 'apple' },
      { _id: 'c', name: 'banana' },
    ]);
    assert.equal(await coll.countDocuments({ name: 'APPLE' }), 2);
    assert.deepEqual(
      (await coll.find({}, { sort: { _id: 1 } }).toArray()).map((d) => d._id),
      ['a', 'B', 'c'],
    );
    assert.equal((await coll.findOne({ _id: 'A' }))?.name, 'Apple');
    assert.deepEqual(
      (await coll.find({ _id: { $in: ['b', 'C'] } }).toArray()).map((d) => d._id),
      ['B', 'c'],
    );
    await assert.rejects(coll.insertOne({ _id: 'A', name: 'again' }), { code: 11000 });
    // An operation may ask for the simple collation instead.
    assert.equal(await coll.countDocuments({ name: 'APPLE' }, { collation: { locale: 'simple' } }), 0);
    assert.deepEqual(
      (await coll.find({}, { sort: { _id: 1 }, collation: { locale: 'simple' } }).toArray()).map((d) => d._id),
      ['B', 'a', 'c'],
    );
    assert.equal(await coll.findOne({ _id: 'A' }, { collation: { locale: 'simple' } }), null);
  });

  test("an operation's collation applies to equality, ranges, $in and sorts", async () => {
    const coll = db().collection('co_query');
    await coll.insertMany([{ s: 'b' }, { s: 'B' }, { s: 'a' }, { s: 'c' }, { s: 'é' }]);
    const strength1 = { locale: 'en', strength: 1 };
    const names = async (filter: object, options: object = {}) =>
      (await coll.find(filter, { ...options, projection: { _id: 0 } }).toArray()).map((d) => d.s as string);
    assert.deepEqual(await names({ s: 'b' }), ['b']);
    assert.deepEqual(await names({ s: 'b' }, { collation: strength1 }), ['b', 'B']);
    assert.deepEqual(await names({ s: 'e' }, { collation: strength1 }), ['é']);
    assert.deepEqual(await names({ s: { $gt: 'b' } }, { collation: strength1, sort: { s: 1 } }), ['c', 'é']);
    assert.deepEqual(await names({ s: { $gte: 'b' } }, { collation: strength1, sort: { s: 1 } }), ['b', 'B', 'c', 'é']);
    assert.deepEqual(await names({ s: { $in: ['A', 'C'] } }, { collation: strength1 }), ['a', 'c']);
    assert.deepEqual(await names({}, { sort: { s: 1 } }), ['B', 'a', 'b', 'c', 'é']);
    assert.deepEqual(await names({}, { sort: { s: 1 }, collation: { locale: 'en' } }), ['a', 'b', 'B', 'c', 'é']);
    assert.deepEqual(await names({}, { sort: { s: 1 }, collation: { locale: 'en', caseFirst: 'upper' } }), ['a', 'B', 'b', 'c', 'é']);
  });

  test('numericOrdering, alternate shifted and French backwards ordering', async () => {
    const coll = db().collection('co_options');
    await coll.insertMany(['10', '9', '1', 'a-b', 'ab', 'cote', 'côte', 'coté', 'côté'].map((s) => ({ s })));
    const sorted = async (filter: object, collation: CollationOptions) =>
      (await coll.find(filter, { sort: { s: 1 }, collation, projection: { _id: 0 } }).toArray()).map((d) => d.s);
    assert.deepEqual(await sorted({ s: { $in: ['10', '9', '1'] } }, { locale: 'en', numericOrdering: true }), ['1', '9', '10']);
    assert.deepEqual(await sorted({ s: { $in: ['10', '9', '1'] } }, { locale: 'en' }), ['1', '10', '9']);
    assert.equal(await coll.countDocuments({ s: 'ab' }, { collation: { locale: 'en', alternate: 'shifted' } }), 2);
    const french = { s: { $in: ['cote', 'côte', 'coté', 'côté'] } };
    assert.deepEqual(await sorted(french, { locale: 'fr' }), ['cote', 'coté', 'côte', 'côté']);
    assert.deepEqual(await sorted(french, { locale: 'fr', backwards: true }), ['cote', 'côte', 'coté', 'côté']);
  });

  test('a unique index with a collation refuses keys equal under it; a simple one does not', async () => {
    const coll = db().collection('co_unique');
    await coll.createIndex({ email: 1 }, { unique: true, name: 'email_ci', collation: caseInsensitive });
    await coll.insertOne({ email: 'Ann@x.org' });
    await assert.rejects(coll.insertOne({ email: 'ann@X.ORG' }), { code: 11000 });
    const plain = db().collection('co_unique_simple');
    await plain.createIndex({ email: 1 }, { unique: true });
    await plain.insertMany([{ email: 'Ann@x.org' }, { email: 'ann@X.ORG' }]);
    // Building a collated unique index over case variants fails.
    await assert.rejects(plain.createIndex({ email: 1 }, { unique: true, name: 'ci', collation: caseInsensitive }), { code: 11000 });
  });

  test('update, delete, findAndModify, count, distinct and aggregate take a collation', async () => {
    const coll = db().collection('co_writes');
    await coll.insertMany([
      { k: 'x', n: 1 },
      { k: 'X', n: 2 },
      { k: 'y', n: 3 },
    ]);
    const update = await coll.updateMany({ k: 'x' }, { $inc: { n: 10 } }, { collation: caseInsensitive });
    assert.equal(update.modifiedCount, 2);
    const found = await coll.findOneAndUpdate(
      { k: 'Y' },
      { $set: { seen: true } },
      { collation: caseInsensitive, returnDocument: 'after' },
    );
    assert.equal(found?.seen, true);
    assert.equal(await coll.countDocuments({ k: 'X' }, { collation: caseInsensitive }), 2);
    assert.deepEqual((await coll.distinct('k', {}, { collation: caseInsensitive })).length, 2);
    assert.deepEqual((await coll.distinct('k')).sort(), ['X', 'x', 'y']);
    const grouped = await coll
      .aggregate([{ $match: { k: 'x' } }, { $sort: { n: 1 } }, { $project: { _id: 0, n: 1 } }], { collation: caseInsensitive })
      .toArray();
    assert.deepEqual(grouped, [{ n: 11 }, { n: 12 }]);
    const removed = await coll.deleteMany({ k: 'X' }, { collation: caseInsensitive });
    assert.equal(removed.deletedCount, 2);
    await assert.rejects(coll.find({}, { collation: { locale: 'nope' } }).toArray(), { code: 2 });
  });

  test('min/max need the hinted index to have the query collation when the bounds are strings', async () => {
    const coll = db().collection('co_bounds');
    await coll.createIndex({ s: 1 }, { name: 's_ci', collation: caseInsensitive });
    await coll.createIndex({ n: 1 }, { name: 'n_ci', collation: caseInsensitive });
    await coll.insertMany([
      { s: 'a', n: 1 },
      { s: 'B', n: 2 },
      { s: 'c', n: 3 },
    ]);
    await assert.rejects(coll.find({}, { hint: 's_ci', min: { s: 'b' } }).toArray(), { code: 51174 });
    const collated = await coll.find({}, { hint: 's_ci', min: { s: 'b' }, collation: caseInsensitive }).toArray();
    assert.deepEqual(
      collated.map((d) => d.s),
      ['B', 'c'],
    );
    // Numbers do not depend on a collation: any query collation may bound that index.
    const numeric = await coll.find({}, { hint: 'n_ci', min: { n: 2 } }).toArray();
    assert.deepEqual(
      numeric.map((d) => d.n),
      [2, 3],
    );
  });

  test("a view's collation applies to queries on it and may not be overridden", async () => {
    await db()
      .collection('co_base')
      .insertMany([{ s: 'q' }, { s: 'Q' }]);
    await db().createCollection('co_view', { viewOn: 'co_base', pipeline: [], collation: caseInsensitive });
    assert.equal(await db().collection('co_view').countDocuments({ s: 'q' }), 2);
    await assert.rejects(
      db()
        .collection('co_view')
        .find({}, { collation: { locale: 'fr' } })
        .toArray(),
      {
        code: 167,
        codeName: 'OptionNotSupportedOnView',
      },
    );
  });
});
