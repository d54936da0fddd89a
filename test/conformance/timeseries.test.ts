/**
 * Time-series collections as mongod 7.0 keeps them: `create` with `timeseries` (options checked
 * and filled in), the two listCollections entries (the `timeseries` view-like entry and the
 * clustered `system.buckets.*` collection with its validator), measurements round-tripping with
 * their types, the uncompressed buckets they are stored in, 7.0's update (metaField only, multi)
 * and delete (any filter) rules, collMod of granularity and expireAfterSeconds, indexes in the
 * user's terms, and what change streams report.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Double, Int32, Long, type Document } from 'mongodb';
import { conformance } from './harness.js';
import { openStream, readEvents } from './change-stream-helpers.js';

const t0 = new Date('2024-03-19T13:46:10.500Z');
const at = (seconds: number) => new Date(t0.getTime() + seconds * 1000);

conformance('time-series collections', (target) => {
  const db = () => target().db;
  const infoOf = async (name: string): Promise<Document | undefined> => ((await db().listCollections({ name }).toArray()) as Document[])[0];

  test('listCollections lists the time-series entry and its clustered buckets collection', async () => {
    await db().createCollection('ts_listed', { timeseries: { timeField: 't', metaField: 'm' } });
    assert.deepEqual(await infoOf('ts_listed'), {
      name: 'ts_listed',
      type: 'timeseries',
      options: { timeseries: { timeField: 't', metaField: 'm', granularity: 'seconds', bucketMaxSpanSeconds: 3600 } },
      info: { readOnly: false },
    });
    const buckets = (await infoOf('system.buckets.ts_listed'))!;
    assert.equal(buckets.type, 'collection');
    assert.deepEqual(Object.keys(buckets.options), ['validator', 'clusteredIndex', 'timeseries']);
    assert.equal(buckets.options.clusteredIndex, true);
    assert.deepEqual(buckets.options.validator.$jsonSchema.required, ['_id', 'control', 'data']);
    assert.deepEqual(buckets.options.validator.$jsonSchema.properties.control.properties.min, {
      bsonType: 'object',
      required: ['t'],
      properties: { t: { bsonType: 'date' } },
    });
    assert.equal(buckets.idIndex, undefined);
    assert.ok(buckets.info.uuid, 'the buckets collection has a uuid');
    assert.ok(await infoOf('system.views'), 'the view definition lives in system.views');
    const typed = (await db().listCollections({ type: 'timeseries' }, { nameOnly: true }).toArray()).map((c) => c.name);
    assert.deepEqual(typed, ['ts_listed']);
  });

  test('create fills in the bucketing of a granularity, keeps custom bucketing and lists options in order', async () => {
    await db().createCollection('ts_minutes', { timeseries: { timeField: 't', granularity: 'minutes' } });
    assert.deepEqual((await infoOf('ts_minutes'))!.options.timeseries, {
      timeField: 't',
      granularity: 'minutes',
      bucketMaxSpanSeconds: 86400,
    });
    await db().createCollection('ts_custom', {
      timeseries: { timeField: 't', bucketMaxSpanSeconds: 600, bucketRoundingSeconds: 600 },
    } as never);
    assert.deepEqual((await infoOf('ts_custom'))!.options.timeseries, {
      timeField: 't',
      bucketMaxSpanSeconds: 600,
      bucketRoundingSeconds: 600,
    });
    await db().createCollection('ts_full', {
      timeseries: { timeField: 't', metaField: 'm', granularity: 'hours' },
      expireAfterSeconds: 100,
      collation: { locale: 'ja' },
    });
    const full = (await infoOf('ts_full'))!;
    assert.deepEqual(Object.keys(full.options), ['collation', 'expireAfterSeconds', 'timeseries']);
    assert.equal(full.options.expireAfterSeconds, 100);
    assert.equal(full.options.collation.locale, 'ja');
    // The same request again succeeds; different options do not.
    await db().createCollection('ts_minutes', { timeseries: { timeField: 't', granularity: 'minutes' } });
    await assert.rejects(db().createCollection('ts_minutes', { timeseries: { timeField: 'other' } }), { code: 48 });
  });

  test('create refuses invalid time-series options with mongod codes', async () => {
    const create = (name: string, options: Document) => db().command({ create: name, ...options });
    await assert.rejects(create('ts_bad', { timeseries: { metaField: 'm' } }), { code: 40414 });
    await assert.rejects(create('ts_bad', { timeseries: { timeField: 't', metaField: 't' } }), { code: 72 });
    await assert.rejects(create('ts_bad', { timeseries: { timeField: 't', metaField: '_id' } }), { code: 72 });
    await assert.rejects(create('ts_bad', { timeseries: { timeField: 'a.b' } }), { code: 72 });
    await assert.rejects(create('ts_bad', { timeseries: { timeField: 't', granularity: 'seconds', bucketMaxSpanSeconds: 10 } }), {
      code: 72,
    });
    await assert.rejects(create('ts_bad', { timeseries: { timeField: 't', bucketMaxSpanSeconds: 100 } }), { code: 72 });
    await assert.rejects(create('ts_bad', { timeseries: { timeField: 't', bucketMaxSpanSeconds: 100, bucketRoundingSeconds: 50 } }), {
      code: 72,
    });
    await assert.rejects(create('ts_bad', { timeseries: { timeField: 't' }, capped: true, size: 1000 }), { code: 72 });
    await assert.rejects(create('ts_bad', { timeseries: { timeField: 't' }, validator: { a: 1 } }), { code: 72 });
    await assert.rejects(create('ts_bad', { timeseries: { timeField: 't', granularity: 'days' } }), { code: 2 });
    await assert.rejects(create('ts_bad_view', { viewOn: 'system.buckets.ts_listed', pipeline: [] }), { code: 73 });
    assert.equal(await infoOf('ts_bad'), undefined);
  });

  test('measurements come back with their types: time field, meta field, then the other fields', async () => {
    await db().createCollection('ts_roundtrip', { timeseries: { timeField: 't', metaField: 'm' } });
    const coll = db().collection('ts_roundtrip');
    await coll.insertMany([
      { _id: 1, m: { sensor: 'a', zone: 1 }, t: at(0), int: new Int32(1), double: new Double(2), long: Long.fromNumber(3), s: 'x' },
      { _id: 2, t: at(1), m: { zone: 1, sensor: 'a' }, nested: { a: [1, 2] } },
      { _id: 3, t: at(2), m: { sensor: 'b', zone: 1 }, int: new Int32(7) },
    ] as never[]);
    const docs = await coll.find({}, { promoteValues: false, sort: { _id: 1 } }).toArray();
    assert.deepEqual(Object.keys(docs[0]), ['t', 'm', '_id', 'int', 'double', 'long', 's']);
    assert.ok(docs[0].int instanceof Int32);
    assert.ok(docs[0].double instanceof Double);
    assert.ok(docs[0].long instanceof Long);
    // The meta value is stored normalized: its fields sorted, so both sensor 'a' measurements share it.
    assert.deepEqual(Object.keys(docs[1].m), ['sensor', 'zone']);
    assert.equal(await coll.countDocuments({ 'm.sensor': 'a' }), 2);
    assert.deepEqual(await coll.distinct('m.sensor'), ['a', 'b']);
    const grouped = await coll.aggregate([{ $group: { _id: '$m.sensor', n: { $sum: 1 } } }, { $sort: { _id: 1 } }]).toArray();
    assert.deepEqual(grouped, [
      { _id: 'a', n: 2 },
      { _id: 'b', n: 1 },
    ]);
    await assert.rejects(coll.insertOne({ m: 'x', v: 1 }), (e: { code: number; message: string }) => {
      assert.equal(e.code, 2);
      assert.match(e.message, /'t' must be present and contain a valid BSON UTC datetime value/);
      return true;
    });
    await assert.rejects(coll.insertOne({ t: 'not a date' }), { code: 2 });
  });

  test('measurements are stored in uncompressed buckets per meta value and time span', async () => {
    await db().createCollection('ts_buckets', { timeseries: { timeField: 't', metaField: 'm' } });
    const coll = db().collection('ts_buckets');
    await coll.insertOne({ _id: 1, t: at(0), m: 'a', v: 5 } as never);
    await coll.insertOne({ _id: 2, t: at(30), m: 'a', v: 2 } as never);
    await coll.insertOne({ _id: 3, t: at(10), m: 'b', v: 9 } as never);
    await coll.insertOne({ _id: 4, t: at(7200), m: 'a', v: 1 } as never);
    const buckets = await db().collection('system.buckets.ts_buckets').find().toArray();
    assert.equal(buckets.length, 3);
    const first = buckets.find((b) => b.meta === 'a' && b.data._id['1'] === 2)!;
    assert.deepEqual(first.control, {
      version: 1,
      min: { _id: 1, t: new Date('2024-03-19T13:46:00.000Z'), v: 2 },
      max: { _id: 2, t: at(30), v: 5 },
    });
    assert.deepEqual(first.data, { _id: { 0: 1, 1: 2 }, t: { 0: at(0), 1: at(30) }, v: { 0: 5, 1: 2 } });
    // The bucket _id's time is its rounded start.
    assert.equal(first._id.getTimestamp().getTime(), new Date('2024-03-19T13:46:00.000Z').getTime());
  });

  test('updates (7.0): multi, no upsert, on the metaField only; counted in measurements', async () => {
    await db().createCollection('ts_update', { timeseries: { timeField: 't', metaField: 'm' } });
    const coll = db().collection('ts_update');
    await coll.insertMany([
      { t: at(0), m: { s: 'a' }, v: 1 },
      { t: at(1), m: { s: 'a' }, v: 2 },
      { t: at(2), m: { s: 'b' }, v: 3 },
    ]);
    const many = await coll.updateMany({ 'm.s': 'a' }, { $set: { 'm.s': 'c' } });
    assert.equal(many.matchedCount, 2);
    assert.equal(many.modifiedCount, 2);
    assert.equal(await coll.countDocuments({ 'm.s': 'c' }), 2);
    const update = (statement: Document) => db().command({ update: 'ts_update', updates: [statement] });
    const refused = async (statement: Document) => {
      const reply = await update(statement);
      assert.equal(reply.writeErrors?.[0]?.code, 72, JSON.stringify(statement));
    };
    await refused({ q: { 'm.s': 'b' }, u: { $set: { 'm.s': 'd' } } });
    await refused({ q: { v: 3 }, u: { $set: { 'm.s': 'd' } }, multi: true });
    await refused({ q: { 'm.s': 'b' }, u: { $set: { v: 4 } }, multi: true });
    await refused({ q: { 'm.s': 'b' }, u: { $set: { 'm.s': 'd' } }, multi: true, upsert: true });
    await refused({ q: { 'm.s': 'b' }, u: { m: { s: 'd' } }, multi: true });
    assert.equal(await coll.countDocuments({ 'm.s': 'b' }), 1);
    // A time-series collection without a metaField takes no updates.
    await db().createCollection('ts_update_nometa', { timeseries: { timeField: 't' } });
    await db()
      .collection('ts_update_nometa')
      .insertOne({ t: at(0), v: 1 });
    const reply = await db().command({ update: 'ts_update_nometa', updates: [{ q: {}, u: { $set: { v: 2 } }, multi: true }] });
    assert.equal(reply.writeErrors?.[0]?.code, 72);
  });

  test('deletes (7.0): any filter, one or many; buckets keep the other measurements', async () => {
    await db().createCollection('ts_delete', { timeseries: { timeField: 't', metaField: 'm' } });
    const coll = db().collection('ts_delete');
    await coll.insertMany([1, 2, 3, 4, 5].map((v) => ({ _id: v, t: at(v), m: 'a', v })) as never[]);
    assert.equal((await coll.deleteMany({ v: { $gte: 4 } })).deletedCount, 2);
    assert.equal((await coll.deleteOne({ m: 'a' })).deletedCount, 1);
    assert.deepEqual(
      (await coll.find({}, { sort: { v: 1 } }).toArray()).map((d) => d.v),
      [2, 3],
    );
    const [bucket] = await db().collection('system.buckets.ts_delete').find().toArray();
    assert.deepEqual(bucket.data.v, { 0: 2, 1: 3 });
    assert.equal(bucket.control.max.v, 3);
    assert.equal((await coll.deleteMany({})).deletedCount, 2);
    assert.equal(await db().collection('system.buckets.ts_delete').countDocuments(), 0);
  });

  test('collMod changes the granularity one way only, and sets or removes expireAfterSeconds', async () => {
    await db().createCollection('ts_mod', { timeseries: { timeField: 't', metaField: 'm' } });
    await db().command({ collMod: 'ts_mod', timeseries: { granularity: 'minutes' } });
    assert.deepEqual((await infoOf('ts_mod'))!.options.timeseries, {
      timeField: 't',
      metaField: 'm',
      granularity: 'minutes',
      bucketMaxSpanSeconds: 86400,
    });
    await assert.rejects(db().command({ collMod: 'ts_mod', timeseries: { granularity: 'seconds' } }), { code: 72 });
    await db().command({ collMod: 'ts_mod', expireAfterSeconds: 3600 });
    assert.equal((await infoOf('ts_mod'))!.options.expireAfterSeconds, 3600);
    assert.equal((await infoOf('system.buckets.ts_mod'))!.options.expireAfterSeconds, 3600);
    await db().command({ collMod: 'ts_mod', expireAfterSeconds: 'off' });
    assert.equal((await infoOf('ts_mod'))!.options.expireAfterSeconds, undefined);
    await assert.rejects(db().command({ collMod: 'ts_mod', expireAfterSeconds: -5 }), { code: 72 });
    // The view's pipeline follows the new bucketing.
    const definition = await db()
      .collection('system.views')
      .findOne({ _id: `${db().databaseName}.ts_mod` } as never);
    assert.deepEqual(definition?.pipeline, [{ $_internalUnpackBucket: { timeField: 't', metaField: 'm', bucketMaxSpanSeconds: 86400 } }]);
  });

  test('indexes are listed in the user terms and kept on the buckets in bucket terms', async () => {
    await db().createCollection('ts_indexes', { timeseries: { timeField: 't', metaField: 'm' } });
    const coll = db().collection('ts_indexes');
    await coll.createIndex({ t: -1 }, { name: 't_desc' });
    await coll.createIndex({ 'm.sensor': 1, t: 1 }, { name: 'sensor_t' });
    await coll.createIndex({ v: 1 }, { name: 'v_1' });
    const listed = await coll.listIndexes().toArray();
    assert.deepEqual(
      listed.map((i) => [i.name, i.key]),
      [
        ['m_1_t_1', { m: 1, t: 1 }],
        ['t_desc', { t: -1 }],
        ['sensor_t', { 'm.sensor': 1, t: 1 }],
        ['v_1', { v: 1 }],
      ],
    );
    const onBuckets = await db().collection('system.buckets.ts_indexes').listIndexes().toArray();
    const byName = new Map(onBuckets.map((i) => [i.name, i]));
    assert.deepEqual(byName.get('m_1_t_1')?.key, { meta: 1, 'control.min.t': 1, 'control.max.t': 1 });
    assert.deepEqual(byName.get('t_desc')?.key, { 'control.max.t': -1, 'control.min.t': -1 });
    assert.deepEqual(byName.get('sensor_t')?.key, { 'meta.sensor': 1, 'control.min.t': 1, 'control.max.t': 1 });
    assert.deepEqual(byName.get('v_1')?.key, { 'control.min.v': 1, 'control.max.v': 1 });
    assert.deepEqual(byName.get('v_1')?.originalSpec?.key, { v: 1 });
    await assert.rejects(coll.createIndex({ v: 1 }, { unique: true, name: 'v_unique' }), { code: 72 });
    await coll.dropIndex({ t: -1 } as never);
    assert.ok(!(await coll.listIndexes().toArray()).some((i) => i.name === 't_desc'));
  });

  test('change streams report the time-series collection as a view on its buckets, not its bucket writes', async () => {
    const stream = await openStream(db(), undefined, { showExpandedEvents: true });
    await db().createCollection('ts_events', { timeseries: { timeField: 't', metaField: 'm' } });
    await db()
      .collection('ts_events')
      .insertOne({ t: at(0), m: 1 });
    await db().collection('ts_events').drop();
    await db().collection('ts_after').insertOne({ marker: true });
    const events = (await readEvents(stream, 3)).filter((e) => e.ns?.coll !== 'ts_after' || e.operationType === 'insert');
    const summary = events.map((e) => [e.operationType, e.ns.coll]);
    assert.deepEqual(summary.slice(0, 2), [
      ['create', 'ts_events'],
      ['drop', 'ts_events'],
    ]);
    assert.deepEqual(events[0].operationDescription, {
      viewOn: 'system.buckets.ts_events',
      pipeline: [{ $_internalUnpackBucket: { timeField: 't', metaField: 'm', bucketMaxSpanSeconds: 3600 } }],
    });
    assert.ok(!events.some((e) => e.operationType === 'insert' && e.ns.coll !== 'ts_after'), 'bucket inserts are not reported');
    assert.equal(await infoOf('system.buckets.ts_events'), undefined, 'dropping the collection dropped its buckets');
  });
});
