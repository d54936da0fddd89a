/**
 * Change-event application end to end, driven as an operator would: two test clusters in their
 * own processes, the real `ferry` process, its HTTP API. A random workload (CRUD with operators
 * and pipelines, transactions, DDL: renames inside, into and out of the filter, drops, creations,
 * index creation, removal, hiding and TTL changes) runs while the initial copy runs and after it;
 * the sync reaches `canCommit`, is committed, and the destination equals the source: documents,
 * collection options and indexes in their restored form. Pause and resume during application
 * lose nothing either.
 */
import { before, after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { Document } from 'bson';
import { RUN, useClusterPair, waitForMarker } from './copy-fixtures.js';
import { EXCLUDED, playOperations, sampleOperations, seed } from './cea-workload.js';
import { commitWhenReady, copyFinished, startFerry, type FerryProcess, type Progress } from './ferry-process.js';
import { METADATA_DATABASE } from '../../src/domain/namespaces.js';

const clusters = useClusterPair();
/** Slow, fine-grained copy, so that the workload overlaps it. */
const COPY_FLAGS = ['--copyWorkers', '1', '--batchesInFlight', '1', '--batchBytes', '8192', '--partitionSizeMB', '1', '--applyLanes', '4'];

function filterFor(db: string) {
  return { includeNamespaces: [{ database: db }], excludeNamespaces: [{ database: db, collections: [EXCLUDED] }] };
}

async function assertEqualToSource(db: string): Promise<void> {
  const filter = filterFor(db);
  const differences = await clusters.differences(filter.includeNamespaces, filter.excludeNamespaces);
  assert.deepEqual(differences, []);
}

async function commitAndWait(ferry: FerryProcess): Promise<Progress> {
  const ready = await ferry.waitForProgress((p) => p.canCommit === true, 120_000);
  assert.ok(ready.lagTimeSeconds <= 30, JSON.stringify(ready));
  const committed = await commitWhenReady(ferry);
  assert.equal(committed.status, 200, JSON.stringify(committed.body));
  assert.match((await ferry.progress()).state, /^COMMITT(ING|ED)$/);
  return ferry.waitForProgress((p) => p.state === 'COMMITTED', 120_000);
}

describe('change-event application with a random workload during and after the copy', () => {
  const DB = `cea_${RUN}`;
  let ferry: FerryProcess;
  const samples: Progress[] = [];

  before(async () => {
    await seed(clusters.source, DB, 3000);
    await clusters.source
      .db(DB)
      .collection(EXCLUDED)
      .insertOne({ _id: 1, outside: true } as Document);
    await clusters.source
      .db(`elsewhere_${RUN}`)
      .collection('x')
      .insertOne({ _id: 1 } as Document);
    ferry = await startFerry([
      '--cluster0',
      clusters.pair.cluster0,
      '--cluster1',
      clusters.pair.cluster1,
      '--id',
      `cea-${RUN}`,
      ...COPY_FLAGS,
    ]);
    await clusters.emptyDestination();
    const started = await ferry.post('start', { source: 'cluster0', destination: 'cluster1', ...filterFor(DB) });
    assert.equal(started.status, 200, JSON.stringify(started.body));
  });

  after(async () => {
    if (ferry !== undefined) assert.equal(await ferry.stop(), 0);
  });

  it('applies events while the copy runs', async () => {
    let copying = true;
    // CRUD first, then DDL too (DDL on a collection still being copied waits for the copy).
    const operations = [...sampleOperations(100, 100, 0), ...sampleOperations(101, 250, 2)];
    await playOperations(clusters.source, DB, operations, async () => {
      if (!copying) return;
      const progress = await ferry.progress();
      samples.push(progress);
      copying = !copyFinished(progress);
    });
    await clusters.source
      .db(`elsewhere_${RUN}`)
      .collection('x')
      .insertOne({ _id: 2 } as Document);
    assert.ok(
      samples.some((p) => p.info === 'collection copy'),
      'the workload ran during the copy',
    );
    assert.ok(
      samples.some((p) => p.info === 'collection copy' && p.totalEventsApplied > 0),
      `events were applied before the copy ended: ${JSON.stringify(samples.map((p) => [p.info, p.totalEventsApplied]))}`,
    );
  });

  it('keeps applying after the copy, with progress saying so', async () => {
    await ferry.waitForProgress(copyFinished, 120_000);
    const before = (await ferry.progress()).totalEventsApplied as number;
    await playOperations(clusters.source, DB, sampleOperations(202, 400, 2));
    const caughtUp = await ferry.waitForProgress((p) => p.canCommit === true && p.lagTimeSeconds === 0, 120_000);
    assert.equal(caughtUp.info, 'change event application');
    assert.ok(caughtUp.totalEventsApplied > before, `${caughtUp.totalEventsApplied} > ${before}`);
    assert.deepEqual(caughtUp.lag, { overallLagSeconds: 0, crudLagSeconds: 0, ddlLagSeconds: 0 });
    assert.deepEqual(caughtUp.warnings, []);
    // The same work, counted on /metrics.
    const metrics = await (await fetch(`${ferry.base}/metrics`)).text();
    const counter = (name: string) => Number(new RegExp(`^${name} (\\d+)$`, 'm').exec(metrics)?.[1]);
    // Between two reads of progress (an event may still arrive: the counters never go back).
    const after = (await ferry.progress()).totalEventsApplied as number;
    const applied = counter('ferry_applied_events_total');
    assert.ok(applied >= caughtUp.totalEventsApplied && applied <= after, `${caughtUp.totalEventsApplied} ≤ ${applied} ≤ ${after}`);
    assert.ok(counter('ferry_copied_bytes_total') > 0 && counter('ferry_copied_documents_total') > 0, metrics);
  });

  /**
   * Progress can read lag 0 while the last workload's DDL is still being applied (the lag counts
   * whole seconds from the source time last read): in a CI run under a full run's load that took two
   * more minutes, each DDL seemingly waiting on the verifier's scans of the destination. A marker
   * applied says the sync is idle.
   */
  const appliedThroughNow = (name: string) => waitForMarker(clusters, DB, { _id: name }, { timeoutMs: 300_000 });

  it('while nothing happens on the source, asks it for change events about once a second, not continuously', async () => {
    await appliedThroughNow('before-idle-getMores');
    // Application and the verifier each keep a change stream open; with nothing to read, a
    // getMore waits a second on the server before it answers (a sync may wait days for its commit).
    // The verifier may still be reading the last workload's changes on a loaded machine: the
    // sync is idle once one 4 s window of three stays under the bound (polling never does).
    const getMores = async () => Number((await clusters.source.db('admin').command({ serverStatus: 1 })).opcounters.getmore);
    const windows: number[] = [];
    while (windows.length < 3 && !windows.some((asked) => asked <= 12)) {
      const first = await getMores();
      await new Promise((resolve) => setTimeout(resolve, 4000));
      windows.push((await getMores()) - first);
    }
    assert.ok(
      windows.some((asked) => asked <= 12),
      `getMores that reached the idle source in each 4 s: ${windows.join(', ')}`,
    );
  });

  it("while nothing happens on the source, leaves application's recorded position alone instead of rewriting it every second", async () => {
    // An idle stream's replies repeat their resume token, and the checkpoint is written when the
    // token moves (mongod's periodic no-op moves it every 10 s), not once a second. As above, one
    // quiet 4 s window of three is enough: the verifier may still be busy with the last workload.
    await appliedThroughNow('before-idle-checkpoints');
    const checkpoints = clusters.destination.db(METADATA_DATABASE).collection<{ _id: string; updatedAt: Date }>('changeStream');
    const written = async () => (await checkpoints.findOne({ _id: `cea-${RUN}` }))?.updatedAt.getTime();
    const windows: boolean[] = [];
    while (windows.length < 3 && !windows.includes(false)) {
      const first = await written();
      assert.ok(first !== undefined, 'application has recorded a position');
      await new Promise((resolve) => setTimeout(resolve, 4000));
      windows.push((await written()) !== first);
    }
    assert.ok(windows.includes(false), `the position was rewritten in each 4 s window: ${windows.join(', ')}`);
  });

  it(
    'commits: COMMITTING then COMMITTED, writable, lag 0, and the ' + 'destination equals the source with every characteristic restored',
    async () => {
      const done = await commitAndWait(ferry);
      assert.equal(done.canWrite, true);
      assert.equal(done.info, 'commit completed');
      assert.equal(done.lagTimeSeconds, 0);
      assert.equal(done.canCommit, false);
      await assertEqualToSource(DB);
    },
  );

  it('applied nothing outside the filter', async () => {
    const names = (await clusters.destination.db(DB).listCollections({}, { nameOnly: true }).toArray()).map((c) => c.name);
    assert.equal(names.includes(EXCLUDED), false);
    const { databases } = await clusters.destination.db('admin').command({ listDatabases: 1, nameOnly: true });
    assert.equal(
      (databases as { name: string }[]).some((d) => d.name === `elsewhere_${RUN}`),
      false,
    );
  });
});

describe('pause and resume during change-event application', () => {
  const DB = `cea_pause_${RUN}`;

  it('stops applying while PAUSED (lag null), continues from where it stopped after resume, and loses nothing', async () => {
    await seed(clusters.source, DB, 200);
    const ferry = await startFerry([
      '--cluster0',
      clusters.pair.cluster0,
      '--cluster1',
      clusters.pair.cluster1,
      '--id',
      `cea-pause-${RUN}`,
      '--applyLanes',
      '3',
    ]);
    try {
      await clusters.emptyDestination();
      assert.equal((await ferry.post('start', { source: 'cluster0', destination: 'cluster1', ...filterFor(DB) })).status, 200);
      await ferry.waitForProgress((p) => p.canCommit === true, 60_000);
      await playOperations(clusters.source, DB, sampleOperations(303, 150, 0));
      const paused = await ferry.post('pause', {});
      assert.equal(paused.status, 200, JSON.stringify(paused.body));
      const atPause = await ferry.progress();
      assert.equal(atPause.state, 'PAUSED');
      assert.equal(atPause.lagTimeSeconds, null);
      assert.equal(atPause.canCommit, false);

      const destinationCount = () => clusters.destination.db(DB).collection('c1').countDocuments();
      const countAtPause = await destinationCount();
      for (let k = 0; k < 40; k++)
        await clusters.source
          .db(DB)
          .collection('c1')
          .insertOne({ _id: 10_000 + k, whilePaused: true } as Document);
      await new Promise((resolve) => setTimeout(resolve, 1500));
      assert.equal(await destinationCount(), countAtPause, 'nothing applied while paused');

      assert.equal((await ferry.post('resume', {})).status, 200);
      await playOperations(clusters.source, DB, sampleOperations(304, 100, 2));
      const done = await commitAndWait(ferry);
      assert.ok(done.totalEventsApplied >= 190, `events counted across the pause: ${done.totalEventsApplied}`);
    } finally {
      assert.equal(await ferry.stop(), 0);
    }
    await assertEqualToSource(DB);
  });
});

describe('a change event the destination refuses', () => {
  const DB = `cea_refused_${RUN}`;

  it('stops application and pauses the sync naming the problem, even when no event follows, so it cannot be committed past', async () => {
    const items = clusters.source.db(DB).collection('items');
    await items.insertMany(Array.from({ length: 10 }, (_, i) => ({ _id: i, n: i })) as Document[]);
    const ferry = await startFerry([
      '--cluster0',
      clusters.pair.cluster0,
      '--cluster1',
      clusters.pair.cluster1,
      '--id',
      `cea-refused-${RUN}`,
    ]);
    try {
      await clusters.emptyDestination();
      assert.equal(
        (await ferry.post('start', { source: 'cluster0', destination: 'cluster1', includeNamespaces: [{ database: DB }] })).status,
        200,
      );
      await ferry.waitForProgress((p) => p.canCommit === true, 60_000);
      // The destination collection becomes a view: applying a write there fails for good.
      await clusters.destination.db(DB).dropCollection('items');
      await clusters.destination.db(DB).createCollection('items', { viewOn: 'elsewhere', pipeline: [] });
      await items.updateOne({ _id: 3 } as Document, { $set: { n: 'changed' } });
      // Then the source stays quiet: only the failed batch itself can report the failure.
      const paused = await ferry.waitForProgress((p) => p.state === 'PAUSED', 60_000);
      assert.ok(paused.warnings.length > 0, JSON.stringify(paused));
      const commit = await ferry.post('commit', {});
      assert.notEqual(commit.status, 200, JSON.stringify(commit.body));
      assert.equal((await ferry.progress()).state, 'PAUSED');
    } finally {
      assert.equal(await ferry.stop(), 0);
    }
  });
});
