/**
 * The embedded verifier through the real `ferry` process. The destination is changed behind
 * Ferry's back (these test clusters run without access control, so any client bypasses the
 * destination's write blocking, as a privileged user would on a real one): a document changed,
 * deleted, added, its fields reordered; an index dropped; a collection option changed; a view redefined; during the
 * copy (found by the initial scan) and during stream hashing (found through the destination's
 * change stream). Each is reported by namespace, `_id` and kind in progress warnings, the log and
 * `GET /api/v1/verification`; an untouched sync reports clean after its final pass. A SIGKILL
 * during the initial scan and during stream hashing: the restarted verifier continues (finished
 * ranges are not compared again) and still finds a corruption planted before the kill. An attempt
 * that fails on an error is taken up again from its records; a collection dropped while it is
 * planned is no error.
 */
import { after, before, beforeEach, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MongoClient, type Collection, type Document } from 'mongodb';
import { METADATA_DATABASE } from '../../src/domain/namespaces.js';
import { METADATA_COLLECTIONS } from '../../src/meta/names.js';
import { startClusterPair, type ClusterPair } from '../helpers/clusters.js';
import { cleanUpRun, quietWindows, RUN } from './copy-fixtures.js';
import { emptyDestination, startFerry, type FerryProcess } from './ferry-process.js';

let pair: ClusterPair;
let source: MongoClient;
let destination: MongoClient;

before(async () => {
  pair = await startClusterPair({ enableTestCommands: true });
  source = await MongoClient.connect(pair.cluster0);
  destination = await MongoClient.connect(pair.cluster1);
});

// Each test starts one sync, and a sync starts only on an empty destination (mongosync's rule).
beforeEach(() => emptyDestination(pair.cluster1));

after(async () => {
  await Promise.allSettled([cleanUpRun(source, METADATA_DATABASE), cleanUpRun(destination, METADATA_DATABASE)]);
  await Promise.allSettled([source.close(), destination.close()]);
  await pair.stop();
});

function ferryArgs(id: string, ...extra: string[]): string[] {
  return ['--cluster0', pair.cluster0, '--cluster1', pair.cluster1, '--id', id, ...extra];
}

function startBody(db: string): Document {
  return { source: 'cluster0', destination: 'cluster1', includeNamespaces: [{ database: db }] };
}

async function seed(db: string, collections: string[], count: number, pad = 200): Promise<void> {
  for (const name of collections) {
    const docs = Array.from({ length: count }, (_, i) => ({ _id: i, a: i, b: `b${i}`, pad: 'p'.repeat(pad) }));
    for (let i = 0; i < docs.length; i += 1000)
      await source
        .db(db)
        .collection(name)
        .insertMany(docs.slice(i, i + 1000) as Document[]);
  }
}

/** The mismatches of a report, keyed `coll|_id|kind` (namespace-level ones `coll|subject|kind`). */
function keysOf(report: Record<string, any>, db: string): string[] {
  return (report.mismatches as Record<string, any>[])
    .map((m) => `${String(m.namespace).slice(db.length + 1)}|${m._id === undefined ? '-' : JSON.stringify(m._id)}|${m.kind}`)
    .sort();
}

/** A collection whose `_id`s are not ObjectIds, as the driver's typings would otherwise insist. */
function coll(client: MongoClient, db: string, name: string): Collection<any> {
  return client.db(db).collection<any>(name);
}

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function kill(ferry: FerryProcess): Promise<void> {
  ferry.child.kill('SIGKILL');
  await ferry.exit;
}

