/**
 * Reads as mongod serves them: filters with type bracketing, projections (inclusion, exclusion,
 * $slice, $elemMatch, positional), sorts over arrays and missing fields, hints with secondary
 * index order and min/max bounds, cursor batching rules, count and distinct, and finds on views.
 * Timestamps compare as mongod's do: unsigned (seconds, then increment).
 */
import { before, test } from 'node:test';
import assert from 'node:assert/strict';
import { Double, Int32, Long, Timestamp, type Document } from 'mongodb';
import { conformance } from './harness.js';

conformance('queries', (target) => {
  const people = () => target().db.collection('people');
  before(async () => {
    await people().insertMany([
      { _id: 1, name: 'ann', age: 31, tags: ['a', 'b'], grades: [80, 85, 90], n: { x: 1, y: 2 }, arr: [{ x: 1, y: 1 }, { x: 2, y: 2 }, 7] },
      { _id: 2, name: 'bob', age: '31', tags: ['b'], grades: [70, 95], n: { x: 2 } },
      { _id: 3, name: 'cy', age: 25, grades: [], n: { x: 3, y: 4 } },
      { _id: 4, name: 'di', age: 40, tags: [], grades: [88] },
    ] as never[]);
  });
  const ids = (docs: Document[]) => docs.map((d) => d._id);

  test('comparison operators only match values of the same type family', async () => {
    assert.deepEqual(
      ids(
        await people()
          .find({ age: { $gt: 30 } })
          .sort({ _id: 1 })
          .toArray(),
      ),
      [1, 4],
    );
    assert.deepEqual(
      ids(
        await people()
          .find({ age: { $type: 'string' } })
          .toArray(),
      ),
      [2],
    );
    assert.deepEqual(ids(await people().find({ tags: 'b' }).sort({ _id: 1 }).toArray()), [1, 2]);
    assert.deepEqual(
      ids(
        await people()
          .find({ tags: { $size: 0 } })
          .toArray(),
      ),
      [4],
    );
    assert.deepEqual(
      ids(
        await people()
          .find({ tags: { $exists: false } })
          .toArray(),
      ),
      [3],
    );
    assert.deepEqual(ids(await people().find({ 'arr.x': 2 }).toArray()), [1]);
    assert.deepEqual(
      ids(
        await people()
          .find({ grades: { $elemMatch: { $gte: 85, $lt: 90 } } })
          .sort({ _id: 1 })
          .toArray(),
      ),
      [1, 4],
    );
    assert.deepEqual(
      ids(
        await people()
          .find({ $expr: { $gt: [{ $size: '$grades' }, 2] } })
          .toArray(),
      ),
      [1],
    );
    assert.deepEqual(
      ids(
        await people()
          .find({ name: { $regex: '^[ab]' } })
          .sort({ _id: 1 })
          .toArray(),
      ),
      [1, 2],
    );
  });

  test('$in on _id matches each listed value once, across numeric types, with the rest of the filter', async () => {
    const sorted = (docs: Document[]) => ids(docs).sort((a, b) => Number(a) - Number(b));
    assert.deepEqual(
      sorted(
        await people()
          .find({ _id: { $in: [3, 1, new Double(3), Long.fromNumber(1), 99, 'x'] } } as Document)
          .toArray(),
      ),
      [1, 3],
    );
    assert.deepEqual(
      sorted(
        await people()
          .find({ _id: { $in: [1, 2, 3] }, age: { $type: 'number' } } as Document)
          .toArray(),
      ),
      [1, 3],
    );
    assert.deepEqual(
      ids(
        await people()
          .find({ _id: { $in: [1, 2, 4] } } as Document)
          .sort({ _id: -1 })
          .toArray(),
      ),
      [4, 2, 1],
    );
    assert.deepEqual(
      ids(
        await people()
          .find({ _id: { $in: [] } } as Document)
          .toArray(),
      ),
      [],
    );
    assert.deepEqual(
      sorted(
        await people()
          .find({ _id: { $in: [/x/, 2] } } as Document)
          .toArray(),
      ),
      [2],
    );
  });

  test('inclusion and exclusion projections, _id kept unless excluded', async () => {
    assert.deepEqual(await people().findOne({ _id: 1 as never }, { projection: { name: 1, 'n.x': 1 } }), {
      _id: 1,
      name: 'ann',
      n: { x: 1 },
    });
    assert.deepEqual(await people().findOne({ _id: 1 as never }, { projection: { _id: 0, 'arr.x': 1 } }), { arr: [{ x: 1 }, { x: 2 }] });
    assert.deepEqual(await people().findOne({ _id: 3 as never }, { projection: { grades: 0, n: 0 } }), { _id: 3, name: 'cy', age: 25 });
    assert.deepEqual(await people().findOne({ _id: 2 as never }, { projection: { _id: 1 } }), { _id: 2 });
    await assert.rejects(people().findOne({}, { projection: { name: 1, age: 0 } }), { code: 31254 });
    await assert.rejects(people().findOne({}, { projection: { name: 0, age: 1 } }), { code: 31253 });
  });

  test('$slice, $elemMatch and positional projections', async () => {
    const sliced = await people().findOne({ _id: 1 as never }, { projection: { grades: { $slice: -2 }, tags: { $slice: [1, 5] } } });
    assert.deepEqual(sliced?.grades, [85, 90]);
    assert.deepEqual(sliced?.tags, ['b']);
    assert.equal(sliced?.name, 'ann', '$slice alone keeps the other fields');
    const matched = await people().findOne({ _id: 1 as never }, { projection: { arr: { $elemMatch: { x: 2 } } } });
    assert.deepEqual(matched, { _id: 1, arr: [{ x: 2, y: 2 }] });
    const positional = await people().findOne({ grades: { $gte: 85 }, _id: 1 as never }, { projection: { 'grades.$': 1 } });
    assert.deepEqual(positional, { _id: 1, grades: [85] });
  });

  test('sort orders arrays by their smallest (ascending) or largest (descending) element, missing as null', async () => {
    const coll = target().db.collection('sorting');
    await coll.insertMany([{ _id: 1, v: [5, 1] }, { _id: 2, v: 3 }, { _id: 3, v: [2, 4] }, { _id: 4 }] as never[]);
    assert.deepEqual(ids(await coll.find().sort({ v: 1 }).toArray()), [4, 1, 3, 2]);
    assert.deepEqual(ids(await coll.find().sort({ v: -1 }).toArray()), [1, 3, 2, 4]);
    assert.deepEqual(ids(await coll.find().sort({ $natural: -1 }).toArray()), [4, 3, 2, 1]);
    assert.deepEqual(ids(await coll.find().sort({ v: 1 }).skip(1).limit(2).toArray()), [1, 3]);
    await assert.rejects(target().db.command({ find: 'sorting', sort: { v: 2 } }), { code: 15975 });
  });

  test('a hint scans a secondary index in key order, sparse indexes leave documents out, min/max bound it', async () => {
    const coll = target().db.collection('hinted');
    await coll.insertMany([{ _id: 1, k: 5 }, { _id: 2, k: 1 }, { _id: 3 }, { _id: 4, k: 3 }, { _id: 5, k: 2 }] as never[]);
    await coll.createIndex({ k: 1 }, { name: 'k_sparse', sparse: true });
    await coll.createIndex({ k: -1 });
    assert.deepEqual(ids(await coll.find().hint('k_sparse').toArray()), [2, 5, 4, 1]);
    assert.deepEqual(ids(await coll.find().hint({ k: -1 }).toArray()), [1, 4, 5, 2, 3]);
    assert.deepEqual(ids(await coll.find().hint('k_sparse').min({ k: 2 }).max({ k: 5 }).toArray()), [5, 4]);
    await assert.rejects(coll.find().hint('nope').toArray(), { code: 2 });
    await assert.rejects(coll.find().min({ k: 2 }).toArray(), { code: 51173 });
  });

  test('cursor batching: batchSize, limit, singleBatch, getMore until exhausted, killCursors', async () => {
    const db = target().db;
    await db.collection('batching').insertMany(Array.from({ length: 10 }, (_, i) => ({ _id: i })) as never[]);
    const first = await db.command({ find: 'batching', batchSize: 2, limit: 5 });
    assert.equal(first.cursor.firstBatch.length, 2);
    assert.notEqual(Number(first.cursor.id), 0);
    assert.equal(first.cursor.ns, `${db.databaseName}.batching`);
    const rest = await db.command({ getMore: first.cursor.id, collection: 'batching', batchSize: 10 });
    assert.deepEqual(ids(rest.cursor.nextBatch), [2, 3, 4]);
    assert.equal(Number(rest.cursor.id), 0, 'the limit closes the cursor');
    await assert.rejects(db.command({ getMore: first.cursor.id, collection: 'batching' }), { code: 43, codeName: 'CursorNotFound' });

    const limited = await db.command({ find: 'batching', limit: 3 });
    assert.equal(limited.cursor.firstBatch.length, 3);
    assert.equal(Number(limited.cursor.id), 0);
    const single = await db.command({ find: 'batching', batchSize: 4, singleBatch: true });
    assert.equal(single.cursor.firstBatch.length, 4);
    assert.equal(Number(single.cursor.id), 0);
    const empty = await db.command({ find: 'batching', batchSize: 0 });
    assert.equal(empty.cursor.firstBatch.length, 0);
    assert.notEqual(Number(empty.cursor.id), 0);
    const killed = await db.command({ killCursors: 'batching', cursors: [empty.cursor.id, Long.fromNumber(12345)] });
    assert.deepEqual(killed.cursorsKilled.map(Number), [Number(empty.cursor.id)]);
    assert.deepEqual(killed.cursorsNotFound.map(Number), [12345]);
    assert.deepEqual(killed.cursorsAlive, []);
    assert.deepEqual(killed.cursorsUnknown, []);
    const all = await db.collection('batching').find({}, { batchSize: 3 }).toArray();
    assert.equal(all.length, 10);
  });

  test('long scans by _id (bounded) and in natural order continue after their last document, deleted or not, between getMores', async () => {
    const db = target().db;
    const coll = db.collection<{ _id: number; v: number }>('long_scan');
    await coll.insertMany(Array.from({ length: 700 }, (_, i) => ({ _id: i, v: i })));
    const byId = await db.command({ find: 'long_scan', hint: { _id: 1 }, min: { _id: 50 }, max: { _id: 650 }, batchSize: 300 });
    assert.deepEqual(
      ids(byId.cursor.firstBatch),
      Array.from({ length: 300 }, (_, i) => 50 + i),
    );
    // The last document returned and the next one go before the getMore.
    await coll.deleteMany({ _id: { $in: [349, 350] } });
    const restById = await db.command({ getMore: byId.cursor.id, collection: 'long_scan', batchSize: 1000 });
    assert.deepEqual(
      ids(restById.cursor.nextBatch),
      Array.from({ length: 299 }, (_, i) => 351 + i),
    );
    assert.equal(Number(restById.cursor.id), 0);

    const natural = await db.command({ find: 'long_scan', batchSize: 300 });
    const seen = ids(natural.cursor.firstBatch);
    await coll.deleteMany({ _id: { $in: [seen.at(-1), 600] } });
    const restNatural = await db.command({ getMore: natural.cursor.id, collection: 'long_scan', batchSize: 1000 });
    const all = [...seen, ...ids(restNatural.cursor.nextBatch)];
    assert.equal(all.length, 697, 'every document once, 349, 350 and 600 not at all');
    assert.equal(new Set(all).size, 697);
    assert.ok(!all.includes(600));
  });

  test('find rejects unknown fields and negative numbers as mongod does', async () => {
    const db = target().db;
    await assert.rejects(db.command({ find: 'people', noSuchOption: 1 }), { code: 40415, codeName: 'IDLUnknownField' });
    await assert.rejects(db.command({ find: 'people', limit: -1 }), { code: 51024 });
    await assert.rejects(db.command({ find: 'people', filter: 5 }), { code: 14, codeName: 'TypeMismatch' });
  });

  test('count and distinct', async () => {
    const db = target().db;
    assert.equal((await db.command({ count: 'people' })).n, 4);
    assert.equal((await db.command({ count: 'people', query: { grades: { $gt: 80 } } })).n, 3);
    assert.equal((await db.command({ count: 'people', query: {}, skip: 1, limit: 2 })).n, 2);
    assert.equal((await db.command({ count: 'missing' })).n, 0);
    const tags = (await db.command({ distinct: 'people', key: 'tags' })).values as string[];
    assert.deepEqual([...tags].sort(), ['a', 'b']);
    const xs = (await db.command({ distinct: 'people', key: 'arr.x', query: {} })).values as number[];
    assert.deepEqual([...xs].sort(), [1, 2]);
    const coll = db.collection('distinct-types');
    await coll.insertMany([{ v: new Int32(1) }, { v: new Double(1) }, { v: new Double(1.5) }]);
    const values = (await db.command({ distinct: 'distinct-types', key: 'v' }, { promoteValues: false })).values as unknown[];
    assert.equal(values.length, 2, '1 and 1.0 are one distinct value');
  });

  test('a find on a view runs the view pipeline first', async () => {
    const db = target().db;
    await db.createCollection('adults', { viewOn: 'people', pipeline: [{ $match: { age: { $gte: 30 } } }, { $project: { tags: 0 } }] });
    const docs = await db
      .collection('adults')
      .find({ grades: { $gte: 90 } }, { projection: { name: 1 } })
      .sort({ name: -1 })
      .toArray();
    assert.deepEqual(docs, [{ _id: 1, name: 'ann' }]);
    assert.equal((await db.command({ count: 'adults' })).n, 2);
  });
  test('Timestamps compare as unsigned (seconds, increment) pairs, up to the largest', async () => {
    const times = target().db.collection('times');
    const at = (t: number, i: number) => new Timestamp({ t, i });
    const largest = at(0xffffffff, 0xffffffff);
    // Seconds 5 and 40 (decimal strings order them the other way), past 2^31 (signed, negative), and the largest.
    await times.insertMany([
      { _id: 1, ts: at(5, 1) },
      { _id: 2, ts: at(40, 0) },
      { _id: 3, ts: at(0x80000001, 7) },
      { _id: 4, ts: largest },
      { _id: 5, ts: [at(1, 1), at(0x90000000, 0)] },
      { _id: 6, ts: 5 },
    ] as never[]);
    const match = async (filter: Document) => ids(await times.find(filter).sort({ _id: 1 }).toArray());
    assert.deepEqual(await match({ ts: { $lte: largest } }), [1, 2, 3, 4, 5]);
    assert.deepEqual(await match({ ts: { $lt: largest } }), [1, 2, 3, 5]);
    assert.deepEqual(await match({ ts: { $gt: at(6, 0) } }), [2, 3, 4, 5]);
    assert.deepEqual(await match({ ts: { $gte: at(0x80000001, 7) } }), [3, 4, 5]);
    assert.deepEqual(await match({ ts: { $lt: at(40, 0) } }), [1, 5]);
    assert.deepEqual(await match({ ts: { $gt: at(40, 0), $lt: at(0x80000001, 8) } }), [3, 5]);
    assert.deepEqual(await match({ ts: { $eq: at(40, 0) } }), [2]);
    const sorted = await times
      .find({ _id: { $lt: 5 } } as Document)
      .sort({ ts: -1 })
      .toArray();
    assert.deepEqual(ids(sorted), [4, 3, 2, 1]);
    const matched = await times.aggregate([{ $match: { ts: { $lte: largest } } }, { $count: 'n' }]).toArray();
    assert.deepEqual(matched, [{ n: 5 }]);
  });

  test('$in and $nin, of few values or many, match by value across number types, embedded documents with their fields in order, whole arrays or their elements, null for missing', async () => {
    const values = target().db.collection('in_lists');
    await values.insertMany([
      { _id: 1, v: 1 },
      { _id: 2, v: Long.fromNumber(1) },
      { _id: 3, v: new Double(1) },
      { _id: 4, v: 'a' },
      { _id: 5, v: { x: 1, y: 2 } },
      { _id: 6, v: { y: 2, x: 1 } },
      { _id: 7, v: [7, 8] },
      { _id: 8, v: null },
      { _id: 9 },
      { _id: 10, v: [[9]] },
      { _id: 11, v: [{ x: 1, y: 2 }] },
    ] as never[]);
    // Lists of a few values and of many (none of them matching) behave alike.
    const filler = Array.from({ length: 20 }, (_, i) => `filler${i}`);
    const matching = async (filter: Document) => ids(await values.find(filter).sort({ _id: 1 }).toArray());
    const cases: [unknown[], number[]][] = [
      [[1], [1, 2, 3]],
      [[{ x: 1, y: 2 }], [5, 11]],
      [[null], [8, 9]],
      [[[7, 8]], [7]],
      [[8], [7]],
      [[[9]], [10]],
      [[9], []],
      [
        ['a', 1],
        [1, 2, 3, 4],
      ],
    ];
    const all = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11];
    for (const [listed, expected] of cases) {
      for (const list of [listed, [...listed, ...filler]]) {
        assert.deepEqual(await matching({ v: { $in: list } }), expected, `$in ${JSON.stringify(list.length)} values`);
        assert.deepEqual(
          await matching({ v: { $nin: list } }),
          all.filter((id) => !expected.includes(id)),
          `$nin ${JSON.stringify(list.length)} values`,
        );
      }
    }
    assert.deepEqual(await matching({ _id: { $in: [...filler, 2, 11, 40] } }), [2, 11]);
    assert.deepEqual(await matching({ _id: { $nin: [...filler, 2, 11, 40] } }), [1, 3, 4, 5, 6, 7, 8, 9, 10]);
  });
});
