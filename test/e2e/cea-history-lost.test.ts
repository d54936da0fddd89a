/**
 * The source's oplog rolls past Ferry's resume point while the sync is paused: on resume the
 * change stream cannot continue (ChangeStreamHistoryLost). Nothing is skipped: the sync pauses
 * again, and progress (`info`, `warnings`) and the log say what happened and what the operator
 * must do; state, message and allowed requests agree: `resume` (which could only fail again) and
 * `commit` are refused with SyncCannotContinue, also after a restart. History lost while the
 * commit waits ends the commit the same way, instead of leaving the sync COMMITTING for ever.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { Document } from 'bson';
import { MongoClient } from 'mongodb';
import { startClusterPair, type ClusterPair } from '../helpers/clusters.js';
import { RUN } from './copy-fixtures.js';
import { startFerry } from './ferry-process.js';

const local = !(process.env.FERRY_TEST_CLUSTER0_URI && process.env.FERRY_TEST_CLUSTER1_URI);

describe('change stream history lost', { skip: local ? false : 'needs a source with a tiny oplog' }, () => {
  let pair: ClusterPair;
  let source: MongoClient;

  before(async () => {
    pair = await startClusterPair({ oplogSizeMB: 1 });
    source = await MongoClient.connect(pair.cluster0);
  });

  after(async () => {
    await source?.close();
    await pair?.stop();
  });

  it('pauses the sync and says what to do, instead of skipping changes', async () => {
    const db = `lost_${RUN}`;
    await source
      .db(db)
      .collection('items')
      .insertMany(Array.from({ length: 10 }, (_, i) => ({ _id: i })) as Document[]);
    const ferry = await startFerry(['--cluster0', pair.cluster0, '--cluster1', pair.cluster1, '--id', `lost-${RUN}`]);
    try {
      assert.equal(
        (await ferry.post('start', { source: 'cluster0', destination: 'cluster1', includeNamespaces: [{ database: db }] })).status,
        200,
      );
      await ferry.waitForProgress((p) => p.canCommit === true, 60_000);
      assert.equal((await ferry.post('pause', {})).status, 200);
      // About 3 MiB of writes roll the 1 MiB oplog past the recorded resume point.
      for (let i = 0; i < 30; i++) {
        await source
          .db(db)
          .collection('items')
          .insertMany(Array.from({ length: 10 }, (_, k) => ({ _id: 1000 + i * 10 + k, pad: 'x'.repeat(10_000) })) as Document[]);
      }
      assert.equal((await ferry.post('resume', {})).status, 200);
      const stopped = await ferry.waitForProgress((p) => p.state === 'PAUSED', 60_000);
      assert.match(stopped.info, /history was lost/);
      const warning = stopped.warnings.find((w: string) => w.includes('ChangeStreamHistoryLost') || w.includes('history was lost'));
      assert.ok(warning !== undefined, JSON.stringify(stopped.warnings));
      assert.match(warning, /oplog/);
      assert.match(warning, /from the beginning/);
      assert.equal(stopped.canCommit, false);
      assert.ok(
        ferry.log().some((line) => line.level === 'error' && String(line.message).includes('history was lost')),
        'the log says it too',
      );
      assert.ok(!stopped.warnings.some((w: string) => /POST \/api\/v1\/resume/.test(w)), 'resume is not suggested');
      const resumed = await ferry.post('resume', {});
      assert.equal(resumed.status, 409);
      assert.equal(resumed.body.error, 'SyncCannotContinue');
      assert.match(resumed.body.errorDescription, /ChangeStreamHistoryLost.*from the beginning/);
      assert.equal((await ferry.progress()).state, 'PAUSED', 'the refused resume changed nothing');
    } finally {
      assert.equal(await ferry.stop(), 0);
    }
    const again = await startFerry(['--cluster0', pair.cluster0, '--cluster1', pair.cluster1, '--id', `lost-${RUN}`]);
    try {
      const recovered = await again.progress();
      assert.equal(recovered.state, 'PAUSED');
      assert.match(recovered.info, /history was lost/);
      assert.ok(recovered.warnings.some((w: string) => /cannot continue \(ChangeStreamHistoryLost\)/.test(w)));
      assert.equal((await again.post('resume', {})).body.error, 'SyncCannotContinue');
    } finally {
      assert.equal(await again.stop(), 0);
    }
  });
});

describe('change stream history lost during commit', { skip: local ? false : 'needs fail points and a source with a tiny oplog' }, () => {
  let pair: ClusterPair;
  let source: MongoClient;

  before(async () => {
    pair = await startClusterPair({ oplogSizeMB: 1, enableTestCommands: true });
    source = await MongoClient.connect(pair.cluster0, { appName: 'history-lost-test' });
  });

  after(async () => {
    await source
      ?.db('admin')
      .command({ configureFailPoint: 'failCommand', mode: 'off' })
      .catch(() => undefined);
    await source?.close();
    await pair?.stop();
  });

  it('ends the commit: PAUSED with the reason, never COMMITTING for ever, source writes allowed again', async () => {
    const db = `lost_commit_${RUN}`;
    const items = source.db(db).collection('items');
    await items.insertMany(Array.from({ length: 10 }, (_, i) => ({ _id: i })) as Document[]);
    const ferry = await startFerry(['--cluster0', pair.cluster0, '--cluster1', pair.cluster1, '--id', `lost-commit-${RUN}`], {
      FERRY_COMMIT_RETRY_INTERVAL_MS: '300',
    });
    try {
      assert.equal(
        (
          await ferry.post('start', {
            source: 'cluster0',
            destination: 'cluster1',
            includeNamespaces: [{ database: db }],
            enableUserWriteBlocking: 'sourceAndDestination',
          })
        ).status,
        200,
      );
      await ferry.waitForProgress((p) => p.canCommit === true, 60_000);
      // Change-event application can no longer read the source (its appName only: neither the verifier's
      // `ferry-verify` nor this client)...
      const { count } = await source.db('admin').command({
        configureFailPoint: 'failCommand',
        mode: 'alwaysOn',
        data: { failCommands: ['getMore', 'aggregate'], errorCode: 6, appName: 'ferry' },
      });
      // Once a read has failed, no read in flight can carry the stream past the commit point.
      await source.db('admin').command({ waitForFailPoint: 'failCommand', timesEntered: Number(count) + 1, maxTimeMS: 10_000 });
      assert.equal((await ferry.post('commit', {})).status, 200);
      await ferry.waitForProgress((p) => p.state === 'COMMITTING', 10_000);
      // ...while about 3 MiB of writes roll the 1 MiB oplog past its recorded position (by a user who may write).
      await source.db('admin').command({ setUserWriteBlockMode: 1, global: false });
      for (let i = 0; i < 30; i++) {
        await items.insertMany(Array.from({ length: 10 }, (_, k) => ({ _id: 1000 + i * 10 + k, pad: 'x'.repeat(10_000) })) as Document[]);
      }
      await source.db('admin').command({ setUserWriteBlockMode: 1, global: true });
      await source.db('admin').command({ configureFailPoint: 'failCommand', mode: 'off' });
      const stopped = await ferry.waitForProgress((p) => p.state !== 'COMMITTING', 90_000);
      assert.equal(stopped.state, 'PAUSED', 'the commit ended instead of waiting for ever');
      assert.equal(stopped.canWrite, false);
      assert.match(stopped.info, /history was lost/);
      assert.ok(
        stopped.warnings.some((w: string) => /cannot continue.*ChangeStreamHistoryLost/.test(w)),
        JSON.stringify(stopped.warnings),
      );
      assert.equal((await ferry.post('resume', {})).body.error, 'SyncCannotContinue');
      const status = await source.db('admin').command({ serverStatus: 1 });
      assert.equal(status.repl.userWriteBlockMode, 1, 'the cut-over was abandoned: the source takes writes again');
    } finally {
      assert.equal(await ferry.stop(), 0);
    }
  });
});
