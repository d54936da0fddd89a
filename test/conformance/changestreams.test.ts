/**
 * Change events as mongod documents them ("Change Events"): fields, field order and presence per
 * event type, invalidation, scopes, later stages and postBatchResumeToken.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Timestamp } from 'mongodb';
import { conformance } from './harness.js';
import { closeStream, getMore, openStream, readEvents } from './change-stream-helpers.js';

const HEAD = ['_id', 'operationType', 'clusterTime'];

conformance('change stream events', (target) => {
  test('insert, update, replace and delete events have mongod fields in mongod order', async () => {
    const db = target().db;
    const coll = db.collection('crud');
    await coll.insertOne({ _id: 0 as never });
    const stream = await openStream(db, 'crud');
    await coll.insertOne({ _id: 1 as never, a: 1, b: [1, 2, 3] });
    await coll.updateOne({ _id: 1 as never }, { $set: { a: 2 }, $unset: { b: '' } });
    await coll.replaceOne({ _id: 1 as never }, { c: 3 });
    await coll.deleteOne({ _id: 1 as never });
    const events = await readEvents(stream, 4);
    await closeStream(stream);
    assert.deepEqual(
      events.map((e) => e.operationType),
      ['insert', 'update', 'replace', 'delete'],
    );
    const [insert, update, replace, del] = events;
    assert.deepEqual(Object.keys(insert), [...HEAD, 'wallTime', 'fullDocument', 'ns', 'documentKey']);
    assert.deepEqual(insert.fullDocument, { _id: 1, a: 1, b: [1, 2, 3] });
    assert.deepEqual(insert.ns, { db: db.databaseName, coll: 'crud' });
    assert.deepEqual(insert.documentKey, { _id: 1 });
    assert.equal(typeof insert._id._data, 'string');
    assert.ok(insert.clusterTime instanceof Timestamp);
    assert.ok(insert.wallTime instanceof Date);
    assert.deepEqual(Object.keys(update), [...HEAD, 'wallTime', 'ns', 'documentKey', 'updateDescription']);
    assert.deepEqual(update.updateDescription, { updatedFields: { a: 2 }, removedFields: ['b'], truncatedArrays: [] });
    assert.deepEqual(Object.keys(replace), [...HEAD, 'wallTime', 'fullDocument', 'ns', 'documentKey']);
    assert.deepEqual(replace.fullDocument, { _id: 1, c: 3 });
    assert.deepEqual(Object.keys(del), [...HEAD, 'wallTime', 'ns', 'documentKey']);
    assert.deepEqual(del.documentKey, { _id: 1 });
  });

  test('events come in commit order with strictly increasing clusterTime and resume tokens', async () => {
    const db = target().db;
    const stream = await openStream(db, undefined);
    for (let i = 0; i < 30; i++) await db.collection(i % 2 ? 'odd' : 'even').insertOne({ _id: i as never });
    const events = await readEvents(stream, 30);
    await closeStream(stream);
    assert.deepEqual(
      events.map((e) => e.documentKey._id),
      Array.from({ length: 30 }, (_, i) => i),
    );
    for (let i = 1; i < events.length; i++) {
      assert.ok(events[i].clusterTime.greaterThan(events[i - 1].clusterTime), 'clusterTime increases');
      assert.ok(events[i]._id._data > events[i - 1]._id._data, 'resume tokens sort in event order');
    }
  });

  test('fullDocument updateLookup returns the current document with an update event', async () => {
    const db = target().db;
    const coll = db.collection('lookup');
    await coll.insertOne({ _id: 1 as never, n: 1 });
    const stream = await openStream(db, 'lookup', { fullDocument: 'updateLookup' });
    await coll.updateOne({ _id: 1 as never }, { $inc: { n: 1 } });
    const [update] = await readEvents(stream, 1);
    await closeStream(stream);
    assert.deepEqual(Object.keys(update), [...HEAD, 'wallTime', 'fullDocument', 'ns', 'documentKey', 'updateDescription']);
    assert.deepEqual(update.fullDocument, { _id: 1, n: 2 });
  });

  test('with changeStreamPreAndPostImages, required pre- and post-images come with the events', async () => {
    const db = target().db;
    await db.createCollection('images', { changeStreamPreAndPostImages: { enabled: true } });
    const coll = db.collection('images');
    await coll.insertOne({ _id: 1, n: 1 } as never);
    const stream = await openStream(db, 'images', { fullDocument: 'required', fullDocumentBeforeChange: 'required' });
    await coll.updateOne({ _id: 1 } as never, { $set: { n: 2 } });
    await coll.deleteOne({ _id: 1 } as never);
    const [update, del] = await readEvents(stream, 2);
    await closeStream(stream);
    assert.deepEqual(update.fullDocument, { _id: 1, n: 2 });
    assert.deepEqual(update.fullDocumentBeforeChange, { _id: 1, n: 1 });
    assert.deepEqual(del.fullDocumentBeforeChange, { _id: 1, n: 2 });
  });

  test('without pre- and post-images, whenAvailable gives null and required fails with NoMatchingDocument', async () => {
    const db = target().db;
    const coll = db.collection('noimages');
    await coll.insertOne({ _id: 1, n: 1 } as never);
    const available = await openStream(db, 'noimages', { fullDocument: 'whenAvailable', fullDocumentBeforeChange: 'whenAvailable' });
    const required = await openStream(db, 'noimages', { fullDocument: 'required' });
    await coll.updateOne({ _id: 1 } as never, { $set: { n: 2 } });
    const [update] = await readEvents(available, 1);
    await closeStream(available);
    assert.equal(update.fullDocument, null);
    assert.equal(update.fullDocumentBeforeChange, null);
    await assert.rejects(readEvents(required, 1), { code: 47, codeName: 'NoMatchingDocument' });
  });

  test('dropping a watched collection reports drop, then invalidate, and closes the cursor', async () => {
    const db = target().db;
    await db.collection('dropme').insertOne({ _id: 1 as never });
    const stream = await openStream(db, 'dropme');
    await db.collection('dropme').drop();
    const events = await readEvents(stream, 2);
    assert.deepEqual(
      events.map((e) => e.operationType),
      ['drop', 'invalidate'],
    );
    assert.deepEqual(Object.keys(events[0]), [...HEAD, 'wallTime', 'ns']);
    assert.deepEqual(Object.keys(events[1]), [...HEAD, 'wallTime']);
    assert.equal(String(stream.id), '0', 'the invalidated cursor is closed');
  });

  test('renaming a watched collection reports rename with `to` first, then invalidate', async () => {
    const db = target().db;
    await db.collection('renfrom').insertOne({ _id: 1 as never });
    const stream = await openStream(db, 'renfrom');
    await db.collection('renfrom').rename('rento');
    const events = await readEvents(stream, 2);
    assert.deepEqual(
      events.map((e) => e.operationType),
      ['rename', 'invalidate'],
    );
    assert.deepEqual(Object.keys(events[0]), ['to', ...HEAD, 'wallTime', 'ns']);
    assert.deepEqual(events[0].ns, { db: db.databaseName, coll: 'renfrom' });
    assert.deepEqual(events[0].to, { db: db.databaseName, coll: 'rento' });
  });

  test('dropDatabase: a database stream sees each drop, dropDatabase, then invalidate', async () => {
    const db = target().client.db(`${target().db.databaseName}_dropdb`);
    await db.collection('a').insertOne({ _id: 1 as never });
    const stream = await openStream(db, undefined);
    await db.dropDatabase();
    const events = await readEvents(stream, 3);
    assert.deepEqual(
      events.map((e) => e.operationType),
      ['drop', 'dropDatabase', 'invalidate'],
    );
    assert.deepEqual(events[1].ns, { db: db.databaseName });
    assert.deepEqual(Object.keys(events[1]), [...HEAD, 'wallTime', 'ns']);
  });

  test('showExpandedEvents adds create, createIndexes, dropIndexes and modify with collectionUUID and operationDescription', async () => {
    const db = target().db;
    const stream = await openStream(db, undefined, { showExpandedEvents: true });
    await db.createCollection('expanded');
    await db.collection('expanded').createIndex({ a: 1 }, { name: 'a_1' });
    await db.command({ collMod: 'expanded', index: { name: 'a_1', hidden: true } });
    await db.collection('expanded').dropIndex('a_1');
    await db.collection('expanded').insertOne({ _id: 1 as never });
    const events = await readEvents(stream, 5);
    await closeStream(stream);
    assert.deepEqual(
      events.map((e) => e.operationType),
      ['create', 'createIndexes', 'modify', 'dropIndexes', 'insert'],
    );
    const [create, createIndexes, modify, dropIndexes, insert] = events;
    const uuid = create.collectionUUID;
    assert.ok(uuid, 'collectionUUID');
    for (const e of events) assert.deepEqual(e.collectionUUID, uuid);
    assert.deepEqual(Object.keys(create).slice(0, 5), [...HEAD, 'collectionUUID', 'wallTime']);
    assert.deepEqual(create.operationDescription.idIndex, { v: 2, key: { _id: 1 }, name: '_id_' });
    assert.equal(createIndexes.operationDescription.indexes[0].name, 'a_1');
    assert.deepEqual(createIndexes.operationDescription.indexes[0].key, { a: 1 });
    assert.equal(modify.operationDescription.index.hidden, true);
    assert.equal(dropIndexes.operationDescription.indexes[0].name, 'a_1');
    assert.deepEqual(Object.keys(insert), [...HEAD, 'collectionUUID', 'wallTime', 'fullDocument', 'ns', 'documentKey']);
  });

  test('expanded events are not shown without showExpandedEvents', async () => {
    const db = target().db;
    const stream = await openStream(db, undefined);
    await db.createCollection('plain');
    await db.collection('plain').createIndex({ b: 1 });
    await db.collection('plain').insertOne({ _id: 1 as never });
    const events = await readEvents(stream, 1);
    await closeStream(stream);
    assert.deepEqual(
      events.map((e) => e.operationType),
      ['insert'],
    );
    assert.equal(events[0].collectionUUID, undefined);
  });

  test('a cluster-wide stream sees user databases but never admin, config or local', async () => {
    const { client, db } = target();
    const admin = client.db('admin');
    const stream = await openStream(admin, undefined, { allChangesForCluster: true });
    await client
      .db('admin')
      .collection('ferry_conformance_internal')
      .insertOne({ _id: 1 as never });
    await db.collection('cluster').insertOne({ _id: 2 as never });
    const events = await readEvents(stream, 1);
    await closeStream(stream);
    await client.db('admin').collection('ferry_conformance_internal').drop();
    assert.deepEqual(
      events.map((e) => e.ns),
      [{ db: db.databaseName, coll: 'cluster' }],
    );
  });

  test('scopes are checked as mongod checks them', async () => {
    const { client, db } = target();
    await assert.rejects(openStream(db, undefined, { allChangesForCluster: true }), { code: 72, codeName: 'InvalidOptions' });
    await assert.rejects(openStream(client.db('admin'), undefined), { code: 73, codeName: 'InvalidNamespace' });
    await assert.rejects(openStream(client.db('local'), undefined), { code: 73, codeName: 'InvalidNamespace' });
    await assert.rejects(openStream(db, 'c', { fullDocument: 'sometimes' }), { code: 2, codeName: 'BadValue' });
  });

  test('later stages: $match filters events, $project reshapes them, other stages are refused', async () => {
    const db = target().db;
    const coll = db.collection('stages');
    const stream = await openStream(db, 'stages', {}, [
      { $match: { 'fullDocument.keep': true } },
      { $project: { operationType: 1, 'fullDocument.n': 1 } },
    ]);
    await coll.insertMany([
      { n: 1, keep: false },
      { n: 2, keep: true },
    ]);
    const events = await readEvents(stream, 1);
    await closeStream(stream);
    assert.equal(events.length, 1);
    assert.deepEqual(Object.keys(events[0]).sort(), ['_id', 'fullDocument', 'operationType']);
    assert.deepEqual(events[0].fullDocument, { n: 2 });
    await assert.rejects(openStream(db, 'stages', {}, [{ $group: { _id: null } }]), { code: 20, codeName: 'IllegalOperation' });
  });

  test('a batch cut short by batchSize ends its postBatchResumeToken at its last event', async () => {
    const db = target().db;
    const stream = await openStream(db, 'batched');
    await db.collection('batched').insertMany([{ _id: 1 }, { _id: 2 }, { _id: 3 }, { _id: 4 }, { _id: 5 }] as never[]);
    const first = await getMore(stream, 500, 2);
    assert.deepEqual(
      first.map((e) => e.documentKey._id),
      [1, 2],
    );
    assert.deepEqual(stream.pbrt, first[1]._id, 'resuming from it cannot skip events 3-5');
    const rest = await readEvents(stream, 3);
    await closeStream(stream);
    assert.deepEqual(
      rest.map((e) => e.documentKey._id),
      [3, 4, 5],
    );
  });

  test('every batch carries a postBatchResumeToken, advanced by appendOplogNote while idle', async () => {
    const { client, db } = target();
    const stream = await openStream(db, 'idle');
    assert.equal(typeof stream.pbrt?._data, 'string', 'first batch has a postBatchResumeToken');
    const first = stream.pbrt._data as string;
    // Two notes: the first may land exactly at the stream's start time.
    await client.db('admin').command({ appendOplogNote: 1, data: { ferry: 'conformance' } });
    await client.db('admin').command({ appendOplogNote: 1, data: { ferry: 'conformance' } });
    const batch = await getMore(stream, 300);
    await closeStream(stream);
    assert.deepEqual(batch, []);
    assert.ok((stream.pbrt._data as string) > first, 'the token moved past the no-op');
  });
});

conformance('change stream idle progress', (target) => {
  test('the periodic no-op writer advances an idle stream', async (t) => {
    if (!target().local) return t.skip('needs the test cluster noopIntervalMs knob');
    const { startCluster } = await import('../cluster/index.js');
    const { MongoClient } = await import('mongodb');
    const cluster = await startCluster({ noopIntervalMs: 50 });
    const client = await MongoClient.connect(cluster.uri);
    try {
      const stream = await openStream(client.db('idle'), undefined);
      const first = stream.pbrt._data as string;
      await getMore(stream, 300);
      assert.ok((stream.pbrt._data as string) > first);
    } finally {
      await client.close();
      await cluster.stop();
    }
  });
});
