/**
 * Aggregation as mongod runs it, with the stages Ferry relies on first ($sample of `_id`s,
 * $bucketAuto over `_id`, $collStats storage statistics), then the common stages, their errors,
 * cursor batching and views.
 */
import { before, test } from 'node:test';
import assert from 'node:assert/strict';
import { Double, type Document } from 'mongodb';
import { conformance } from './harness.js';

conformance('aggregate', (target) => {
  const numbers = () => target().db.collection('numbers');
  before(async () => {
    await numbers().insertMany(
      Array.from({ length: 10 }, (_, i) => ({ _id: i, g: [1, 1, 1, 2, 3, 4, 5, 6, 7, 8][i], pad: 'x'.repeat(50) })) as never[],
    );
  });

  test('$sample returns distinct documents, $project {_id: 1} keeps only _id', async () => {
    const docs = await numbers()
      .aggregate([{ $sample: { size: 4 } }, { $project: { _id: 1 } }])
      .toArray();
    assert.equal(docs.length, 4);
    assert.equal(new Set(docs.map((d) => d._id)).size, 4);
    for (const d of docs) assert.deepEqual(Object.keys(d), ['_id']);
    const all = await numbers()
      .aggregate([{ $sample: { size: 50 } }])
      .toArray();
    assert.equal(all.length, 10);
    assert.equal(new Set(all.map((d) => d._id)).size, 10);
    await assert.rejects(
      numbers()
        .aggregate([{ $sample: { size: -1 } }])
        .toArray(),
      { code: 28747 },
    );
  });

  test('a small $sample of a large collection: distinct stored documents from all over it, deleted ones never', async () => {
    const large = target().db.collection<{ _id: number }>('sampled');
    await large.insertMany(Array.from({ length: 2000 }, (_, i) => ({ _id: i })));
    await large.deleteMany({ _id: { $gte: 500, $lt: 1500 } });
    const seen: number[] = [];
    for (let round = 0; round < 20; round++) {
      const ids = (await large.aggregate<{ _id: number }>([{ $sample: { size: 40 } }]).toArray()).map((d) => d._id);
      assert.equal(ids.length, 40);
      assert.equal(new Set(ids).size, 40, 'no document twice in one sample');
      seen.push(...ids);
    }
    assert.ok(
      seen.every((id) => id < 500 || id >= 1500),
      'no deleted document',
    );
    assert.ok(Math.min(...seen) < 100 && Math.max(...seen) >= 1900, 'from both ends of the collection');
    // Most documents gone (a small sample, but record ids mostly empty): it still finds the few left.
    await large.deleteMany({ _id: { $gte: 20, $lt: 1920 } });
    for (let round = 0; round < 10; round++) {
      const few = (await large.aggregate<{ _id: number }>([{ $sample: { size: 4 } }]).toArray()).map((d) => d._id);
      assert.equal(new Set(few).size, 4, `four documents (${few.join(', ')})`);
      assert.ok(
        few.every((id) => id < 20 || id >= 1920),
        `only stored documents (${few.join(', ')})`,
      );
    }
  });

  test('$bucketAuto deals sorted values into buckets whose max is the next min', async () => {
    const byId = await numbers()
      .aggregate([{ $bucketAuto: { groupBy: '$_id', buckets: 3 } }])
      .toArray();
    assert.deepEqual(byId, [
      { _id: { min: 0, max: 3 }, count: 3 },
      { _id: { min: 3, max: 6 }, count: 3 },
      { _id: { min: 6, max: 9 }, count: 4 },
    ]);
    // Equal values stay in one bucket.
    const byG = await numbers()
      .aggregate([{ $bucketAuto: { groupBy: '$g', buckets: 5, output: { ids: { $push: '$_id' } } } }])
      .toArray();
    assert.deepEqual(byG[0]._id, { min: 1, max: 2 });
    assert.deepEqual([...byG[0].ids].sort(), [0, 1, 2]);
    assert.equal(
      byG.reduce((n, b) => n + b.ids.length, 0),
      10,
    );
    await assert.rejects(
      numbers()
        .aggregate([{ $bucketAuto: { groupBy: '$_id', buckets: 0 } }])
        .toArray(),
      { code: 40243 },
    );
  });

  test('$collStats reports storage statistics and must come first', async () => {
    await numbers().createIndex({ g: 1 });
    const [stats] = await numbers()
      .aggregate([{ $collStats: { storageStats: {}, count: {} } }])
      .toArray();
    assert.equal(stats.ns, `${target().db.databaseName}.numbers`);
    assert.equal(stats.count, 10);
    const s = stats.storageStats;
    assert.equal(s.count, 10);
    assert.ok(s.size > 10 * 50, 'size counts the documents');
    assert.equal(s.avgObjSize, Math.floor(s.size / 10));
    assert.equal(s.capped, false);
    assert.equal(s.nindexes, 2);
    assert.deepEqual(Object.keys(s.indexSizes).sort(), ['_id_', 'g_1']);
    for (const field of ['storageSize', 'totalIndexSize', 'totalSize']) assert.equal(typeof s[field], 'number', field);
    await assert.rejects(
      numbers()
        .aggregate([{ $match: {} }, { $collStats: {} }])
        .toArray(),
      { code: 40602 },
    );
  });

  test('$match, $group, $sort, $skip, $limit and $count', async () => {
    const groups = await numbers()
      .aggregate([
        { $match: { _id: { $gte: 2 } } },
        { $group: { _id: '$g', n: { $sum: 1 } } },
        { $sort: { n: -1, _id: 1 } },
        { $skip: 1 },
        { $limit: 2 },
      ])
      .toArray();
    assert.deepEqual(groups, [
      { _id: 2, n: 1 },
      { _id: 3, n: 1 },
    ]);
    assert.deepEqual(
      await numbers()
        .aggregate([{ $match: { g: 1 } }, { $count: 'ones' }])
        .toArray(),
      [{ ones: 3 }],
    );
    assert.deepEqual(
      await numbers()
        .aggregate([{ $match: { g: 99 } }, { $count: 'none' }])
        .toArray(),
      [],
    );
  });

  test('$unwind, $addFields and $lookup; untouched fields keep their types', async () => {
    const db = target().db;
    await db.collection('orders').insertMany([
      { _id: 1, items: ['a', 'b'], price: new Double(2), sku: 's1' },
      { _id: 2, items: [], price: new Double(3), sku: 's2' },
    ] as never[]);
    await db.collection('skus').insertMany([{ _id: 's1', name: 'first' }] as never[]);
    const unwound = await db
      .collection('orders')
      .aggregate([{ $unwind: { path: '$items', includeArrayIndex: 'i', preserveNullAndEmptyArrays: true } }])
      .toArray();
    assert.deepEqual(
      unwound.map((d) => [d._id, d.items, d.i]),
      [
        [1, 'a', 0],
        [1, 'b', 1],
        [2, undefined, null],
      ],
    );
    const [typed] = await db
      .collection('orders')
      .aggregate([{ $match: { _id: 1 } }, { $addFields: { twice: { $multiply: ['$price', 2] } } }], { promoteValues: false })
      .toArray();
    assert.equal((typed.price as { _bsontype?: string })._bsontype, 'Double');
    assert.equal(Number(typed.twice), 4);
    const joined = await db
      .collection('orders')
      .aggregate([{ $lookup: { from: 'skus', localField: 'sku', foreignField: '_id', as: 'sku' } }, { $sort: { _id: 1 } }])
      .toArray();
    assert.deepEqual(
      joined.map((d) => d.sku),
      [[{ _id: 's1', name: 'first' }], []],
    );
  });

  test("pipeline errors are mongod's", async () => {
    const db = target().db;
    await assert.rejects(
      numbers()
        .aggregate([{ $noSuchStage: {} }])
        .toArray(),
      { code: 40324 },
    );
    await assert.rejects(
      numbers()
        .aggregate([{ $match: {}, $sort: { _id: 1 } }])
        .toArray(),
      { code: 40323 },
    );
    await assert.rejects(
      numbers()
        .aggregate([{ $limit: 0 }])
        .toArray(),
      { code: 15958 },
    );
    await assert.rejects(db.command({ aggregate: 'numbers', pipeline: [] }), { code: 9, codeName: 'FailedToParse' });
  });

  test('cursor batchSize applies to the first batch; getMore returns the rest', async () => {
    const db = target().db;
    const reply = await db.command({ aggregate: 'numbers', pipeline: [{ $sort: { _id: 1 } }], cursor: { batchSize: 3 } });
    assert.deepEqual(
      reply.cursor.firstBatch.map((d: Document) => d._id),
      [0, 1, 2],
    );
    assert.notEqual(Number(reply.cursor.id), 0);
    const more = await db.command({ getMore: reply.cursor.id, collection: 'numbers' });
    assert.deepEqual(
      more.cursor.nextBatch.map((d: Document) => d._id),
      [3, 4, 5, 6, 7, 8, 9],
    );
    assert.equal(Number(more.cursor.id), 0);
  });

  test('an aggregation on a view runs the view pipeline first', async () => {
    const db = target().db;
    await db.createCollection('small', { viewOn: 'numbers', pipeline: [{ $match: { _id: { $lt: 4 } } }] });
    const docs = await db
      .collection('small')
      .aggregate([{ $group: { _id: null, total: { $sum: '$_id' } } }])
      .toArray();
    assert.deepEqual(docs, [{ _id: null, total: 6 }]);
  });
});