describe('embedded verifier', () => {
  it('reports an untouched sync clean: progress through its phases, then a final pass after commit', async () => {
    const db = `verify_clean_${RUN}`;
    await seed(db, ['orders', 'users'], 400);
    await coll(source, db, 'users').createIndex({ b: 1 }, { unique: true });
    await source.db(db).createCollection('log', { capped: true, size: 64 * 1024, max: 50 });
    await source
      .db(db)
      .collection('log')
      .insertMany(Array.from({ length: 20 }, (_, i) => ({ _id: i, line: `l${i}` })) as Document[]);
    await source.db(db).createCollection('big_orders', { viewOn: 'orders', pipeline: [{ $match: { a: { $gt: 100 } } }] });
    const ferry = await startFerry(ferryArgs(`verify-clean-${RUN}`));
    try {
      assert.equal((await ferry.post('start', startBody(db))).status, 200);
      const ready = await ferry.waitForProgress((p) => p.canCommit === true, 120_000);
      assert.deepEqual(ready.warnings, []);
      for (const side of ['source', 'destination'] as const) {
        const figures = ready.verification[side];
        assert.equal(figures.phase, 'stream hashing', `${side}: ${JSON.stringify(figures)}`);
        assert.equal(figures.totalCollectionCount, 3);
        assert.equal(figures.scannedCollectionCount, 3);
        assert.ok(figures.hashedDocumentCount >= 820, `${side} hashed ${figures.hashedDocumentCount}`);
        assert.equal(typeof figures.lagTimeSeconds, 'number');
      }
      assert.equal(ready.verification.source.estimatedDocumentCount, 820);

      // Changes while stream hashing: each is checked again once applied, and nothing differs.
      await source
        .db(db)
        .collection('orders')
        .updateMany({ a: { $lt: 50 } }, { $set: { touched: true } });
      await coll(source, db, 'users').deleteOne({ _id: 7 });
      await source
        .db(db)
        .collection('orders')
        .insertOne({ _id: 'new', a: -1 } as Document);
      await ferry.waitForVerification((r) => r.pendingRechecks === 0 && r.progress.source.hashedDocumentCount > 820, 60_000);
      const before = await ferry.verification();
      assert.equal(before!.mismatchCount, 0, JSON.stringify(before));
      assert.equal(before!.outcome, 'pending', 'not finished before commit');

      await ferry.waitForProgress((p) => p.canCommit === true && p.lagTimeSeconds === 0, 60_000);
      assert.equal((await ferry.post('commit', {})).status, 200);
      await ferry.waitForProgress((p) => p.state === 'COMMITTED', 60_000);
      const report = await ferry.waitForVerification((r) => r.outcome !== 'pending', 60_000);
      assert.equal(report.outcome, 'clean', JSON.stringify(report));
      assert.equal(report.mismatchCount, 0);
      assert.equal(report.committedWithDifferences, false);
      assert.deepEqual(report.partitions.total, report.partitions.scanned);
      assert.notEqual(report.completedAt, null);
      assert.deepEqual((await ferry.progress()).warnings, []);
      // Logged right after it is recorded (the report may be read in between).
      const logged = () =>
        ferry.log().some((line) => String(line.message).startsWith('Verification finished after commit: the destination holds'));
      for (let waited = 0; !logged() && waited < 5000; waited += 100) await new Promise((resolve) => setTimeout(resolve, 100));
      assert.ok(logged(), 'the outcome is logged');
    } finally {
      assert.equal(await ferry.stop(), 0);
    }
  });

  it('keeps canCommit while it scans again a collection created after its first pass; a commit then goes ahead and the final pass covers it', async (t) => {
    if (!pair.local) return t.skip('slows the verifier with a fail point (test clusters only)');
    const db = `verify_rescan_${RUN}`;
    await seed(db, ['orders'], 200);
    const admin = source.db('admin');
    const ferry = await startFerry(ferryArgs(`verify-rescan-${RUN}`));
    try {
      assert.equal((await ferry.post('start', startBody(db))).status, 200);
      await ferry.waitForProgress((p) => p.canCommit === true, 120_000);
      // The verifier's reads of the source wait 2 s each: its rescan of the new collection lasts.
      await admin.command({
        configureFailPoint: 'failCommand',
        mode: 'alwaysOn',
        data: { failCommands: ['find', 'getMore'], blockConnection: true, blockTimeMS: 2000, appName: 'ferry-verify' },
      });
      await seed(db, ['late'], 50);
      const rescanning = await ferry.waitForProgress((p) => p.verification.source.phase === 'initial hashing', 60_000);
      assert.equal(rescanning.canCommit, true, `canCommit while the verifier scans again: ${JSON.stringify(rescanning)}`);
      assert.equal((await ferry.post('commit', {})).status, 200);
      await admin.command({ configureFailPoint: 'failCommand', mode: 'off' });
      await ferry.waitForProgress((p) => p.state === 'COMMITTED', 60_000);
      const report = await ferry.waitForVerification((r) => r.outcome !== 'pending', 60_000);
      assert.equal(report.outcome, 'clean', JSON.stringify(report));
      assert.equal(report.progress.source.totalCollectionCount, 2, 'the new collection is verified too');
      assert.deepEqual(report.partitions.total, report.partitions.scanned);
      assert.equal(await coll(destination, db, 'late').countDocuments(), 50);
    } finally {
      await admin.command({ configureFailPoint: 'failCommand', mode: 'off' }).catch(() => undefined);
      assert.equal(await ferry.stop(), 0);
    }
  });

  it('finds changes behind its back while stream hashing, each by namespace, _id and kind (warnings, log, report)', async () => {
    const db = `verify_stream_${RUN}`;
    await seed(db, ['docs'], 200, 20);
    await source.db(db).collection('docs').createIndex({ a: 1 }, { name: 'a_1' });
    await source.db(db).createCollection('rules', { validator: { a: { $type: 'int' } }, validationLevel: 'strict' });
    await source
      .db(db)
      .collection('rules')
      .insertOne({ _id: 1, a: 1 } as Document);
    await source.db(db).createCollection('recent', { viewOn: 'docs', pipeline: [{ $match: { a: { $gte: 100 } } }] });
    const ferry = await startFerry(ferryArgs(`verify-stream-${RUN}`));
    try {
      assert.equal((await ferry.post('start', startBody(db))).status, 200);
      await ferry.waitForProgress((p) => p.canCommit === true, 120_000);
      const docs = coll(destination, db, 'docs');
      await docs.updateOne({ _id: 1 }, { $set: { a: -1 } });
      await docs.deleteOne({ _id: 2 });
      await docs.insertOne({ _id: 'intruder', a: 0 });
      await docs.replaceOne({ _id: 3 }, { pad: 'p'.repeat(20), b: 'b3', a: 3 }); // same fields and values, another order
      await docs.dropIndex('a_1');
      await destination.db(db).command({ collMod: 'rules', validationLevel: 'moderate' });
      await destination.db(db).command({ collMod: 'recent', viewOn: 'docs', pipeline: [{ $match: { a: { $gte: 0 } } }] });

      const report = await ferry.waitForVerification((r) => r.mismatchCount >= 7, 60_000);
      assert.deepEqual(
        keysOf(report, db),
        [
          'docs|"intruder"|extra',
          'docs|1|different',
          'docs|2|missing',
          'docs|3|different',
          'docs|index:a_1|index',
          'recent|options|option',
          'rules|options|option',
        ]
          .map((key) => key.replace('|index:a_1|', '|-|').replace('|options|', '|-|'))
          .sort(),
      );
      const byId = new Map((report.mismatches as Record<string, any>[]).map((m) => [JSON.stringify(m._id ?? m.detail), m]));
      assert.match(byId.get('1')!.detail, /field "a" differs/);
      assert.match(byId.get('3')!.detail, /another order/);
      assert.ok((report.mismatches as Record<string, any>[]).some((m) => m.kind === 'index' && /a_1/.test(m.detail)));
      assert.ok((report.mismatches as Record<string, any>[]).some((m) => m.kind === 'option' && /validationLevel/.test(m.detail)));
      const view = (report.mismatches as Record<string, any>[]).find((m) => m.namespace === `${db}.recent`);
      assert.match(view!.detail, /view definition/);

      // Progress shows the same count as the report (its figures are read from the same records).
      const progress = await ferry.waitForProgress((p) => p.warnings.some((w: string) => w.includes('7 difference(s)')), 10_000);
      const warning = progress.warnings.find((w: string) => w.includes('7 difference(s)'));
      assert.ok(warning !== undefined, JSON.stringify(progress.warnings));
      assert.match(warning, new RegExp(`${db}\\.docs`));
      const logged = ferry.log().filter((line) => line.level === 'error' && String(line.message).startsWith('Verification:'));
      assert.ok(
        logged.some((line) => line.ns === `${db}.docs` && line._id === 2 && line.kind === 'missing'),
        JSON.stringify(logged),
      );
      const limited = await ferry.verification('limit=2&skip=1');
      assert.equal(limited!.mismatches.length, 2);
      assert.equal(limited!.mismatchCount, 7);

      // A commit while differences are known goes ahead, and says so loudly.
      assert.equal(progress.canCommit, true);
      assert.equal((await ferry.post('commit', {})).status, 200);
      const committing = await ferry.progress();
      assert.ok(
        committing.warnings.some((w: string) => w.startsWith('COMMIT REQUESTED WHILE')),
        JSON.stringify(committing.warnings),
      );
      assert.ok(ferry.log().some((line) => line.level === 'error' && String(line.message).startsWith('COMMIT REQUESTED WHILE')));
      await ferry.waitForProgress((p) => p.state === 'COMMITTED', 60_000);
      const final = await ferry.waitForVerification((r) => r.outcome !== 'pending', 60_000);
      assert.equal(final.outcome, 'differences');
      assert.equal(final.committedWithDifferences, true);
      // Commit restored the options it knows of, not what someone else changed; the documents still differ.
      assert.ok(keysOf(final, db).includes('docs|2|missing'), JSON.stringify(final.mismatches));
    } finally {
      assert.equal(await ferry.stop(), 0);
    }
  });

  it('does not report a definition the source changed and the destination has yet to apply; one planted on the destination it does', async (t) => {
    if (!pair.local) return t.skip('slows the destination with a fail point (test clusters only)');
    const db = `verify_ddl_${RUN}`;
    await seed(db, ['docs'], 2000, 200);
    await source.db(db).collection('docs').createIndex({ a: 1 }, { name: 'a_1' });
    await source.db(db).createCollection('rules', { validator: { a: { $type: 'int' } } });
    const admin = destination.db('admin');
    // Change-event application's collMod on the destination waits 15 s: the verifier begins (and
    // checks every definition) while the source has a validator the destination does not yet.
    await admin.command({
      configureFailPoint: 'failCommand',
      mode: 'alwaysOn',
      data: { failCommands: ['collMod'], blockConnection: true, blockTimeMS: 15_000 },
    });
    const ferry = await startFerry(ferryArgs(`verify-ddl-${RUN}`, '--copyWorkers', '1', '--batchBytes', '8192'));
    const rulesReported: string[] = [];
    const watch = (report: Record<string, any>) => {
      for (const m of report.mismatches as Record<string, any>[]) if (m.namespace === `${db}.rules`) rulesReported.push(m.detail);
    };
    try {
      assert.equal((await ferry.post('start', startBody(db))).status, 200);
      // Once the copy has created it on the destination (else it is created as the source has it then).
      while ((await destination.db(db).listCollections({ name: 'rules' }).toArray()).length === 0) await pause(20);
      await source.db(db).command({ collMod: 'rules', validationAction: 'warn' });
      const changedAt = Date.now();
      const planned = await ferry.waitForVerification((r) => {
        watch(r);
        return r.progress.source.phase !== 'not started';
      }, 120_000);
      watch(planned);
      const [onDestination] = await destination.db(db).listCollections({ name: 'rules' }).toArray();
      assert.equal((onDestination as Document).options.validationAction, undefined, 'the check was made before the change was applied');
      const beganAt = ferry.log().find((line) => String(line.message).startsWith('Verification begins'))?.time;
      assert.ok(Date.parse(beganAt) >= changedAt, `began (${beganAt}) after the source changed (${new Date(changedAt).toISOString()})`);
      await admin.command({ configureFailPoint: 'failCommand', mode: 'off' });

      // Applied, the change leaves nothing reported; an index dropped on the destination is reported.
      await ferry.waitForProgress((p) => p.canCommit === true && p.lagTimeSeconds === 0, 120_000);
      await coll(destination, db, 'docs').dropIndex('a_1');
      const report = await ferry.waitForVerification((r) => {
        watch(r);
        return r.mismatchCount >= 1 && r.pendingRechecks === 0;
      }, 60_000);
      assert.deepEqual(keysOf(report, db), ['docs|-|index']);
      assert.deepEqual(rulesReported, [], 'a change in flight on the source is not a difference');
      assert.deepEqual(
        (await ferry.progress()).warnings.filter((w: string) => w.includes(`${db}.rules`)),
        [],
      );
    } finally {
      await admin.command({ configureFailPoint: 'failCommand', mode: 'off' }).catch(() => undefined);
      assert.equal(await ferry.stop(), 0);
    }
  });

  it('finds a document changed on the destination during the copy, before the verifier began', async () => {
    const db = `verify_copy_${RUN}`;
    await seed(db, ['slow'], 3000, 500);
    const ferry = await startFerry(ferryArgs(`verify-copy-${RUN}`, '--copyWorkers', '1', '--batchesInFlight', '1', '--batchBytes', '4096'));
    try {
      assert.equal((await ferry.post('start', startBody(db))).status, 200);
      const slow = coll(destination, db, 'slow');
      const deadline = Date.now() + 60_000;
      while ((await slow.countDocuments()) < 100) {
        assert.ok(Date.now() < deadline, 'the copy started');
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      const copying = await ferry.progress();
      assert.equal(copying.info, 'collection copy');
      assert.equal(copying.verification.source.phase, 'not started', 'the verifier waits for the copy');
      await slow.updateOne({ _id: 5 }, { $set: { b: 'changed during the copy' } });
      const report = await ferry.waitForVerification((r) => r.mismatchCount >= 1, 120_000);
      assert.deepEqual(keysOf(report, db), ['slow|5|different']);
      assert.match(report.mismatches[0].detail, /field "b" differs/);
    } finally {
      assert.equal(await ferry.stop(), 0);
    }
  });

  it('SIGKILL during the initial scan: the restarted verifier skips finished ranges and still finds what was planted before', async (t) => {
    if (!pair.local) return t.skip('slows the destination with a fail point (test clusters only)');
    const db = `verify_kill_scan_${RUN}`;
    const collections = ['c1', 'c2', 'c3', 'c4', 'c5'];
    await seed(db, collections, 300);
    const id = `verify-kill-scan-${RUN}`;
    const args = ferryArgs(id, '--verifyWorkers', '1');
    const logDir = mkdtempSync(join(tmpdir(), 'ferry-verify-kill-'));
    const admin = destination.db('admin');
    // Every read of the verifier's range comparisons on the destination waits 300 ms.
    await admin.command({
      configureFailPoint: 'failCommand',
      mode: 'alwaysOn',
      data: { failCommands: ['find', 'getMore'], blockConnection: true, blockTimeMS: 300, appName: 'ferry-verify' },
    });
    let second: FerryProcess | undefined;
    try {
      const first = await startFerry(args, {}, logDir);
      assert.equal((await first.post('start', startBody(db))).status, 200);
      const midway = await first.waitForVerification(
        (r) => r.partitions.scanned >= 2 && r.partitions.scanned < r.partitions.total,
        120_000,
      );
      // c1 is scanned: a change there reaches the verifier through the destination's change stream;
      // c5 is not: its range comparison finds the change after the restart.
      await coll(destination, db, 'c1').updateOne({ _id: 10 }, { $set: { b: 'planted in a scanned range' } });
      await coll(destination, db, 'c5').deleteOne({ _id: 20 });
      await kill(first);
      const finished = await destination
        .db(METADATA_DATABASE)
        .collection('verificationPartitions')
        .find({ instance: id, status: 'done' })
        .toArray();
      assert.ok(finished.length >= midway.partitions.scanned, 'finished ranges are recorded');
      await admin.command({ configureFailPoint: 'failCommand', mode: 'off' });

      second = await startFerry(args, {}, logDir);
      const report = await second.waitForVerification((r) => r.mismatchCount >= 2, 120_000);
      assert.deepEqual(keysOf(report, db), ['c1|10|different', 'c5|20|missing']);
      const compared = second.log().find((line) => String(line.message).startsWith('Verification: comparing'));
      assert.ok(compared !== undefined, 'ranges left were compared');
      assert.ok(compared.ranges <= collections.length - finished.length, `compared ${compared.ranges} of ${collections.length} again`);
      assert.ok(!second.log().some((line) => String(line.message).startsWith('Verification planned')), 'not planned again');
      const after = await destination.db(METADATA_DATABASE).collection('verificationPartitions').find({ instance: id }).toArray();
      for (const before of finished) {
        const same = after.find((row) => JSON.stringify(row._id) === JSON.stringify(before._id))!;
        assert.equal(same.finishedAt.getTime(), before.finishedAt.getTime(), 'a finished range is not compared again');
      }
    } finally {
      await admin.command({ configureFailPoint: 'failCommand', mode: 'off' }).catch(() => undefined);
      if (second !== undefined) assert.equal(await second.stop(), 0);
    }
  });

  it('SIGKILL during stream hashing: a change planted just before the kill is still found after the restart', async () => {
    const db = `verify_kill_stream_${RUN}`;
    await seed(db, ['docs'], 300);
    const id = `verify-kill-stream-${RUN}`;
    const logDir = mkdtempSync(join(tmpdir(), 'ferry-verify-kill-'));
    const first = await startFerry(ferryArgs(id), {}, logDir);
    assert.equal((await first.post('start', startBody(db))).status, 200);
    await first.waitForProgress((p) => p.canCommit === true, 120_000);
    await coll(destination, db, 'docs').updateOne({ _id: 42 }, { $set: { a: 'planted' } });
    await kill(first);

    const second = await startFerry(ferryArgs(id), {}, logDir);
    try {
      const report = await second.waitForVerification((r) => r.mismatchCount >= 1, 60_000);
      assert.deepEqual(keysOf(report, db), ['docs|42|different']);
      assert.ok(!second.log().some((line) => String(line.message).startsWith('Verification: comparing')), 'no range compared again');
      assert.equal(report.partitions.scanned, report.partitions.total);
    } finally {
      assert.equal(await second.stop(), 0);
    }
  });

  it('an attempt that fails on an error is taken up again from its records, and still finds what differs', async (t) => {
    if (!pair.local) return t.skip('fails a read with a fail point (test clusters only)');
    const db = `verify_retry_${RUN}`;
    await seed(db, ['docs'], 100);
    const admin = destination.db('admin');
    // The first range comparison's read on the destination fails with an error that is not passing.
    await admin.command({
      configureFailPoint: 'failCommand',
      mode: { times: 1 },
      data: { failCommands: ['find'], errorCode: 2, appName: 'ferry-verify' },
    });
    const ferry = await startFerry(ferryArgs(`verify-retry-${RUN}`), { FERRY_VERIFY_RETRY_INTERVAL_MS: '1000' });
    try {
      assert.equal((await ferry.post('start', startBody(db))).status, 200);
      const stopped = await ferry.waitForProgress(
        (p) => p.warnings.some((w: string) => w.startsWith('Verification stopped on an error')),
        60_000,
      );
      assert.ok(
        stopped.warnings.some((w: string) => w.startsWith('Verification stopped on an error and continues in 1 s')),
        JSON.stringify(stopped.warnings),
      );
      await coll(destination, db, 'docs').deleteOne({ _id: 9 });
      const report = await ferry.waitForVerification((r) => r.mismatchCount >= 1, 60_000);
      assert.deepEqual(keysOf(report, db), ['docs|9|missing']);
      const ready = await ferry.waitForProgress((p) => p.canCommit === true, 60_000);
      assert.equal(ready.verification.source.phase, 'stream hashing');
      assert.ok(!ready.warnings.some((w: string) => w.startsWith('Verification stopped on an error')), JSON.stringify(ready.warnings));
    } finally {
      await admin.command({ configureFailPoint: 'failCommand', mode: 'off' }).catch(() => undefined);
      assert.equal(await ferry.stop(), 0);
    }
  });

  it('a collection dropped while it is being planned is no error: the drop is followed, the rest verified', async (t) => {
    if (!pair.local) return t.skip('delays a read with a fail point (test clusters only)');
    const db = `verify_gone_${RUN}`;
    await seed(db, ['docs', 'gone'], 100);
    const admin = source.db('admin');
    // The verifier's statistics read of `gone` waits 2 s, and the collection is dropped meanwhile.
    const { count } = await admin.command({
      configureFailPoint: 'failCommand',
      mode: { times: 1 },
      data: { failCommands: ['aggregate'], blockConnection: true, blockTimeMS: 2000, appName: 'ferry-verify', namespace: `${db}.gone` },
    });
    const ferry = await startFerry(ferryArgs(`verify-gone-${RUN}`));
    try {
      assert.equal((await ferry.post('start', startBody(db))).status, 200);
      await admin.command({ waitForFailPoint: 'failCommand', timesEntered: Number(count) + 1, maxTimeMS: 60_000 });
      await coll(source, db, 'gone').drop();
      const ready = await ferry.waitForProgress((p) => p.canCommit === true, 60_000);
      assert.deepEqual(ready.warnings, []);
      await coll(destination, db, 'docs').deleteOne({ _id: 9 });
      const report = await ferry.waitForVerification((r) => r.mismatchCount >= 1, 60_000);
      assert.deepEqual(keysOf(report, db), ['docs|9|missing']);
      const stopped = ferry.log().filter((line) => String(line.message).startsWith('Verification stopped'));
      assert.deepEqual(stopped, []);
      assert.deepEqual(
        (await destination.db(db).listCollections({}, { nameOnly: true }).toArray()).map((c) => c.name),
        ['docs'],
      );
    } finally {
      await admin.command({ configureFailPoint: 'failCommand', mode: 'off' }).catch(() => undefined);
      assert.equal(await ferry.stop(), 0);
    }
  });

  it('while idle, reads and writes its records only when something moved: not every second, as it did', async () => {
    const db = `verify_idle_${RUN}`;
    await seed(db, ['docs'], 50);
    const ferry = await startFerry(ferryArgs(`verify-idle-${RUN}`));
    try {
      assert.equal((await ferry.post('start', startBody(db))).status, 200);
      await ferry.waitForProgress((p) => p.canCommit === true, 60_000);
      // With nothing waiting, nothing applied and nothing written, nothing new is due: its DDL loop
      // asked for waiting definitions twice a second (7-8 reads in 4 s), its re-check loop for stored
      // re-checks twice a second and progress counted them every second (12-14).
      const definitions = await quietWindows(destination, METADATA_COLLECTIONS.verificationCatalogRechecks, ['query'], 1);
      assert.ok(
        definitions.some((count) => count <= 1),
        `reads of the waiting definitions in each 4 s: ${definitions.join(', ')}`,
      );
      const rechecks = await quietWindows(destination, METADATA_COLLECTIONS.verificationRechecks, ['query', 'command'], 2);
      assert.ok(
        rechecks.some((count) => count <= 2),
        `reads of the stored re-checks in each 4 s: ${rechecks.join(', ')}`,
      );
      // The destination stream's position moves with Ferry's own metadata writes, and recording it was
      // one: a write a second (4-6 in 4 s). Both streams are recorded every 10 s at most.
      const positions = await quietWindows(destination, METADATA_COLLECTIONS.verification, ['update'], 2);
      assert.ok(
        positions.some((count) => count <= 2),
        `updates of the verifier's record in each 4 s: ${positions.join(', ')}`,
      );
      // Its progress figures (its ranges' summary, its differences' count and first few) were read
      // every second (4 and 8 reads in 4 s); they change only with its own writes.
      const ranges = await quietWindows(destination, METADATA_COLLECTIONS.verificationPartitions, ['query'], 1);
      assert.ok(
        ranges.some((count) => count <= 1),
        `reads of its ranges in each 4 s: ${ranges.join(', ')}`,
      );
      const differences = await quietWindows(destination, METADATA_COLLECTIONS.verificationMismatches, ['query', 'command'], 1);
      assert.ok(
        differences.some((count) => count <= 1),
        `reads of its differences in each 4 s: ${differences.join(', ')}`,
      );
    } finally {
      assert.equal(await ferry.stop(), 0);
    }
  });

  it('is off with verification: {enabled: false}: progress shows no verification and the report says so', async () => {
    const db = `verify_off_${RUN}`;
    await seed(db, ['docs'], 50);
    const ferry = await startFerry(ferryArgs(`verify-off-${RUN}`));
    try {
      assert.equal((await ferry.post('start', { ...startBody(db), verification: { enabled: false } })).status, 200);
      const ready = await ferry.waitForProgress((p) => p.canCommit === true, 60_000);
      assert.equal(ready.verification, null);
      const report = await ferry.verification();
      assert.equal(report!.enabled, false);
      const rows = await destination
        .db(METADATA_DATABASE)
        .collection('verification')
        .countDocuments({ _id: `verify-off-${RUN}` } as Document);
      assert.equal(rows, 0, 'nothing verified, nothing recorded');
    } finally {
      assert.equal(await ferry.stop(), 0);
    }
  });
});
