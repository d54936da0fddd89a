/**
 * postBatchResumeToken advances with the oplog, as mongod's does
 * (jstests/change_streams/report_post_batch_resume_token.js): a batch that ends because the scan
 * reached the end of the oplog reports a high-water mark at the newest entry it read, past the
 * writes the stream filtered out, also after its last event; a batch cut short by batchSize ends
 * at its last event.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { Document, Timestamp } from 'mongodb';
import { conformance } from './harness.js';
import { closeStream, getMore, openStream, readEvents } from './change-stream-helpers.js';

/** The cluster time a token starts with (mongod's and the test cluster's: `82` + t + i, big-endian). */
function tokenTime(token: Document): { t: number; i: number } {
  const bytes = Buffer.from(token._data as string, 'hex');
  return { t: bytes.readUInt32BE(1), i: bytes.readUInt32BE(5) };
}

function notBefore(token: Document, time: Timestamp): boolean {
  const at = tokenTime(token);
  return at.t > time.t || (at.t === time.t && at.i >= time.i);
}

conformance('postBatchResumeToken', (target) => {
  test('a getMore that returns only filtered-out writes reports a token at the last of them', async () => {
    const db = target().db;
    const stream = await openStream(db, 'pbrt_watched');
    await db.collection('pbrt_watched').insertOne({ _id: 1 } as never);
    const [event] = await readEvents(stream, 1);
    const afterEvent = stream.pbrt;
    let last: Timestamp | undefined;
    for (let i = 0; i < 3; i++) last = (await db.command({ insert: 'pbrt_other', documents: [{ i }] })).operationTime as Timestamp;
    // One getMore scans the unrelated inserts (mongod may need a second while they become visible).
    const batch: Document[] = [];
    for (let attempt = 0; attempt < 5 && !notBefore(stream.pbrt, last!); attempt++) batch.push(...(await getMore(stream, 300)));
    await closeStream(stream);
    assert.deepEqual(batch, [], 'no event: the writes were to another collection');
    assert.ok((stream.pbrt._data as string) > (afterEvent._data as string), 'the token moved past the event');
    assert.ok(notBefore(stream.pbrt, last!), `the token reached the last unrelated write: ${JSON.stringify(tokenTime(stream.pbrt))}`);
    assert.ok((stream.pbrt._data as string) > (event._id._data as string));
  });

  test('a batch whose last event is followed by filtered-out writes reports a token past them', async () => {
    const db = target().db;
    const stream = await openStream(db, 'pbrt_mixed');
    await db.collection('pbrt_mixed').insertOne({ _id: 1 } as never);
    let last: Timestamp | undefined;
    for (let i = 0; i < 3; i++) last = (await db.command({ insert: 'pbrt_unrelated', documents: [{ i }] })).operationTime as Timestamp;
    const events: Document[] = [];
    for (let attempt = 0; attempt < 5 && (events.length === 0 || !notBefore(stream.pbrt, last!)); attempt++) {
      events.push(...(await getMore(stream, 300)));
    }
    await closeStream(stream);
    assert.deepEqual(
      events.map((e) => e.documentKey._id),
      [1],
    );
    assert.ok((stream.pbrt._data as string) > (events[0]._id._data as string), 'the token is not stuck at the event');
    assert.ok(notBefore(stream.pbrt, last!), 'the token reached the last unrelated write');
  });

  test('writes filtered out by a $match stage advance the token too', async () => {
    const db = target().db;
    const stream = await openStream(db, 'pbrt_match', {}, [{ $match: { operationType: 'delete' } }]);
    let last: Timestamp | undefined;
    for (let i = 0; i < 3; i++) last = (await db.command({ insert: 'pbrt_match', documents: [{ i }] })).operationTime as Timestamp;
    const batch: Document[] = [];
    for (let attempt = 0; attempt < 5 && !notBefore(stream.pbrt, last!); attempt++) batch.push(...(await getMore(stream, 300)));
    await closeStream(stream);
    assert.deepEqual(batch, []);
    assert.ok(notBefore(stream.pbrt, last!));
  });

  test('a resumed stream with batchSize 0 reports the token it resumed from; the events follow', async () => {
    const db = target().db;
    const stream = await openStream(db, 'pbrt_resume');
    await db.collection('pbrt_resume').insertMany([{ _id: 1 }, { _id: 2 }] as never[]);
    const [first] = await readEvents(stream, 1);
    await closeStream(stream);
    const resumed = await openStream(db, 'pbrt_resume', { resumeAfter: first._id }, [], { batchSize: 0 });
    assert.deepEqual(resumed.firstBatch, []);
    assert.deepEqual(resumed.pbrt, first._id);
    const next = await readEvents(resumed, 1);
    await closeStream(resumed);
    assert.deepEqual(
      next.map((e) => e.documentKey._id),
      [2],
    );
  });
});
