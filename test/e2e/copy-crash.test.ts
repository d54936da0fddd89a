/**
 * Resuming an interrupted copy: the `ferry` process is killed (SIGKILL) in the middle of the copy,
 * when some partitions are done and another is in progress with a checkpoint, then started again
 * with the same flags. The sync continues by itself (state RUNNING, no new start request); the
 * destination ends equal to the source with no document missing or duplicated; finished partitions
 * are not copied again, and the interrupted one resumes after its checkpoint, not from its start.
 * A clean stop (SIGTERM) and restart, or a pause and resume, continue the same way.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Int32, type Document } from 'bson';
import { insertDocuments, RUN, useClusterPair } from './copy-fixtures.js';
import { copyFinished, startFerry } from './ferry-process.js';
import { METADATA_DATABASE } from '../../src/domain/namespaces.js';

// Slow and fine-grained on purpose: one partition at a time, small batches, frequent checkpoints.
const FLAGS = ['--copyWorkers', '1', '--batchesInFlight', '1', '--batchBytes', '16384', '--partitionSizeMB', '1'];
const ENV = { FERRY_CHECKPOINT_INTERVAL_MS: '20' };

const clusters = useClusterPair();

/** `count` documents of about 1 KiB with Int32 `_id`s in each of `collections`. */
async function fill(db: string, collections: string[], count: number): Promise<number> {
  for (const coll of collections) {
    for (let start = 0; start < count; start += 1000) {
      const docs = Array.from({ length: Math.min(1000, count - start) }, (_, k) => ({
        _id: new Int32(start + k),
        body: 'x'.repeat(1000),
        n: start + k,
      }));
      await insertDocuments(clusters.source.db(db), coll, docs);
    }
  }
  return collections.length * count;
}

interface PartitionState {
  key: string;
  status: string;
  attempts: number;
  lastId?: string;
  copiedDocs: number;
  attemptLog: { resumedAfter?: string; copiedDocsBefore: number }[];
}

async function partitionTable(instance: string): Promise<Map<string, PartitionState>> {
  const rows = await clusters.destination.db(METADATA_DATABASE).collection('partitions').find({ instance }).toArray();
  return new Map(
    rows.map((row: Document) => {
      const key = `${row.db}.${row.coll}#${row._id.index}`;
      return [
        key,
        { key, status: row.status, attempts: row.attempts, lastId: row.lastId, copiedDocs: row.copiedDocs, attemptLog: row.attemptLog },
      ];
    }),
  );
}

/** The partition table once two reads 100 ms apart agree. */
async function settledPartitionTable(instance: string): Promise<Map<string, PartitionState>> {
  let last = await partitionTable(instance);
  for (;;) {
    await new Promise((resolve) => setTimeout(resolve, 100));
    const next = await partitionTable(instance);
    if (JSON.stringify([...next]) === JSON.stringify([...last])) return next;
    last = next;
  }
}

async function assertSameAsSource(db: string): Promise<void> {
  const differences = await clusters.differences([{ database: db }], undefined, true);
  assert.deepEqual(differences, []);
}

