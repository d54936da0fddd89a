/**
 * The `failCommand` fail point, as drivers' test suites use it (jstests/core/failcommand_failpoint.js,
 * the driver specifications' "failCommand" fail point): modes `times`, `skip`, `alwaysOn`, `off`;
 * `errorCode` (+ `errorExtraInfo`), `errorLabels` and mongod's own labels, `closeConnection`,
 * `blockConnection`, `writeConcernError`, `appName`, `namespace`. A real deployment must run with
 * `--setParameter enableTestCommands=1`; the suite is skipped there otherwise.
 */
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { performance } from 'node:perf_hooks';
import { type Document, Long, MongoClient, MongoNetworkError, MongoServerError, MongoWriteConcernError } from 'mongodb';
import { conformance, type Target } from './harness.js';
import { closeStream, openStream } from './change-stream-helpers.js';

conformance(
  'failCommand fail point',
  (target) => {
    /** Sets the fail point; false (and the test skipped) when the deployment refuses test commands. */
    async function failCommand(t: TestContext, mode: unknown, data: Document = {}): Promise<boolean> {
      try {
        await target().client.db('admin').command({ configureFailPoint: 'failCommand', mode, data });
        return true;
      } catch (e) {
        if (e instanceof MongoServerError && e.code === 59) {
          t.skip('the deployment refuses configureFailPoint: start it with --setParameter enableTestCommands=1');
          return false;
        }
        throw e;
      }
    }

    async function off(): Promise<void> {
      await target().client.db('admin').command({ configureFailPoint: 'failCommand', mode: 'off' });
    }

    async function failure(run: Promise<unknown>): Promise<MongoServerError> {
      const error = await run.then(
        () => undefined,
        (e: unknown) => e,
      );
      assert.ok(error instanceof MongoServerError, `expected a server error, got ${String(error)}`);
      return error;
    }

    test('{times: n} fails the listed command n times with the code and mongod message', async (t) => {
      const db = target().db;
      if (!(await failCommand(t, { times: 2 }, { failCommands: ['count'], errorCode: 2 }))) return;
      try {
        await db.command({ ping: 1 }); // not listed: neither failed nor counted
        for (let i = 0; i < 2; i++) {
          const error = await failure(db.command({ count: 'fp_times' }));
          assert.equal(error.code, 2);
          assert.equal(error.codeName, 'BadValue');
          assert.equal(error.message, "Failing command via 'failCommand' failpoint");
        }
        assert.equal((await db.command({ count: 'fp_times' })).n, 0, 'the third runs');
      } finally {
        await off();
      }
    });

    test('{skip: n} lets n matching commands through, then fails every one; off ends it', async (t) => {
      const db = target().db;
      if (!(await failCommand(t, { skip: 1 }, { failCommands: ['count'], errorCode: 96 }))) return;
      try {
        await db.command({ count: 'fp_skip' });
        for (let i = 0; i < 2; i++) assert.equal((await failure(db.command({ count: 'fp_skip' }))).codeName, 'OperationFailed');
      } finally {
        await off();
      }
      await db.command({ count: 'fp_skip' });
    });

    test('configureFailPoint reports how often the fail point fired; it is never failed itself', async (t) => {
      const admin = target().client.db('admin');
      if (!(await failCommand(t, 'alwaysOn', { failCommands: ['count', 'configureFailPoint'], errorCode: 2 }))) return;
      try {
        const before = (
          await admin.command({ configureFailPoint: 'failCommand', mode: 'alwaysOn', data: { failCommands: ['count'], errorCode: 2 } })
        ).count as number;
        await failure(target().db.command({ count: 'fp_count' }));
        const after = (
          await admin.command({ configureFailPoint: 'failCommand', mode: 'alwaysOn', data: { failCommands: ['count'], errorCode: 2 } })
        ).count as number;
        assert.equal(after, before + 1);
      } finally {
        await off();
      }
    });

    test('errorExtraInfo fields join the error; errorLabels replace the labels, [] removes them', async (t) => {
      const db = target().db;
      if (
        !(await failCommand(
          t,
          { times: 1 },
          { failCommands: ['count'], errorCode: 2, errorExtraInfo: { note: 'extra' }, errorLabels: ['Foo'] },
        ))
      ) {
        return;
      }
      try {
        const error = await failure(db.command({ count: 'fp_labels' }));
        assert.equal(error.errorResponse.note, 'extra');
        assert.deepEqual(error.errorLabels, ['Foo']);
        // A retryable write failing with HostUnreachable is normally labelled RetryableWriteError.
        await failCommand(t, { times: 1 }, { failCommands: ['insert'], errorCode: 6, errorLabels: [] });
        const session = target().client.startSession();
        const error2 = await failure(db.command({ insert: 'fp_labels', documents: [{}], txnNumber: Long.fromNumber(1) }, { session }));
        await session.endSession();
        assert.deepEqual(error2.errorLabels, []);
      } finally {
        await off();
      }
    });

    test('a retryable write failing with a retryable code is labelled RetryableWriteError, and the driver retries it', async (t) => {
      const { client, db } = target();
      if (!(await failCommand(t, { times: 1 }, { failCommands: ['insert'], errorCode: 6 }))) return;
      const session = client.startSession();
      try {
        const error = await failure(
          db.command({ insert: 'fp_retry', documents: [{ _id: 0 }], txnNumber: Long.fromNumber(1) }, { session }),
        );
        assert.equal(error.codeName, 'HostUnreachable');
        assert.deepEqual(error.errorLabels, ['RetryableWriteError']);
        await failCommand(t, { times: 1 }, { failCommands: ['insert'], errorCode: 6 });
        await db.collection('fp_retry').insertOne({ _id: 1 } as Document);
        assert.deepEqual(await db.collection('fp_retry').find().sort({ _id: 1 }).toArray(), [{ _id: 1 }], 'inserted once, by the retry');
        // The same code outside a retryable write has no label.
        await failCommand(t, { times: 1 }, { failCommands: ['count'], errorCode: 6 });
        assert.deepEqual((await failure(db.command({ count: 'fp_retry' }))).errorLabels, []);
      } finally {
        await session.endSession();
        await off();
      }
    });

    test('a change-stream getMore failing with a retryable code is labelled ResumableChangeStreamError', async (t) => {
      const db = target().db;
      const stream = await openStream(db, 'fp_stream');
      if (!(await failCommand(t, { times: 1 }, { failCommands: ['getMore'], errorCode: 6 }))) return;
      try {
        const error = await failure(db.command({ getMore: stream.id as Long, collection: stream.collection, maxTimeMS: 100 }));
        assert.deepEqual(error.errorLabels, ['ResumableChangeStreamError']);
      } finally {
        await off();
        await closeStream(stream);
      }
    });

    test('closeConnection drops the connection without a reply; the next command works', async (t) => {
      const db = target().db;
      if (!(await failCommand(t, { times: 1 }, { failCommands: ['count'], closeConnection: true }))) return;
      try {
        await assert.rejects(db.command({ count: 'fp_close' }), (e: unknown) => e instanceof MongoNetworkError);
        assert.equal((await db.command({ count: 'fp_close' })).ok, 1);
      } finally {
        await off();
      }
    });

    test('blockConnection delays the command by blockTimeMS, then it runs (or fails with errorCode)', async (t) => {
      const db = target().db;
      if (!(await failCommand(t, { times: 1 }, { failCommands: ['count'], blockConnection: true, blockTimeMS: 400 }))) return;
      try {
        const started = performance.now();
        assert.equal((await db.command({ count: 'fp_block' })).ok, 1);
        assert.ok(performance.now() - started >= 350, 'the reply waited for blockTimeMS');
        await failCommand(t, { times: 1 }, { failCommands: ['count'], blockConnection: true, blockTimeMS: 10, errorCode: 2 });
        assert.equal((await failure(db.command({ count: 'fp_block' }))).code, 2);
      } finally {
        await off();
      }
    });

    test('writeConcernError joins the reply of a write that ran; commands without write concern ignore it', async (t) => {
      const db = target().db;
      const wce = { code: 64, errmsg: 'waiting for replication timed out' };
      if (!(await failCommand(t, { times: 1 }, { failCommands: ['insert', 'count'], writeConcernError: wce }))) return;
      try {
        await db.command({ count: 'fp_wce' }); // takes no write concern: neither changed nor counted
        const error = await db.command({ insert: 'fp_wce', documents: [{ _id: 1 }] }).then(
          () => undefined,
          (e: unknown) => e,
        );
        assert.ok(error instanceof MongoWriteConcernError, String(error));
        assert.deepEqual(error.result.writeConcernError, wce);
        assert.equal(error.result.n, 1, 'the insert ran');
        assert.equal(await db.collection('fp_wce').countDocuments(), 1);
        await db.command({ insert: 'fp_wce', documents: [{ _id: 2 }] }); // times: 1 was used up
      } finally {
        await off();
      }
    });

    test('appName and namespace narrow the commands that fail', async (t) => {
      const { uri, db } = target();
      if (!(await failCommand(t, 'alwaysOn', { failCommands: ['count'], errorCode: 2, appName: 'ferry-fp-app' }))) return;
      const app = await MongoClient.connect(uri, { appName: 'ferry-fp-app', serverSelectionTimeoutMS: 5000 });
      try {
        await db.command({ count: 'fp_app' });
        assert.equal((await failure(app.db(db.databaseName).command({ count: 'fp_app' }))).code, 2);
        await failCommand(t, 'alwaysOn', { failCommands: ['count'], errorCode: 2, namespace: `${db.databaseName}.fp_target` });
        await db.command({ count: 'fp_other' });
        assert.equal((await failure(db.command({ count: 'fp_target' }))).code, 2);
      } finally {
        await off();
        await app.close();
      }
    });
  },
  { enableTestCommands: true },
);

conformance('test commands off', (target: () => Target) => {
  test('without enableTestCommands, configureFailPoint does not exist', async (t) => {
    if (!target().local) return t.skip('a real deployment decides this with its own --setParameter');
    await assert.rejects(target().client.db('admin').command({ configureFailPoint: 'failCommand', mode: 'alwaysOn' }), {
      code: 59,
      codeName: 'CommandNotFound',
      message: "no such command: 'configureFailPoint'",
    });
  });
});
