/**
 * Multi-document transactions: atomic visibility, abort, change events sharing the commit's
 * clusterTime with lsid/txnNumber, mongod's errors and labels, write conflicts, lifetime limit.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { MongoClient, type MongoServerError } from 'mongodb';
import { conformance } from './harness.js';
import { closeStream, openStream, readEvents } from './change-stream-helpers.js';
import { startCluster } from '../cluster/index.js';
import { sessionsOf } from '../cluster/txn/sessions.js';

conformance('transactions', (target) => {
  test('writes are invisible to others until commit, then visible together', async () => {
    const { client, db } = target();
    const coll = db.collection('atomic');
    await coll.insertOne({ _id: 0 } as never);
    const session = client.startSession();
    try {
      session.startTransaction();
      await coll.insertOne({ _id: 1 } as never, { session });
      await coll.insertOne({ _id: 2 } as never, { session });
      assert.equal((await coll.find({}, { session }).toArray()).length, 3, 'the transaction reads its own writes');
      assert.deepEqual(
        (await coll.find({}).toArray()).map((d) => d._id),
        [0],
        'others do not see them',
      );
      await session.commitTransaction();
      assert.deepEqual(
        (await coll.find({}).sort({ _id: 1 }).toArray()).map((d) => d._id),
        [0, 1, 2],
      );
    } finally {
      await session.endSession();
    }
  });

  test('an aborted transaction leaves nothing behind, and its number cannot be continued', async () => {
    const { client, db } = target();
    const coll = db.collection('aborted');
    const session = client.startSession();
    try {
      session.startTransaction();
      await coll.insertOne({ _id: 1 } as never, { session });
      await session.abortTransaction();
      assert.equal((await coll.find({}).toArray()).length, 0);
      const txnNumber = (session as unknown as { serverSession: { txnNumber: number } }).serverSession.txnNumber;
      const err = await db
        .command({ insert: 'aborted', documents: [{ _id: 2 }], autocommit: false, txnNumber: BigInt(txnNumber) as never }, { session })
        .then(
          () => undefined,
          (e: MongoServerError) => e,
        );
      assert.ok(err, 'continuing an aborted transaction fails');
      assert.equal(err.code, 251);
      assert.equal(err.codeName, 'NoSuchTransaction');
      assert.ok(err.errorLabels?.includes('TransientTransactionError'));
    } finally {
      await session.endSession();
    }
  });

  test('commit is retryable; abort after commit is TransactionCommitted', async () => {
    const { client, db } = target();
    const session = client.startSession();
    try {
      session.startTransaction();
      await db.collection('retrycommit').insertOne({ _id: 1 } as never, { session });
      await session.commitTransaction();
      const txnNumber = (session as unknown as { serverSession: { txnNumber: number } }).serverSession.txnNumber;
      const admin = client.db('admin');
      const txn = { txnNumber: BigInt(txnNumber) as never, autocommit: false };
      assert.equal((await admin.command({ commitTransaction: 1, ...txn }, { session })).ok, 1);
      await assert.rejects(admin.command({ abortTransaction: 1, ...txn }, { session }), { code: 256, codeName: 'TransactionCommitted' });
    } finally {
      await session.endSession();
    }
  });

  test('a transaction commits as one set of events sharing clusterTime, with lsid and txnNumber first', async () => {
    const { client, db } = target();
    const stream = await openStream(db, undefined);
    const session = client.startSession();
    try {
      await session.withTransaction(async () => {
        await db.collection('txnevents').insertOne({ _id: 1 } as never, { session });
        await db.collection('txnevents2').insertOne({ _id: 2 } as never, { session });
      });
    } finally {
      await session.endSession();
    }
    const events = await readEvents(stream, 2);
    await closeStream(stream);
    assert.deepEqual(
      events.map((e) => e.ns.coll),
      ['txnevents', 'txnevents2'],
    );
    assert.ok(events[0].clusterTime.equals(events[1].clusterTime), 'one commit time');
    assert.ok(events[1]._id._data > events[0]._id._data, 'tokens still ordered within the transaction');
    for (const e of events) {
      assert.deepEqual(Object.keys(e).slice(0, 4), ['txnNumber', 'lsid', '_id', 'operationType']);
      assert.ok(e.lsid.id, 'lsid.id');
    }
  });

  test('a second transaction writing the same document gets WriteConflict (TransientTransactionError)', async () => {
    const { client, db } = target();
    const coll = db.collection('conflict');
    await coll.insertOne({ _id: 1, n: 0 } as never);
    const first = client.startSession();
    const second = client.startSession();
    try {
      first.startTransaction();
      second.startTransaction();
      await coll.updateOne({ _id: 1 } as never, { $inc: { n: 1 } }, { session: first });
      const err = await coll.updateOne({ _id: 1 } as never, { $inc: { n: 10 } }, { session: second }).then(
        () => undefined,
        (e: MongoServerError) => e,
      );
      assert.ok(err, 'the second writer fails');
      assert.equal(err.code, 112);
      assert.ok(err.errorLabels?.includes('TransientTransactionError'));
      await second.abortTransaction().catch(() => {});
      await first.commitTransaction();
      assert.equal((await coll.findOne({ _id: 1 } as never))?.n, 1);
    } finally {
      await first.endSession();
      await second.endSession();
    }
  });

  test('a transaction reads from its snapshot, and writing a document changed since then conflicts', async () => {
    const { client, db } = target();
    const coll = db.collection('snapshot');
    await coll.insertOne({ _id: 1, n: 0 } as never);
    const session = client.startSession();
    try {
      session.startTransaction();
      assert.equal((await coll.findOne({ _id: 1 } as never, { session }))?.n, 0);
      await coll.updateOne({ _id: 1 } as never, { $set: { n: 5 } });
      await coll.insertOne({ _id: 2 } as never);
      assert.equal((await coll.findOne({ _id: 1 } as never, { session }))?.n, 0, 'still the snapshot version');
      assert.equal((await coll.find({}, { session }).toArray()).length, 1, 'later inserts are not in the snapshot');
      const err = await coll.updateOne({ _id: 1 } as never, { $inc: { n: 1 } }, { session }).then(
        () => undefined,
        (e: MongoServerError) => e,
      );
      assert.equal(err?.code, 112);
      assert.ok(err?.errorLabels?.includes('TransientTransactionError'));
      await session.abortTransaction().catch(() => {});
      assert.equal((await coll.findOne({ _id: 1 } as never))?.n, 5);
    } finally {
      await session.endSession();
    }
  });

  test('commands mongod refuses inside a transaction', async () => {
    const { client, db } = target();
    const session = client.startSession();
    try {
      session.startTransaction();
      await db.collection('refuse').insertOne({ _id: 1 } as never, { session });
      await assert.rejects(db.command({ count: 'refuse' }, { session }), { code: 263, codeName: 'OperationNotSupportedInTransaction' });
      await session.abortTransaction().catch(() => {});
    } finally {
      await session.endSession();
    }
  });
});

conformance('transaction lifetime', (target) => {
  test('a transaction older than transactionLifetimeLimitSeconds is aborted', async (t) => {
    if (!target().local) return t.skip('shortens the lifetime limit through the test cluster');
    const cluster = await startCluster();
    sessionsOf(cluster.server.instance).transactionLifetimeSeconds = 0.2;
    const client = await MongoClient.connect(cluster.uri);
    const session = client.startSession();
    try {
      const coll = client.db('lifetime').collection('c');
      session.startTransaction();
      await coll.insertOne({ _id: 1 } as never, { session });
      await new Promise((r) => setTimeout(r, 400));
      await assert.rejects(session.commitTransaction(), { code: 251, codeName: 'NoSuchTransaction' });
      assert.equal((await coll.find({}).toArray()).length, 0);
    } finally {
      await session.endSession();
      await client.close();
      await cluster.stop();
    }
  });
});
