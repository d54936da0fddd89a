/**
 * Cursors whose collection goes away: since mongod 4.1.7 (SERVER-37451) a drop or rename no
 * longer kills a query's cursor on the spot; its next getMore restores the plan, looks the
 * collection up by UUID and fails with QueryPlanKilled (175): "collection dropped. UUID <uuid>"
 * or "collection renamed from '<old ns>' to '<new ns>'. UUID <uuid>"
 * (RequiresCollectionStage::doRestoreState; jstests/core/getmore_invalidated_cursors.js). The
 * failed cursor is gone. Change streams are not killed: they report the drop or rename.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { Db, Document } from 'mongodb';
import { conformance } from './harness.js';
import { closeStream, getMore as streamGetMore, openStream, readEvents } from './change-stream-helpers.js';

const QUERY_PLAN_KILLED = { code: 175, codeName: 'QueryPlanKilled' };

async function seed(db: Db, name: string, count = 10): Promise<string> {
  await db.collection(name).insertMany(Array.from({ length: count }, (_, i) => ({ _id: i, x: i })) as never[]);
  const [info] = (await db.listCollections({ name }).toArray()) as Document[];
  // mongod prints a UUID as 8-4-4-4-12 lower-case hex digits.
  const hex = (info.info.uuid.toString('hex') as string).toLowerCase();
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

/** A `find` (or `aggregate`) whose first batch leaves documents on the server; returns the cursor id. */
async function open(db: Db, name: string, aggregate = false): Promise<unknown> {
  const reply = aggregate
    ? await db.command({ aggregate: name, pipeline: [{ $match: { x: { $gte: 0 } } }], cursor: { batchSize: 2 } })
    : await db.command({ find: name, filter: {}, batchSize: 2 });
  assert.equal(reply.cursor.firstBatch.length, 2);
  assert.notEqual(Number(reply.cursor.id), 0, 'the cursor stays open');
  return reply.cursor.id;
}

function getMore(db: Db, name: string, id: unknown): Promise<Document> {
  return db.command({ getMore: id, collection: name, batchSize: 2 });
}

