import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Int32 } from 'bson';
import { indexesToBuild, indexSignature, isHashedIndex, temporaryIndex } from '../../src/plan/indexes.js';
import { indexBuildTime } from '../../src/domain/catalog.js';
import { TEMPORARY_TTL_SECONDS } from '../../src/domain/constants.js';
import { BUILD_INDEXES } from '../../src/domain/start-request.js';

const SOURCE_INDEXES = [
  { v: 2, key: { _id: 1 }, name: '_id_' },
  { v: 2, key: { email: 1 }, name: 'email_1', unique: true },
  { v: 2, key: { createdAt: 1 }, name: 'createdAt_1', expireAfterSeconds: new Int32(3600) },
  { v: 2, key: { legacy: 1 }, name: 'legacy_1', hidden: true },
  { v: 2, key: { shard: 'hashed' }, name: 'shard_hashed' },
  { v: 2, key: { a: 1, b: -1 }, name: 'a_1_b_-1', partialFilterExpression: { a: { $gt: 5 } }, sparse: true, collation: { locale: 'fr' } },
  { v: 2, key: { code: 1 }, name: 'code_1', unique: true, prepareUnique: true },
];

describe('temporary index forms', () => {
  it('builds a unique index non-unique and records it', () => {
    const plan = temporaryIndex(SOURCE_INDEXES[1]!);
    assert.deepEqual(plan.temporary, { key: { email: 1 }, name: 'email_1' });
    assert.deepEqual(plan.changes, { unique: true });
    assert.deepEqual(plan.original, { key: { email: 1 }, name: 'email_1', unique: true });
  });

  it('builds a TTL index with 2147483647 seconds and keeps the original value', () => {
    const plan = temporaryIndex(SOURCE_INDEXES[2]!);
    assert.equal(plan.temporary.expireAfterSeconds, TEMPORARY_TTL_SECONDS);
    assert.equal(TEMPORARY_TTL_SECONDS, 2147483647);
    assert.deepEqual(plan.changes, { expireAfterSeconds: 3600 });
  });

  it('builds a hidden index visible', () => {
    const plan = temporaryIndex(SOURCE_INDEXES[3]!);
    assert.equal('hidden' in plan.temporary, false);
    assert.deepEqual(plan.changes, { hidden: true });
  });

  it('leaves prepareUnique off with unique', () => {
    const plan = temporaryIndex(SOURCE_INDEXES[6]!);
    assert.deepEqual(plan.temporary, { key: { code: 1 }, name: 'code_1' });
    assert.deepEqual(plan.changes, { unique: true, prepareUnique: true });
  });

  it('keeps every other option as the source has it, and changes nothing it need not', () => {
    const plan = temporaryIndex(SOURCE_INDEXES[5]!);
    const { v: _v, ...expected } = SOURCE_INDEXES[5]!;
    assert.deepEqual(plan.temporary, expected);
    assert.deepEqual(plan.changes, {});
  });
});

describe('indexes of a collection with a default collation', () => {
  const french = { locale: 'fr', strength: new Int32(2) };

  it('keeps an index without collation simple by saying so (it would take the collection default)', () => {
    const plan = temporaryIndex({ v: 2, key: { name: 1 }, name: 'name_1' }, french);
    assert.deepEqual(plan.temporary, { key: { name: 1 }, name: 'name_1', collation: { locale: 'simple' } });
    assert.deepEqual(plan.original, { key: { name: 1 }, name: 'name_1' });
    assert.deepEqual(plan.changes, {});
  });

  it('leaves an index with its own collation, and every index of a simple collection, as they are', () => {
    const own = { v: 2, key: { name: 1 }, name: 'name_de', collation: { locale: 'de' } };
    assert.deepEqual(temporaryIndex(own, french).temporary.collation, { locale: 'de' });
    assert.equal('collation' in temporaryIndex({ key: { a: 1 }, name: 'a_1' }, { locale: 'simple' }).temporary, false);
    assert.equal('collation' in temporaryIndex({ key: { a: 1 }, name: 'a_1' }).temporary, false);
  });
});

