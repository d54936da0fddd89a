/** Handshake, insert/find basics, cross-type `_id` order and duplicate keys, through the driver. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Binary, Decimal128, Double, Int32, Long, MaxKey, MinKey, ObjectId } from 'mongodb';
import { conformance } from './harness.js';

conformance('handshake and basics', (target) => {
  test('hello describes a writable replica-set primary', async () => {
    const hello = await target().client.db('admin').command({ hello: 1 });
    assert.equal(hello.isWritablePrimary, true);
    assert.equal(typeof hello.setName, 'string');
    assert.ok(Array.isArray(hello.hosts) && hello.hosts.includes(hello.me));
    assert.equal(hello.primary, hello.me);
    assert.equal(hello.maxBsonObjectSize, 16 * 1024 * 1024);
    assert.equal(hello.maxMessageSizeBytes, 48_000_000);
    assert.equal(hello.maxWriteBatchSize, 100_000);
    assert.ok(hello.maxWireVersion >= 17, 'a current server (6.0+)');
    assert.ok(hello.lastWrite?.opTime?.ts, 'lastWrite.opTime');
    assert.ok(hello.$clusterTime?.clusterTime, '$clusterTime');
  });

  test('unknown commands fail with CommandNotFound and the connection keeps working', async () => {
    const db = target().db;
    await assert.rejects(db.command({ noSuchCommandFerry: 1 }), { code: 59, codeName: 'CommandNotFound' });
    assert.equal((await db.command({ ping: 1 })).ok, 1);
  });

  test('duplicate _id reports E11000 with keyPattern and keyValue', async () => {
    const coll = target().db.collection('dups');
    await coll.insertOne({ _id: 7 as never, a: 1 });
    await assert.rejects(coll.insertOne({ _id: 7.0 as never }), (e: { code: number; keyPattern: unknown; keyValue: unknown }) => {
      assert.equal(e.code, 11000);
      assert.deepEqual(e.keyPattern, { _id: 1 });
      assert.deepEqual(e.keyValue, { _id: 7 });
      return true;
    });
  });

  test('unordered inserts report every failing index and insert the rest', async () => {
    const coll = target().db.collection('unordered');
    await coll.insertOne({ _id: 2 as never });
    const err = await coll.insertMany([{ _id: 1 }, { _id: 2 }, { _id: 3 }, { _id: 2 }] as never[], { ordered: false }).then(
      () => undefined,
      (e) => e,
    );
    assert.ok(err, 'insertMany must fail');
    assert.deepEqual(
      err.writeErrors.map((w: { index: number }) => w.index),
      [1, 3],
    );
    assert.equal(await coll.countDocuments(), 3);
  });

  test('_id values of every type sort in BSON canonical order', async () => {
    const coll = target().db.collection('mixed');
    const oid = new ObjectId('0123456789abcdef01234567');
    const ids = [
      new MaxKey(),
      true,
      new Date(5),
      oid,
      new Binary(Buffer.from([1, 2])),
      { a: 1 },
      'abc',
      'ab',
      new Long(3),
      new Double(2.5),
      new Int32(1),
      new Decimal128('0.5'),
      null,
      new MinKey(),
    ];
    // Through the insert command itself: the driver's insertMany would replace a null _id.
    await target().db.command({ insert: 'mixed', documents: ids.map((_id) => ({ _id })) });
    const sorted = await coll.find({}, { sort: { _id: 1 }, promoteValues: false }).toArray();
    const kinds = sorted.map((d) => {
      const v = d._id as { _bsontype?: string } | null;
      return v === null ? 'null' : typeof v === 'object' ? (v._bsontype ?? (v instanceof Date ? 'Date' : 'Object')) : typeof v;
    });
    assert.deepEqual(kinds, [
      'MinKey',
      'null',
      'Decimal128',
      'Int32',
      'Double',
      'Long',
      'string',
      'string',
      'Object',
      'Binary',
      'ObjectId',
      'boolean',
      'Date',
      'MaxKey',
    ]);
  });

  test('min/max with an _id hint bound a range across types, max exclusive', async () => {
    const coll = target().db.collection('ranges');
    await coll.insertMany([{ _id: 1 }, { _id: 2 }, { _id: 'a' }, { _id: 'b' }, { _id: new ObjectId() }] as never[]);
    const docs = await coll.find({}).hint({ _id: 1 }).min({ _id: 2 }).max({ _id: 'b' }).toArray();
    assert.deepEqual(
      docs.map((d) => d._id),
      [2, 'a'],
    );
  });

  test('a cursor returns every document across getMore batches', async () => {
    const coll = target().db.collection('batches');
    await coll.insertMany(Array.from({ length: 250 }, (_, i) => ({ _id: i, pad: 'x'.repeat(200) })) as never[]);
    const seen = await coll.find({}, { batchSize: 40 }).sort({ _id: 1 }).toArray();
    assert.equal(seen.length, 250);
    assert.deepEqual(
      seen.map((d) => d._id),
      Array.from({ length: 250 }, (_, i) => i),
    );
  });
});