conformance('cursor invalidation', (target) => {
  const admin = () => target().client.db('admin');

  test('a dropped collection kills its find cursor at the next getMore, and the cursor is gone', async () => {
    const db = target().db;
    const uuid = await seed(db, 'dropped');
    const id = await open(db, 'dropped');
    assert.equal((await getMore(db, 'dropped', id)).cursor.nextBatch.length, 2, 'getMore works before the drop');
    await db.collection('dropped').drop();
    await assert.rejects(getMore(db, 'dropped', id), { ...QUERY_PLAN_KILLED, message: `collection dropped. UUID ${uuid}` });
    await assert.rejects(getMore(db, 'dropped', id), { code: 43, codeName: 'CursorNotFound' });
  });

  test('a recreated collection of the same name does not revive the cursor', async () => {
    const db = target().db;
    const uuid = await seed(db, 'recreated');
    const id = await open(db, 'recreated');
    await db.collection('recreated').drop();
    await seed(db, 'recreated');
    await assert.rejects(getMore(db, 'recreated', id), { ...QUERY_PLAN_KILLED, message: `collection dropped. UUID ${uuid}` });
  });

  test('dropDatabase kills the cursors of its collections', async () => {
    const other = target().client.db(`${target().db.databaseName}_dropdb`);
    try {
      const uuid = await seed(other, 'inside');
      const id = await open(other, 'inside');
      await other.dropDatabase();
      await assert.rejects(getMore(other, 'inside', id), { ...QUERY_PLAN_KILLED, message: `collection dropped. UUID ${uuid}` });
    } finally {
      await other.dropDatabase().catch(() => {});
    }
  });

  test('a rename within a database kills the source cursor with "collection renamed"', async () => {
    const db = target().db;
    const name = db.databaseName;
    const uuid = await seed(db, 'renameFrom');
    const id = await open(db, 'renameFrom');
    await admin().command({ renameCollection: `${name}.renameFrom`, to: `${name}.renameTo` });
    await assert.rejects(getMore(db, 'renameFrom', id), {
      ...QUERY_PLAN_KILLED,
      message: `collection renamed from '${name}.renameFrom' to '${name}.renameTo'. UUID ${uuid}`,
    });
  });

  test('a rename with dropTarget kills the cursors on both sides', async () => {
    const db = target().db;
    const name = db.databaseName;
    const sourceUuid = await seed(db, 'rtSource');
    const targetUuid = await seed(db, 'rtTarget');
    const onSource = await open(db, 'rtSource');
    const onTarget = await open(db, 'rtTarget');
    await admin().command({ renameCollection: `${name}.rtSource`, to: `${name}.rtTarget`, dropTarget: true });
    await assert.rejects(getMore(db, 'rtSource', onSource), {
      ...QUERY_PLAN_KILLED,
      message: `collection renamed from '${name}.rtSource' to '${name}.rtTarget'. UUID ${sourceUuid}`,
    });
    await assert.rejects(getMore(db, 'rtTarget', onTarget), { ...QUERY_PLAN_KILLED, message: `collection dropped. UUID ${targetUuid}` });
  });

  test('a rename across databases drops the source: its cursor sees "collection dropped"', async () => {
    const db = target().db;
    const other = target().client.db(`${db.databaseName}_xdb`);
    try {
      const uuid = await seed(db, 'leaving');
      const id = await open(db, 'leaving');
      await admin().command({ renameCollection: `${db.databaseName}.leaving`, to: `${other.databaseName}.arrived` });
      await assert.rejects(getMore(db, 'leaving', id), { ...QUERY_PLAN_KILLED, message: `collection dropped. UUID ${uuid}` });
    } finally {
      await other.dropDatabase().catch(() => {});
    }
  });

  test('an aggregate cursor reading the collection is killed the same way', async () => {
    const db = target().db;
    const uuid = await seed(db, 'aggregated');
    const id = await open(db, 'aggregated', true);
    await db.collection('aggregated').drop();
    await assert.rejects(getMore(db, 'aggregated', id), { ...QUERY_PLAN_KILLED, message: `collection dropped. UUID ${uuid}` });
  });

  test('the driver surfaces it as a MongoServerError while iterating', async () => {
    const db = target().db;
    await seed(db, 'iterated', 20);
    const cursor = db.collection('iterated').find({}, { batchSize: 3 });
    assert.ok(await cursor.next());
    await db.collection('iterated').drop();
    await assert.rejects(cursor.toArray(), { name: 'MongoServerError', ...QUERY_PLAN_KILLED });
    await cursor.close();
  });

  test("other collections' cursors and an unrelated rename leave a cursor alone", async () => {
    const db = target().db;
    const name = db.databaseName;
    await seed(db, 'staying');
    await seed(db, 'bystander');
    const id = await open(db, 'staying');
    await db.collection('bystander').drop();
    await seed(db, 'bystander2');
    await admin().command({ renameCollection: `${name}.bystander2`, to: `${name}.bystander3` });
    let seen = 2;
    for (let cursorId = id; Number(cursorId) !== 0;) {
      const reply = await getMore(db, 'staying', cursorId);
      seen += reply.cursor.nextBatch.length;
      cursorId = reply.cursor.id;
    }
    assert.equal(seen, 10);
  });

  test('a change stream on the collection is not killed: it reports the drop', async () => {
    const db = target().db;
    await seed(db, 'watched');
    const stream = await openStream(db, 'watched');
    try {
      await streamGetMore(stream);
      await db.collection('watched').drop();
      const events = await readEvents(stream, 2);
      assert.deepEqual(
        events.map((e) => e.operationType),
        ['drop', 'invalidate'],
      );
    } finally {
      await closeStream(stream);
    }
  });
});
