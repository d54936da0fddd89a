/** Retryable writes: a retried write returns the recorded result; older txnNumbers are refused. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Long, MongoClient } from 'mongodb';
import { conformance } from './harness.js';

/**
 * Runs `body` with a client of its own: the sessions used here get txnNumbers the driver did
 * not choose, so they must not go back to a shared client's session pool.
 */
async function withOwnClient(uri: string, body: (client: MongoClient) => Promise<void>): Promise<void> {
  const client = await MongoClient.connect(uri);
  try {
    await body(client);
  } finally {
    await client.close();
  }
}

conformance('sessions and retryable writes', (target) => {
  test('a retried insert (same lsid and txnNumber) is not executed twice', async () => {
    await withOwnClient(target().uri, async (client) => {
      const db = client.db(target().db.databaseName);
      const session = client.startSession();
      try {
        const insert = { insert: 'retry', documents: [{ _id: 1 }, { _id: 2 }], txnNumber: Long.fromNumber(7) };
        const first = await db.command(insert, { session });
        const again = await db.command(insert, { session });
        assert.equal(first.n, 2);
        assert.equal(again.n, 2, 'the recorded result, not a duplicate key error');
        assert.equal(again.writeErrors, undefined);
        assert.equal((await db.collection('retry').find({}).toArray()).length, 2);
      } finally {
        await session.endSession();
      }
    });
  });

  test('a txnNumber older than the session latest fails with TransactionTooOld', async () => {
    await withOwnClient(target().uri, async (client) => {
      const db = client.db(target().db.databaseName);
      const session = client.startSession();
      try {
        await db.command({ insert: 'tooold', documents: [{ _id: 1 }], txnNumber: Long.fromNumber(5) }, { session });
        await assert.rejects(db.command({ insert: 'tooold', documents: [{ _id: 2 }], txnNumber: Long.fromNumber(4) }, { session }), {
          code: 225,
          codeName: 'TransactionTooOld',
        });
        assert.equal((await db.collection('tooold').find({}).toArray()).length, 1);
      } finally {
        await session.endSession();
      }
    });
  });

  test('endSessions ends the session and its transaction', async (t) => {
    // mongod reaps ended sessions in the background; the test cluster ends them at once.
    if (!target().local) return t.skip('mongod ends sessions asynchronously');
    await withOwnClient(target().uri, async (client) => {
      const db = client.db(target().db.databaseName);
      const session = client.startSession();
      session.startTransaction();
      await db.collection('ended').insertOne({ _id: 1 } as never, { session });
      await client.db('admin').command({ endSessions: [session.id] });
      await assert.rejects(session.commitTransaction(), { code: 251, codeName: 'NoSuchTransaction' });
      assert.equal((await db.collection('ended').find({}).toArray()).length, 0);
      await session.endSession();
    });
  });
});