describe('an interrupted copy resumes where it stopped', () => {
  it('after SIGKILL: finished partitions are skipped, the interrupted one resumes after its checkpoint', async () => {
    const db = `crash_kill_${RUN}`;
    const total = await fill(db, ['a', 'b', 'c'], 3000);
    const logDir = mkdtempSync(join(tmpdir(), 'ferry-crash-'));
    const args = ['--cluster0', clusters.pair.cluster0, '--cluster1', clusters.pair.cluster1, '--id', `crash-${RUN}`, ...FLAGS];
    const first = await startFerry(args, ENV, logDir);
    await clusters.emptyDestination();
    const started = await first.post('start', { source: 'cluster0', destination: 'cluster1', includeNamespaces: [{ database: db }] });
    assert.equal(started.status, 200, JSON.stringify(started.body));

    // Kill once two partitions are done and another has a checkpoint.
    for (;;) {
      const table = [...(await partitionTable(`crash-${RUN}`)).values()];
      const done = table.filter((p) => p.status === 'done').length;
      const checkpointed = table.some((p) => p.status === 'in progress' && p.lastId !== undefined);
      if (done >= 2 && checkpointed) break;
      assert.ok(done < table.length || table.length === 0, 'the copy finished before it could be interrupted');
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    first.child.kill('SIGKILL');
    await first.exit;
    // Writes the killed process had already sent may still land: read once the table is still.
    const atKill = await settledPartitionTable(`crash-${RUN}`);
    const interrupted = [...atKill.values()].filter((p) => p.status === 'in progress' && p.lastId !== undefined);
    assert.ok(interrupted.length >= 1);

    const second = await startFerry(args, ENV, logDir);
    try {
      const recovered = await second.progress();
      assert.equal(recovered.state, 'RUNNING', 'the restarted Ferry continues the sync by itself');
      const finished = await second.waitForProgress(copyFinished);
      assert.equal(finished.collectionCopy.estimatedCopiedBytes, finished.collectionCopy.estimatedTotalBytes);
    } finally {
      assert.equal(await second.stop(), 0);
    }

    await assertSameAsSource(db);
    const atEnd = await partitionTable(`crash-${RUN}`);
    assert.equal(
      [...atEnd.values()].reduce((sum, p) => sum + p.copiedDocs, 0),
      total,
      'every document counted exactly once',
    );
    for (const [key, before] of atKill) {
      const after = atEnd.get(key)!;
      assert.equal(after.status, 'done', key);
      if (before.status === 'done') {
        assert.equal(after.attempts, 1, `${key} was done before the crash and not copied again`);
      } else if (before.status === 'in progress') {
        assert.equal(after.attempts, 2, `${key} was resumed once`);
        assert.equal(after.attemptLog[1]!.resumedAfter, before.lastId, `${key} resumed after its checkpoint`);
        assert.equal(after.attemptLog[1]!.copiedDocsBefore, before.copiedDocs);
        if (before.lastId !== undefined) assert.ok(before.copiedDocs > 0, `${key} had copied documents before the crash`);
      } else {
        assert.equal(after.attempts, 1, `${key} was started only after the restart`);
      }
    }
    assert.ok(
      [...atEnd.values()].some((p) => p.attemptLog.length === 2 && p.attemptLog[1]!.resumedAfter !== undefined),
      'at least one partition continued mid-range',
    );
  });

  it('after SIGTERM: the copy stops at a checkpoint and continues on restart', async () => {
    const db = `crash_term_${RUN}`;
    await fill(db, ['a', 'b'], 3000);
    const args = ['--cluster0', clusters.pair.cluster0, '--cluster1', clusters.pair.cluster1, '--id', `term-${RUN}`, ...FLAGS];
    const first = await startFerry(args, ENV);
    await clusters.emptyDestination();
    await first.post('start', { source: 'cluster0', destination: 'cluster1', includeNamespaces: [{ database: db }] });
    await first.waitForProgress((p) => p.collectionCopy?.estimatedCopiedBytes > 1024 * 1024);
    assert.equal(await first.stop('SIGTERM'), 0);
    const atStop = [...(await partitionTable(`term-${RUN}`)).values()];
    assert.ok(
      atStop.some((p) => p.status !== 'done'),
      'stopped before the end',
    );

    const second = await startFerry(args, ENV);
    try {
      await second.waitForProgress(copyFinished);
    } finally {
      await second.stop();
    }
    await assertSameAsSource(db);
  });

  it('after pause: nothing is copied while PAUSED, and resume continues to the end', async () => {
    const db = `crash_pause_${RUN}`;
    await fill(db, ['a', 'b'], 3000);
    const ferry = await startFerry(
      ['--cluster0', clusters.pair.cluster0, '--cluster1', clusters.pair.cluster1, '--id', `pause-${RUN}`, ...FLAGS],
      ENV,
    );
    try {
      await clusters.emptyDestination();
      await ferry.post('start', { source: 'cluster0', destination: 'cluster1', includeNamespaces: [{ database: db }] });
      await ferry.waitForProgress((p) => p.collectionCopy?.estimatedCopiedBytes > 1024 * 1024);
      const paused = await ferry.post('pause');
      assert.equal(paused.status, 200, JSON.stringify(paused.body));
      const atPause = await partitionTable(`pause-${RUN}`);
      await new Promise((resolve) => setTimeout(resolve, 300));
      assert.deepEqual(await partitionTable(`pause-${RUN}`), atPause, 'the partition table does not move while paused');
      assert.ok(
        [...atPause.values()].some((p) => p.status !== 'done'),
        'paused before the end',
      );

      assert.equal((await ferry.post('resume')).status, 200);
      await ferry.waitForProgress(copyFinished);
    } finally {
      await ferry.stop();
    }
    await assertSameAsSource(db);
  });
});