describe('buildIndexes policies', () => {
  const names = (value: (typeof BUILD_INDEXES)[number]) => indexesToBuild(SOURCE_INDEXES, value).map((p) => p.name);

  it('never builds _id (the collection has it) and keeps the source order', () => {
    assert.deepEqual(names('afterDataCopy'), ['email_1', 'createdAt_1', 'legacy_1', 'shard_hashed', 'a_1_b_-1', 'code_1']);
    assert.deepEqual(names('beforeDataCopy'), names('afterDataCopy'));
  });

  it('leaves hashed indexes out with excludeHashed and excludeHashedAfterCopy', () => {
    assert.equal(names('excludeHashed').includes('shard_hashed'), false);
    assert.equal(names('excludeHashedAfterCopy').includes('shard_hashed'), false);
    assert.equal(names('excludeHashed').length, 5);
  });

  it('builds nothing but _id with never', () => {
    assert.deepEqual(names('never'), []);
  });

  it('builds before the copy for beforeDataCopy and excludeHashed, after it otherwise', () => {
    assert.equal(indexBuildTime('beforeDataCopy'), 'beforeCopy');
    assert.equal(indexBuildTime('excludeHashed'), 'beforeCopy');
    assert.equal(indexBuildTime('afterDataCopy'), 'afterCopy');
    assert.equal(indexBuildTime('excludeHashedAfterCopy'), 'afterCopy');
    assert.equal(indexBuildTime('never'), 'never');
  });

  it('recognizes hashed keys anywhere in a compound key', () => {
    assert.equal(isHashedIndex({ key: { a: 1, b: 'hashed' } }), true);
    assert.equal(isHashedIndex({ key: { a: 1 } }), false);
    assert.equal(isHashedIndex({ key: { t: 'text' } }), false);
  });
});

describe('indexes differing only in unique (twins once the unique one is non-unique)', () => {
  const build = (specs: object[]) => indexesToBuild([{ v: 2, key: { _id: 1 }, name: '_id_' }, ...specs], 'afterDataCopy');

  it('keeps the unique one plain and distinguishes the other by a partial filter every document matches', () => {
    const [unique, plain] = build([
      { v: 2, key: { e: 1 }, name: 'e_unique', unique: true },
      { v: 2, key: { e: 1 }, name: 'e_plain' },
    ]);
    assert.deepEqual(unique!.temporary, { key: { e: 1 }, name: 'e_unique' });
    assert.deepEqual(plain!.temporary, { key: { e: 1 }, name: 'e_plain', partialFilterExpression: { _id: { $exists: true } } });
    assert.deepEqual(plain!.changes, { distinguished: true });
    assert.deepEqual(plain!.original, { key: { e: 1 }, name: 'e_plain' });
    assert.notEqual(indexSignature(unique!.temporary), indexSignature(plain!.temporary));
  });

  it('drops sparse (which cannot go with a partial filter) and adds to an existing partial filter', () => {
    const sparse = build([
      { key: { s: 1 }, name: 's_plain', sparse: true },
      { key: { s: 1 }, name: 's_unique', sparse: true, unique: true, hidden: true },
    ]);
    assert.deepEqual(sparse[0]!.temporary, { key: { s: 1 }, name: 's_plain', partialFilterExpression: { _id: { $exists: true } } });
    const partial = build([
      { key: { p: 1 }, name: 'p_unique', unique: true, partialFilterExpression: { p: { $gt: 1 } } },
      { key: { p: 1 }, name: 'p_plain', partialFilterExpression: { p: { $gt: 1 } } },
    ]);
    assert.deepEqual(partial[1]!.temporary.partialFilterExpression, { p: { $gt: 1 }, _id: { $exists: true } });
    const onId = build([
      { key: { _id: 1, q: 1 }, name: 'q_unique', unique: true, partialFilterExpression: { _id: { $gt: 1 } } },
      { key: { _id: 1, q: 1 }, name: 'q_plain', partialFilterExpression: { _id: { $gt: 1 } } },
    ]);
    assert.deepEqual(onId[1]!.temporary.partialFilterExpression, { _id: { $gt: 1 }, $and: [{ _id: { $exists: true } }] });
  });

  it('leaves indexes that differ in more than unique alone', () => {
    const plans = build([
      { key: { e: 1 }, name: 'e_unique', unique: true },
      { key: { e: 1 }, name: 'e_sparse', sparse: true },
      { key: { e: -1 }, name: 'e_desc' },
    ]);
    assert.deepEqual(
      plans.map((plan) => plan.changes.distinguished),
      [undefined, undefined, undefined],
    );
  });

  it('refuses, by name, twins it cannot tell apart', () => {
    assert.throws(
      () =>
        build([
          { key: { e: 1 }, name: 'e_unique', unique: true },
          { key: { e: 1 }, name: 'e_plain' },
          { key: { e: 1 }, name: 'e_all', partialFilterExpression: { _id: { $exists: true } } },
        ]),
      (error: Error) => error.name === 'DestinationConflict' && /"e_all" and "e_plain"|"e_plain" and "e_all"/.test(error.message),
    );
  });
});
