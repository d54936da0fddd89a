/**
 * Writes as mongod performs them: update operators and their numeric type rules, no-op updates,
 * upserts, positional and filtered array updates, pipeline and replacement updates, the errors
 * mongod reports, delete and findAndModify reply shapes, and the update descriptions change
 * streams report for each kind of change.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Double, Int32, Long, Timestamp, type Document } from 'mongodb';
import { conformance } from './harness.js';
import { closeStream, openStream, readEvents } from './change-stream-helpers.js';

/** The BSON type name of a value read with `promoteValues: false`. */
function bsonType(v: unknown): string {
  return (v as { _bsontype?: string })?._bsontype ?? typeof v;
}

conformance('writes', (target) => {
  const raw = (name: string) => target().db.collection(name);
  const typed = async (name: string, id: unknown) => raw(name).findOne({ _id: id as never }, { promoteValues: false });

  test('$inc and $mul follow mongod numeric types: int stays int, overflows to long, double wins', async () => {
    const coll = raw('arith');
    await coll.insertOne({
      _id: 1 as never,
      i: new Int32(1),
      big: new Int32(2147483647),
      d: new Double(1.5),
      l: Long.fromNumber(5),
      keep: new Double(2),
    });
    await coll.updateOne(
      { _id: 1 as never },
      { $inc: { i: new Int32(2), big: new Int32(1), l: new Int32(1) }, $mul: { d: new Int32(2), fresh: new Double(3) } },
    );
    const doc = (await typed('arith', 1))!;
    assert.equal(bsonType(doc.i), 'Int32');
    assert.equal(Number(doc.i), 3);
    assert.equal(bsonType(doc.big), 'Long');
    assert.equal(String(doc.big), '2147483648');
    assert.equal(bsonType(doc.l), 'Long');
    assert.equal(bsonType(doc.d), 'Double');
    assert.equal(Number(doc.d), 3);
    // $mul on a missing field stores zero of the multiplier's type.
    assert.equal(bsonType(doc.fresh), 'Double');
    assert.equal(Number(doc.fresh), 0);
    // A field the update does not touch keeps its type (a double holding 2 stays a double).
    assert.equal(bsonType(doc.keep), 'Double');
    await coll.updateOne({ _id: 1 as never }, { $inc: { i: new Double(0.5) } });
    assert.equal(bsonType((await typed('arith', 1))!.i), 'Double');
  });

  test('inserts replace top-level empty timestamps with the cluster time, and refuse array _ids', async () => {
    const coll = raw('inserts');
    await coll.insertOne({
      _id: new Timestamp({ t: 0, i: 0 }) as never,
      at: new Timestamp({ t: 0, i: 0 }),
      nested: { at: new Timestamp({ t: 0, i: 0 }) },
    });
    const doc = (await coll.findOne({}))!;
    assert.equal((doc._id as unknown as Timestamp).isZero(), true, '_id keeps its empty timestamp');
    assert.ok((doc.at as Timestamp).getHighBitsUnsigned() > 0, 'top-level empty timestamp replaced');
    assert.equal((doc.nested.at as Timestamp).isZero(), true, 'nested timestamps are left alone');
    const reply = await target().db.command({ insert: 'inserts', documents: [{ _id: [1] }] });
    assert.equal(reply.writeErrors[0].code, 2);
  });

  test('$inc past the long range fails with BadValue and changes nothing', async () => {
    const coll = raw('overflow');
    await coll.insertOne({ _id: 1 as never, l: Long.MAX_VALUE });
    await assert.rejects(coll.updateOne({ _id: 1 as never }, { $inc: { l: new Int32(1) } }), { code: 2 });
    assert.equal(String((await typed('overflow', 1))!.l), Long.MAX_VALUE.toString());
  });

  test('an update that changes nothing reports nModified 0; a type change is a change', async () => {
    const coll = raw('noop');
    await coll.insertOne({ _id: 1 as never, a: new Double(1), m: new Int32(2), s: 'x', arr: [1, 2] });
    const same = await target().db.command({
      update: 'noop',
      updates: [
        { q: { _id: 1 }, u: { $set: { s: 'x', arr: [new Int32(1), new Int32(2)] }, $inc: { a: new Int32(0) }, $min: { m: new Int32(5) } } },
      ],
    });
    assert.equal(same.n, 1);
    assert.equal(same.nModified, 0);
    const retyped = await coll.updateOne({ _id: 1 as never }, { $set: { a: new Int32(1) } });
    assert.equal(retyped.modifiedCount, 1);
    assert.equal(bsonType((await typed('noop', 1))!.a), 'Int32');
  });

  test('new fields are added in field-name order, numeric names numerically', async () => {
    const coll = raw('order');
    await coll.insertOne({ _id: 1 as never, m: 0 });
    await coll.updateOne({ _id: 1 as never }, { $set: { z: 1, b: 1, 'o.10': 1, 'o.9': 1, a: 1 } });
    const doc = (await coll.findOne({ _id: 1 as never }))!;
    assert.deepEqual(Object.keys(doc), ['_id', 'm', 'a', 'b', 'o', 'z']);
    assert.deepEqual(Object.keys(doc.o), ['9', '10']);
  });

  test('array operators: $push with modifiers, $addToSet, $pop, $pull, $pullAll', async () => {
    const coll = raw('arrays');
    await coll.insertOne({ _id: 1 as never, p: [3, 1], s: [1, 2], q: [1, 2, 3], r: [{ x: 1 }, { x: 5 }, 7], all: [1, 2, 1, 3] });
    await coll.updateOne(
      { _id: 1 as never },
      {
        $push: { p: { $each: [5, 0, 4], $sort: 1, $slice: 3 } } as never,
        $addToSet: { s: { $each: [2, 3, 3] } } as never,
        $pop: { q: -1 },
        $pull: { r: { x: { $gte: 5 } } } as never,
        $pullAll: { all: [1] } as never,
      },
    );
    const doc = (await coll.findOne({ _id: 1 as never }))!;
    assert.deepEqual(doc.p, [0, 1, 3]);
    assert.deepEqual(doc.s, [1, 2, 3]);
    assert.deepEqual(doc.q, [2, 3]);
    assert.deepEqual(doc.r, [{ x: 1 }, 7]);
    assert.deepEqual(doc.all, [2, 3]);
    await coll.updateOne({ _id: 1 as never }, { $push: { p: { $each: [9], $position: 0 } } as never, $rename: { all: 'renamed' } });
    const after = (await coll.findOne({ _id: 1 as never }))!;
    assert.deepEqual(after.p, [9, 0, 1, 3]);
    assert.deepEqual(after.renamed, [2, 3]);
    assert.equal('all' in after, false);
  });

  test('positional $, $[] and $[<id>] with arrayFilters', async () => {
    const coll = raw('positional');
    await coll.insertMany([
      {
        _id: 1,
        grades: [80, 85, 80],
        items: [
          { k: 'a', n: 1 },
          { k: 'b', n: 2 },
          { k: 'a', n: 3 },
        ],
      },
      { _id: 2, grades: [90, 80], items: [] },
    ] as never[]);
    await coll.updateOne({ _id: 1 as never, grades: 80 }, { $set: { 'grades.$': 82 } });
    assert.deepEqual((await coll.findOne({ _id: 1 as never }))!.grades, [82, 85, 80]);
    await coll.updateMany({}, { $inc: { 'grades.$[]': 1 } });
    assert.deepEqual((await coll.findOne({ _id: 2 as never }))!.grades, [91, 81]);
    const r = await coll.updateOne({ _id: 1 as never }, { $set: { 'items.$[it].n': 0 } }, { arrayFilters: [{ 'it.k': 'a' }] });
    assert.equal(r.modifiedCount, 1);
    assert.deepEqual((await coll.findOne({ _id: 1 as never }))!.items, [
      { k: 'a', n: 0 },
      { k: 'b', n: 2 },
      { k: 'a', n: 0 },
    ]);
    await assert.rejects(coll.updateOne({ _id: 2 as never }, { $set: { 'grades.$': 1 } }), { code: 2 });
    await assert.rejects(coll.updateOne({ _id: 1 as never }, { $set: { 'items.$[x].n': 1 } }), { code: 2 });
    await assert.rejects(coll.updateOne({ _id: 1 as never }, { $set: { a: 1 } }, { arrayFilters: [{ 'x.k': 1 }] }), { code: 9 });
  });

  test('upserts build the document from the query equalities and report upserted ids', async () => {
    const db = target().db;
    const reply = await db.command({
      update: 'upserts',
      updates: [
        { q: { _id: 'a', k: 1, 'n.x': 2, v: { $gt: 3 } }, u: { $set: { s: 1 }, $setOnInsert: { created: true } }, upsert: true },
        { q: { k: 9 }, u: { k: 9, replaced: true }, upsert: true },
        { q: { _id: 'a' }, u: { $setOnInsert: { created: false }, $set: { s: 2 } }, upsert: true },
      ],
    });
    assert.equal(reply.n, 3);
    assert.equal(reply.nModified, 1);
    assert.equal(reply.upserted.length, 2);
    assert.deepEqual(reply.upserted[0], { index: 0, _id: 'a' });
    assert.equal(reply.upserted[1].index, 1);
    const a = (await db.collection('upserts').findOne({ _id: 'a' as never }))!;
    assert.deepEqual(a, { _id: 'a', k: 1, n: { x: 2 }, s: 2, created: true });
    const replaced = (await db.collection('upserts').findOne({ k: 9 }))!;
    assert.deepEqual(Object.keys(replaced), ['_id', 'k', 'replaced']);
    assert.deepEqual(replaced._id, reply.upserted[1]._id);
  });

  test('pipeline updates compute fields and leave the rest of the document as it was', async () => {
    const coll = raw('pipeline');
    await coll.insertOne({ _id: 1 as never, a: new Double(2), b: new Int32(3), drop: 1 });
    const r = await coll.updateOne({ _id: 1 as never }, [{ $set: { sum: { $add: ['$b', 1] } } }, { $unset: 'drop' }]);
    assert.equal(r.modifiedCount, 1);
    const doc = (await typed('pipeline', 1))!;
    assert.deepEqual(Object.keys(doc), ['_id', 'a', 'b', 'sum']);
    assert.equal(bsonType(doc.a), 'Double');
    assert.equal(Number(doc.sum), 4);
    await assert.rejects(coll.updateOne({ _id: 1 as never }, [{ $match: { a: 1 } }]), { code: 72 });
  });

  test('replacements keep the _id and may not change it', async () => {
    const coll = raw('replace');
    await coll.insertOne({ _id: 1 as never, a: 1, b: 2 });
    await coll.replaceOne({ _id: 1 as never }, { c: 3 });
    assert.deepEqual(await coll.findOne({ _id: 1 as never }), { _id: 1, c: 3 });
    await assert.rejects(coll.replaceOne({ _id: 1 as never }, { _id: 2, c: 3 }), { code: 66 });
    const multi = await target().db.command({ update: 'replace', updates: [{ q: {}, u: { c: 4 }, multi: true }] });
    assert.equal(multi.writeErrors[0].code, 9);
  });

  test('update errors carry mongod codes and names', async () => {
    const coll = raw('errors');
    await coll.insertOne({ _id: 1 as never, a: 1, s: 'x' });
    // [update, code, mongod's code name (for the reader)]
    const cases: [Document, number, string][] = [
      [{ $set: { _id: 2 } }, 66, 'ImmutableField'],
      [{ $set: { a: 1 }, $inc: { a: 1 } }, 40, 'ConflictingUpdateOperators'],
      [{ $set: { a: 1, 'a.b': 1 } }, 40, 'ConflictingUpdateOperators'],
      [{ $inc: { s: 1 } }, 14, 'TypeMismatch'],
      [{ $inc: { a: 'x' } }, 14, 'TypeMismatch'],
      [{ $set: { 'a.b': 1 } }, 28, 'PathNotViable'],
      [{ $push: { a: 1 } }, 2, 'BadValue'],
      [{ $set: { 'a..b': 1 } }, 56, 'EmptyFieldName'],
      [{ $noSuchOperator: { a: 1 } }, 9, 'FailedToParse'],
    ];
    for (const [u, code, name] of cases) {
      const reply = await target().db.command({ update: 'errors', updates: [{ q: { _id: 1 }, u }] });
      assert.equal(reply.n, 0, JSON.stringify(u));
      assert.equal(reply.writeErrors?.[0]?.code, code, `${JSON.stringify(u)} should fail with ${name}`);
      assert.equal(reply.writeErrors[0].index, 0);
    }
    assert.deepEqual(await coll.findOne({ _id: 1 as never }), { _id: 1, a: 1, s: 'x' });
  });

  test('unordered updates report each failing statement and apply the others', async () => {
    await raw('unordered').insertMany([
      { _id: 1, a: 1 },
      { _id: 2, a: 'x' },
    ] as never[]);
    const reply = await target().db.command({
      update: 'unordered',
      ordered: false,
      updates: [
        { q: { _id: 2 }, u: { $inc: { a: 1 } } },
        { q: { _id: 1 }, u: { $inc: { a: 1 } } },
        { q: { _id: 1 }, u: { $set: { _id: 9 } } },
      ],
    });
    assert.equal(reply.n, 1);
    assert.equal(reply.nModified, 1);
    assert.deepEqual(
      reply.writeErrors.map((w: { index: number; code: number }) => [w.index, w.code]),
      [
        [0, 14],
        [2, 66],
      ],
    );
  });

  test('a result larger than 16 MiB fails with BSONObjectTooLarge', async () => {
    const coll = raw('toolarge');
    await coll.insertOne({ _id: 1 as never, a: 'x'.repeat(9 * 1024 * 1024) });
    // mongod 8 reports BSONObjectTooLarge; 7.0 still used its older location code 17419.
    await assert.rejects(coll.updateOne({ _id: 1 as never }, { $set: { b: 'y'.repeat(9 * 1024 * 1024) } }), (e: { code: number }) => {
      assert.ok([10334, 17419].includes(e.code), String(e.code));
      return true;
    });
  });

  test('delete honours limit 0/1 and refuses other limits', async () => {
    const db = target().db;
    await raw('deletes').insertMany([
      { _id: 1, k: 1 },
      { _id: 2, k: 1 },
      { _id: 3, k: 2 },
    ] as never[]);
    assert.deepEqual(await db.command({ delete: 'deletes', deletes: [{ q: { k: 1 }, limit: 1 }] }).then((r) => r.n), 1);
    assert.deepEqual(await db.command({ delete: 'deletes', deletes: [{ q: {}, limit: 0 }] }).then((r) => r.n), 2);
    await assert.rejects(db.command({ delete: 'deletes', deletes: [{ q: {}, limit: 2 }] }), { code: 9, codeName: 'FailedToParse' });
  });

  test('findAndModify returns the document before or after, with lastErrorObject', async () => {
    const db = target().db;
    await raw('fam').insertMany([
      { _id: 1, n: 1, tag: 'b' },
      { _id: 2, n: 2, tag: 'a' },
    ] as never[]);
    const before = await db.command({ findAndModify: 'fam', query: {}, sort: { tag: 1 }, update: { $inc: { n: 10 } } });
    assert.deepEqual(before.value, { _id: 2, n: 2, tag: 'a' });
    assert.deepEqual(before.lastErrorObject, { n: 1, updatedExisting: true });
    const after = await db.command({ findAndModify: 'fam', query: { _id: 1 }, update: { $set: { x: 1 } }, new: true, fields: { tag: 0 } });
    assert.deepEqual(after.value, { _id: 1, n: 1, x: 1 });
    const upserted = await db.command({ findAndModify: 'fam', query: { _id: 3 }, update: { $set: { n: 3 } }, upsert: true, new: true });
    assert.deepEqual(upserted.lastErrorObject, { n: 1, updatedExisting: false, upserted: 3 });
    assert.deepEqual(upserted.value, { _id: 3, n: 3 });
    const none = await db.command({ findAndModify: 'fam', query: { _id: 99 }, update: { $set: { n: 0 } } });
    assert.deepEqual(none.lastErrorObject, { n: 0, updatedExisting: false });
    assert.equal(none.value, null);
    const removed = await db.command({ findAndModify: 'fam', query: { _id: 3 }, remove: true });
    assert.deepEqual(removed.lastErrorObject, { n: 1 });
    assert.deepEqual(removed.value, { _id: 3, n: 3 });
    await assert.rejects(db.command({ findAndModify: 'fam', query: {} }), { code: 9 });
    await assert.rejects(db.command({ findAndModify: 'fam', query: {}, remove: true, update: { $set: { a: 1 } } }), { code: 9 });
  });

  test('change streams describe updates as mongod logs them', async () => {
    const db = target().db;
    const coll = db.collection('described');
    await coll.insertOne({ _id: 1 as never, arr: [1, 2, 3], n: { x: 1 }, gone: 1, pad: 'p'.repeat(200), q: [1, 2, 3, 4] });
    const stream = await openStream(db, 'described');
    await coll.updateOne({ _id: 1 as never }, { $set: { 'n.x': 1 } }); // no-op: no event
    await coll.updateOne({ _id: 1 as never }, { $push: { arr: { $each: [4, 5] } } as never });
    await coll.updateOne({ _id: 1 as never }, { $pop: { arr: 1 }, $set: { 'n.y': 2, 'm.z': 3 }, $unset: { gone: '' } });
    await coll.updateOne({ _id: 1 as never }, [{ $set: { q: { $slice: ['$q', 2] } } }]);
    const events = await readEvents(stream, 3);
    await closeStream(stream);
    assert.deepEqual(
      events.map((e) => e.operationType),
      ['update', 'update', 'update'],
    );
    assert.deepEqual(events[0].updateDescription, { updatedFields: { 'arr.3': 4, 'arr.4': 5 }, removedFields: [], truncatedArrays: [] });
    const second = events[1].updateDescription;
    assert.deepEqual(second.updatedFields, { arr: [1, 2, 3, 4], 'n.y': 2, m: { z: 3 } });
    assert.deepEqual(second.removedFields, ['gone']);
    const third = events[2].updateDescription;
    assert.deepEqual(third.truncatedArrays, [{ field: 'q', newSize: 2 }]);
    assert.deepEqual(third.updatedFields, {});
  });
});
