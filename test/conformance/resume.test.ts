/**
 * Resuming change streams: resumeAfter, startAfter (also past an invalidate),
 * startAtOperationTime, the option errors mongod gives, malformed tokens, history lost when the
 * oplog rolled over, and the driver's watch() resuming by itself.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { type Db, MongoClient, Timestamp } from 'mongodb';
import { conformance } from './harness.js';
import { closeStream, openStream, operationTime, readEvents } from './change-stream-helpers.js';
import { startCluster } from '../cluster/index.js';

conformance('change stream resume', (target) => {
  test('resumeAfter an event continues with the next event; startAtOperationTime starts at a time', async () => {
    const db = target().db;
    const t0 = await operationTime(db);
    const stream = await openStream(db, 'r1');
    await db.collection('r1').insertMany([{ _id: 1 }, { _id: 2 }, { _id: 3 }] as never[]);
    const events = await readEvents(stream, 3);
    await closeStream(stream);
    const resumed = await openStream(db, 'r1', { resumeAfter: events[0]._id });
    const after = await readEvents(resumed, 2);
    await closeStream(resumed);
    assert.deepEqual(
      after.map((e) => e.documentKey._id),
      [2, 3],
    );
    assert.deepEqual(
      after.map((e) => e._id),
      events.slice(1).map((e) => e._id),
      'the same tokens again',
    );
    const atTime = await openStream(db, 'r1', { startAtOperationTime: new Timestamp({ t: t0.t, i: t0.i + 1 }) });
    const all = await readEvents(atTime, 3);
    await closeStream(atTime);
    assert.deepEqual(
      all.map((e) => e.documentKey._id),
      [1, 2, 3],
    );
  });

  test('a postBatchResumeToken resumes exactly after what the stream returned', async () => {
    const db = target().db;
    const stream = await openStream(db, 'r2');
    await db.collection('r2').insertMany([{ _id: 1 }, { _id: 2 }] as never[]);
    await readEvents(stream, 2);
    const token = stream.pbrt;
    await closeStream(stream);
    await db.collection('r2').insertOne({ _id: 3 } as never);
    const resumed = await openStream(db, 'r2', { resumeAfter: token });
    const events = await readEvents(resumed, 1);
    await closeStream(resumed);
    assert.deepEqual(
      events.map((e) => e.documentKey._id),
      [3],
    );
  });

  test('startAfter an invalidate opens a new stream; resumeAfter it is refused', async () => {
    const db = target().db;
    await db.collection('r3').insertOne({ _id: 1 } as never);
    const stream = await openStream(db, 'r3');
    await db.collection('r3').drop();
    const [, invalidate] = await readEvents(stream, 2);
    assert.equal(invalidate.operationType, 'invalidate');
    await db.collection('r3').insertOne({ _id: 2 } as never);
    await assert.rejects(openStream(db, 'r3', { resumeAfter: invalidate._id }), { code: 260, codeName: 'InvalidResumeToken' });
    const after = await openStream(db, 'r3', { startAfter: invalidate._id });
    const events = await readEvents(after, 1);
    await closeStream(after);
    assert.deepEqual(
      events.map((e) => [e.operationType, e.documentKey?._id]),
      [['insert', 2]],
    );
  });

  test('conflicting resume options and malformed tokens get mongod errors', async () => {
    const db = target().db;
    const stream = await openStream(db, 'r4');
    const token = stream.pbrt;
    await closeStream(stream);
    await assert.rejects(openStream(db, 'r4', { resumeAfter: token, startAfter: token }), { code: 50865 });
    await assert.rejects(openStream(db, 'r4', { resumeAfter: token, startAtOperationTime: new Timestamp({ t: 1, i: 1 }) }), {
      code: 40674,
    });
    await assert.rejects(openStream(db, 'r4', { resumeAfter: { _data: 'not hex!' } }), { code: 9, codeName: 'FailedToParse' });
    await assert.rejects(openStream(db, 'r4', { resumeAfter: { data: 'x' } }), { code: 40647 });
  });

  test("the driver's watch() delivers events and resumes by itself after its cursor is killed", async () => {
    const { db } = target();
    const coll = db.collection('r5');
    const changes = coll.watch();
    const seen: number[] = [];
    const reader = (async () => {
      for await (const change of changes) {
        if (change.operationType === 'insert') seen.push(change.documentKey._id as unknown as number);
        if (seen.length === 2) break;
      }
    })();
    // Let the driver open its cursor before writing (it opens lazily on the first read).
    while (!changes.resumeToken) await new Promise((r) => setTimeout(r, 20));
    await coll.insertOne({ _id: 1 } as never);
    while (seen.length < 1) await new Promise((r) => setTimeout(r, 20));
    const cursorId = (changes as unknown as { cursor: { id?: unknown } }).cursor?.id;
    const ns = (changes as unknown as { cursor: { namespace: { collection: string } } }).cursor.namespace.collection;
    await db.command({ killCursors: ns, cursors: [cursorId] });
    await coll.insertOne({ _id: 2 } as never);
    await reader;
    await changes.close();
    assert.deepEqual(seen, [1, 2]);
  });
});

/** Runs `body` against a test cluster of its own with a 1 MB oplog. */
async function withTinyOplog(dbName: string, body: (db: Db) => Promise<void>): Promise<void> {
  const cluster = await startCluster({ oplogSizeMB: 1 });
  const client = await MongoClient.connect(cluster.uri);
  try {
    await body(client.db(dbName));
  } finally {
    await client.close();
    await cluster.stop();
  }
}

conformance('change stream history lost', (target) => {
  test('resuming from a point the oplog no longer holds fails with ChangeStreamHistoryLost', async (t) => {
    if (!target().local) return t.skip('needs a tiny oplog (test cluster oplogSizeMB)');
    await withTinyOplog('lost', async (db) => {
      const stream = await openStream(db, 'c');
      await db.collection('c').insertOne({ _id: 0, pad: 'x' } as never);
      const [first] = await readEvents(stream, 1);
      const t0 = first.clusterTime as Timestamp;
      await closeStream(stream);
      // Push ~2 MB through a 1 MB oplog.
      const pad = 'x'.repeat(10_000);
      await db.collection('c').insertMany(Array.from({ length: 200 }, (_, i) => ({ _id: i + 1, pad })) as never[]);
      const lost = { code: 286, codeName: 'ChangeStreamHistoryLost' };
      await assert.rejects(openStream(db, 'c', { resumeAfter: first._id }), (e: { code: number; errorLabels?: string[] }) => {
        assert.equal(e.code, lost.code);
        assert.ok(e.errorLabels?.includes('NonResumableChangeStreamError'));
        return true;
      });
      await assert.rejects(openStream(db, 'c', { startAtOperationTime: t0 }), lost);
    });
  });

  test('a reader that falls behind a rolling oplog gets ChangeStreamHistoryLost on getMore', async (t) => {
    if (!target().local) return t.skip('needs a tiny oplog (test cluster oplogSizeMB)');
    await withTinyOplog('behind', async (db) => {
      const stream = await openStream(db, 'c', {}, [], { batchSize: 0 });
      const pad = 'x'.repeat(10_000);
      await db.collection('c').insertMany(Array.from({ length: 200 }, (_, i) => ({ _id: i, pad })) as never[]);
      await assert.rejects(readEvents(stream, 1), { code: 286, codeName: 'ChangeStreamHistoryLost' });
    });
  });
});
