/**
 * Crashes during change-event application and during COMMITTING: the real `ferry` process is
 * killed with SIGKILL and started again with the same flags. It continues by itself from its
 * metadata (the resume token, the commit record), and the destination ends equal to the source,
 * as it would have without the crash.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Document } from 'bson';
import { RUN, useClusterPair } from './copy-fixtures.js';
import { playOperations, sampleOperations, seed } from './cea-workload.js';
import { commitWhenReady, startFerry, type FerryProcess } from './ferry-process.js';
import { METADATA_DATABASE } from '../../src/domain/namespaces.js';

const clusters = useClusterPair();
/** Frequent checkpoints, so that a kill lands between two of them with events applied after the last. */
const ENV = { FERRY_CEA_CHECKPOINT_INTERVAL_MS: '100', FERRY_COMMIT_RETRY_INTERVAL_MS: '200' };

async function kill(ferry: FerryProcess): Promise<void> {
  ferry.child.kill('SIGKILL');
  await ferry.exit;
}

async function assertEqualToSource(db: string): Promise<void> {
  const differences = await clusters.differences([{ database: db }]);
  assert.deepEqual(differences, []);
}

describe('crash safety', () => {
  it('SIGKILL during change-event application: the restarted Ferry resumes after its recorded token and converges', async () => {
    const db = `crash_cea_${RUN}`;
    await seed(clusters.source, db, 300);
    const logDir = mkdtempSync(join(tmpdir(), 'ferry-cea-crash-'));
    const args = [
      '--cluster0',
      clusters.pair.cluster0,
      '--cluster1',
      clusters.pair.cluster1,
      '--id',
      `crash-cea-${RUN}`,
      '--applyLanes',
      '4',
    ];
    const first = await startFerry(args, ENV, logDir);
    await clusters.emptyDestination();
    assert.equal(
      (await first.post('start', { source: 'cluster0', destination: 'cluster1', includeNamespaces: [{ database: db }] })).status,
      200,
    );
    await first.waitForProgress((p) => p.canCommit === true, 60_000);

    // Kill in the middle of a workload, once some of it is applied and recorded.
    const operations = sampleOperations(404, 600, 1);
    let killedAt = -1;
    const checkpoints = clusters.destination.db(METADATA_DATABASE).collection<Document>('changeStream');
    const tokenBefore = (await checkpoints.findOne({ _id: `crash-cea-${RUN}` } as Document))?.resumeToken;
    await playOperations(clusters.source, db, operations, async (index) => {
      if (killedAt >= 0 || index < 200) return;
      const progress = await first.progress();
      const recorded = (await checkpoints.findOne({ _id: `crash-cea-${RUN}` } as Document))?.resumeToken;
      if (progress.totalEventsApplied > 50 && JSON.stringify(recorded) !== JSON.stringify(tokenBefore)) {
        await kill(first);
        killedAt = index;
      }
    });
    assert.ok(killedAt > 0, 'killed during the workload');

    const second = await startFerry(args, ENV, logDir);
    try {
      assert.equal((await second.progress()).state, 'RUNNING', 'the sync continues by itself');
      await playOperations(clusters.source, db, sampleOperations(405, 100, 1));
      await second.waitForProgress((p) => p.canCommit === true && p.lagTimeSeconds === 0, 60_000);
      const resumed = second
        .log()
        .find((line) => String(line.message).startsWith('Change-event application resuming after its recorded position'));
      assert.ok(resumed !== undefined, 'resumed from the recorded resume token, not from T0');
      // canCommit can fall back while the restarted Ferry catches up: asked again, as an operator would.
      assert.equal((await commitWhenReady(second)).status, 200);
      await second.waitForProgress((p) => p.state === 'COMMITTED', 60_000);
    } finally {
      assert.equal(await second.stop(), 0);
    }
    await assertEqualToSource(db);
  });

  it('SIGKILL during COMMITTING: the restarted Ferry finishes the commit', async () => {
    const db = `crash_commit_${RUN}`;
    await seed(clusters.source, db, 300);
    const logDir = mkdtempSync(join(tmpdir(), 'ferry-commit-crash-'));
    const id = `crash-commit-${RUN}`;
    const args = ['--cluster0', clusters.pair.cluster0, '--cluster1', clusters.pair.cluster1, '--id', id, '--applyLanes', '2'];
    const first = await startFerry(args, ENV, logDir);
    await clusters.emptyDestination();
    assert.equal(
      (await first.post('start', { source: 'cluster0', destination: 'cluster1', includeNamespaces: [{ database: db }] })).status,
      200,
    );
    await first.waitForProgress((p) => p.canCommit === true, 60_000);

    // A backlog of events at commit time, and a duplicate on the destination that holds the
    // commit in COMMITTING (its unique index cannot be restored) until it is removed.
    await clusters.destination
      .db(db)
      .collection('c0')
      .insertOne({ _id: 'duplicate', n: 250 } as Document);
    await playOperations(clusters.source, db, sampleOperations(505, 400, 0));
    assert.equal((await first.post('commit', {})).status, 200);
    await kill(first);
    const commitRecord = await clusters.destination
      .db(METADATA_DATABASE)
      .collection<Document>('commit')
      .findOne({ _id: id } as Document);
    const resume = await clusters.destination
      .db(METADATA_DATABASE)
      .collection<Document>('resume')
      .findOne({ _id: id } as Document);
    assert.equal(resume?.state, 'COMMITTING');
    assert.ok(commitRecord?.commitPoint !== undefined && commitRecord.completedAt === undefined);

    const second = await startFerry(args, ENV, logDir);
    try {
      assert.equal((await second.progress()).state, 'COMMITTING', 'recovered in COMMITTING');
      const waiting = await second.waitForProgress((p) => p.warnings?.some((w: string) => w.includes('"n_1"')), 60_000);
      assert.equal(waiting.state, 'COMMITTING');
      await clusters.destination
        .db(db)
        .collection('c0')
        .deleteOne({ _id: 'duplicate' } as Document);
      const done = await second.waitForProgress((p) => p.state === 'COMMITTED', 60_000);
      assert.equal(done.canWrite, true);
      const failedTries = second.log().filter((line) => /could not finish yet/.test(String(line.message)));
      assert.deepEqual(failedTries, [], 'the recovered commit took change-event application over at its first try');
    } finally {
      assert.equal(await second.stop(), 0);
    }
    await assertEqualToSource(db);
  });
});
