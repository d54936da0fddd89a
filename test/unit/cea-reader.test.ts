import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Long, serialize, Timestamp, type Document } from 'bson';
import { MongoNetworkError, MongoServerError, type MongoClient } from 'mongodb';
import { ChangeStreamReader } from '../../src/cluster/change-stream.js';
import { pino } from 'pino';
import type { Logger } from '../../src/log/logger.js';
import { ChangeStreamHistoryLost } from '../../src/errors/errors.js';

const logger = pino({ level: 'silent' }) as unknown as Logger;

function token(t: number): Document {
  return { _data: `82${t.toString(16).padStart(8, '0')}${'1'.padStart(8, '0')}04` };
}

/** A cursor reply as a server sends it; `cursor` stays bytes as with `raw: true`. */
function reply(events: Document[], postBatchResumeToken: Document, first: boolean, id = 7): Document {
  const cursor = serialize({
    [first ? 'firstBatch' : 'nextBatch']: events,
    postBatchResumeToken,
    id: Long.fromNumber(id),
    ns: 'admin.$cmd.aggregate',
  });
  return { cursor: new Uint8Array(cursor), ok: 1, operationTime: new Timestamp({ t: 500, i: 1 }) };
}

/** A client whose admin commands answer from a script; records what it was sent. */
function fakeSource(script: ((command: Document) => Document)[]): { client: MongoClient; sent: Document[] } {
  const sent: Document[] = [];
  const client = {
    startSession: () => ({ endSession: async () => undefined }),
    db: () => ({
      command: async (command: Document) => {
        sent.push(command);
        const next = script.shift();
        if (next === undefined) throw new Error('no more replies scripted');
        return next(command);
      },
    }),
  } as unknown as MongoClient;
  return { client, sent };
}

describe('change stream reader', () => {
  it('opens with the start point, continues with getMore and hands out each event as raw bytes', async () => {
    const { client, sent } = fakeSource([
      () => reply([{ _id: token(100), operationType: 'insert' }], token(100), true),
      () =>
        reply(
          [
            { _id: token(101), operationType: 'delete' },
            { _id: token(102), operationType: 'drop' },
          ],
          token(102),
          false,
        ),
    ]);
    const reader = new ChangeStreamReader({
      client,
      updateLookup: true,
      start: { startAtOperationTime: new Timestamp({ t: 99, i: 1 }) },
      batchSize: 10,
      maxAwaitMs: 5,
      logger,
    });
    const first = await reader.next();
    assert.equal(first.events.length, 1);
    assert.equal(first.resumeTime!.getHighBits(), 100);
    assert.equal(first.sourceTime!.getHighBits(), 500, 'the reply’s operation time is the source’s latest');
    const second = await reader.next();
    assert.equal(second.events.length, 2);
    assert.ok(Buffer.from(second.events[1]!).includes(Buffer.from('drop')));
    const stage = sent[0]!.pipeline[0].$changeStream;
    assert.deepEqual(Object.keys(stage).sort(), ['allChangesForCluster', 'fullDocument', 'showExpandedEvents', 'startAtOperationTime']);
    assert.equal(stage.fullDocument, 'updateLookup');
    assert.equal(sent[1]!.getMore.toString(), '7');
    assert.equal(sent[1]!.maxTimeMS, 5);
  });

  it('without updateLookup or a start, opens at the present and asks for no document lookups (the verifier’s streams)', async () => {
    const { client, sent } = fakeSource([() => reply([], token(100), true), () => reply([], token(101), true)]);
    const reader = new ChangeStreamReader({ client, batchSize: 10, maxAwaitMs: 5, logger });
    assert.equal((await reader.next()).resumeTime!.getHighBits(), 100);
    assert.deepEqual(Object.keys(sent[0]!.pipeline[0].$changeStream).sort(), ['allChangesForCluster', 'showExpandedEvents']);
    await reader.next();
    assert.equal(sent[1]!.getMore.toString(), '7', 'continued with getMore');
  });

  it('waits as long as asked for one getMore, and its own maxAwaitMs otherwise', async () => {
    const { client, sent } = fakeSource([
      () => reply([], token(100), true),
      () => reply([], token(101), false),
      () => reply([], token(102), false),
    ]);
    const reader = new ChangeStreamReader({ client, batchSize: 10, maxAwaitMs: 1000, logger });
    await reader.next();
    await reader.next(200);
    await reader.next();
    assert.deepEqual(
      sent.slice(1).map((command) => command.maxTimeMS),
      [200, 1000],
    );
  });

  it('reopens after the last batch handed out when the connection fails, so nothing is read twice or skipped', async () => {
    const { client, sent } = fakeSource([
      () => reply([{ _id: token(100), operationType: 'insert' }], token(100), true),
      () => {
        throw new MongoNetworkError('connection reset');
      },
      () => reply([{ _id: token(101), operationType: 'insert' }], token(101), true),
    ]);
    const reader = new ChangeStreamReader({ client, start: { startAfter: token(90) }, batchSize: 10, maxAwaitMs: 5, logger });
    await reader.next();
    const after = await reader.next();
    assert.equal(after.events.length, 1);
    assert.deepEqual(sent[2]!.pipeline[0].$changeStream.startAfter, token(100));
  });

  it('turns ChangeStreamHistoryLost into a fatal error that says what to do', async () => {
    const lost = new MongoServerError({
      ok: 0,
      code: 286,
      codeName: 'ChangeStreamHistoryLost',
      errmsg: 'Resume of change stream was not possible',
    });
    const { client } = fakeSource([
      () => {
        throw lost;
      },
    ]);
    const reader = new ChangeStreamReader({ client, start: { startAfter: token(90) }, batchSize: 10, maxAwaitMs: 5, logger });
    await assert.rejects(
      reader.next(),
      (error: unknown) => error instanceof ChangeStreamHistoryLost && /oplog/.test((error as Error).message),
    );
  });

  it('gives up on errors that are not resumable', async () => {
    const { client } = fakeSource([
      () => {
        throw new MongoServerError({ ok: 0, code: 13, codeName: 'Unauthorized', errmsg: 'not authorized' });
      },
    ]);
    const reader = new ChangeStreamReader({ client, start: { startAfter: token(90) }, batchSize: 10, maxAwaitMs: 5, logger });
    await assert.rejects(reader.next(), /not authorized/);
  });
});
