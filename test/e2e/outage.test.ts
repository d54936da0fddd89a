/**
 * A cluster that stops answering (frozen: its connections stay open, nothing comes back), as a
 * network partition or a stalled host does. While it does not answer, lag grows with the clock
 * (it neither freezes nor reads 0), `canCommit` is false, and a warning names the cluster and
 * since when; once it answers again the sync catches up and commits. And a stop asked meanwhile
 * ends within the stop timeout, the restart continuing from the metadata.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { Document } from 'bson';
import { RUN } from './copy-fixtures.js';
import { startFerry, type FerryProcess } from './ferry-process.js';
import { dbName, LOCAL_ONLY, QUICK, runningSync, seed, useFaultPair, warningMatching } from './safety-fixtures.js';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Inserts into `db.items` every 50 ms until stopped. */
function writeContinuously(insert: (doc: Document) => Promise<unknown>): { stop(): Promise<number> } {
  let running = true;
  let written = 0;
  const loop = (async () => {
    while (running) {
      await insert({ _id: `w${written}`, at: new Date() });
      written++;
      await sleep(50);
    }
  })();
  return {
    stop: async () => {
      running = false;
      await loop;
      return written;
    },
  };
}

/** Progress once a warning says `role` is unreachable; then the lag a few seconds later, which must have grown. */
async function assertLagGrows(ferry: FerryProcess, role: 'source' | 'destination') {
  const pattern = new RegExp(`The ${role} cluster[01] \\([^)]*\\) is unreachable: it has not answered since \\d{4}-\\d\\d-\\d\\dT`);
  const first = await ferry.waitForProgress((p) => p.warnings?.some((w: string) => pattern.test(w)), 30_000);
  warningMatching(first, pattern);
  assert.equal(first.canCommit, false, 'no commit while a cluster does not answer');
  assert.equal(typeof first.lagTimeSeconds, 'number');
  await sleep(3000);
  const later = await ferry.progress();
  assert.equal(later.canCommit, false);
  assert.ok(later.lagTimeSeconds >= 3, `lag grows with the clock: ${later.lagTimeSeconds} s after 3 s without ${role}`);
  assert.ok(later.lagTimeSeconds > first.lagTimeSeconds, `lag grows: ${first.lagTimeSeconds} → ${later.lagTimeSeconds}`);
  assert.equal(later.lag.overallLagSeconds, later.lagTimeSeconds);
}

describe('while a cluster does not answer', { skip: LOCAL_ONLY }, () => {
  const pair = useFaultPair();

  it('the destination frozen under writes: lag grows, canCommit falls, a warning names it; then it catches up and commits', async () => {
    const db = dbName('outage_destination');
    await seed(pair.sourceClient, db, 'items', 100);
    const { ferry } = await runningSync(pair, `outage-destination-${RUN}`, db);
    const writer = writeContinuously((doc) => pair.sourceClient.db(db).collection('items').insertOne(doc));
    try {
      pair.destination.freeze();
      try {
        await assertLagGrows(ferry, 'destination');
      } finally {
        pair.destination.resume();
      }
      const written = await writer.stop();
      await ferry.waitForProgress((p) => p.canCommit === true && p.warnings.length === 0, 60_000);
      assert.equal((await ferry.post('commit', {})).status, 200);
      await ferry.waitForProgress((p) => p.state === 'COMMITTED', 60_000);
      assert.equal(await pair.destinationClient.db(db).collection('items').countDocuments(), 100 + written);
    } finally {
      await writer.stop();
      assert.equal(await ferry.stop(), 0);
    }
  });

  it('the source frozen: lag does not read 0 but grows, a warning names the source; then it recovers', async () => {
    const db = dbName('outage_source');
    await seed(pair.sourceClient, db, 'items', 100);
    const { ferry } = await runningSync(pair, `outage-source-${RUN}`, db);
    try {
      pair.source.freeze();
      try {
        await assertLagGrows(ferry, 'source');
      } finally {
        pair.source.resume();
      }
      await ferry.waitForProgress((p) => p.canCommit === true && p.warnings.length === 0, 60_000);
    } finally {
      assert.equal(await ferry.stop(), 0);
    }
  });

  it('a stop while the source does not answer ends within the stop timeout; a restart continues to COMMITTED', async () => {
    const db = dbName('outage_stop');
    await seed(pair.sourceClient, db, 'items', 100);
    const id = `outage-stop-${RUN}`;
    const { ferry } = await runningSync(pair, id, db, { FERRY_STOP_TIMEOUT_MS: '2000' });
    pair.source.freeze();
    try {
      await ferry.waitForProgress((p) => p.warnings?.some((w: string) => /The source .* is unreachable/.test(w)), 30_000);
      // Without a bound the stop waits on the source for as long as it is frozen: far beyond this.
      const code = await Promise.race([ferry.stop('SIGTERM'), sleep(20_000).then(() => 'still running')]);
      assert.equal(code, 1, 'exited, saying it did not stop at a safe point');
      assert.ok(ferry.log().some((line) => /did not reach a safe point within 2000 ms/.test(String(line.message))));
    } finally {
      pair.source.resume();
      await ferry.stop('SIGKILL');
    }
    await pair.sourceClient
      .db(db)
      .collection('items')
      .insertOne({ _id: 'after' } as Document);
    const restarted = await startFerry(['--cluster0', pair.source.uri, '--cluster1', pair.destination.uri, '--id', id], QUICK);
    try {
      await restarted.waitForProgress((p) => p.canCommit === true, 60_000);
      assert.equal((await restarted.post('commit', {})).status, 200);
      await restarted.waitForProgress((p) => p.state === 'COMMITTED', 60_000);
      assert.equal(await pair.destinationClient.db(db).collection('items').countDocuments(), 101);
    } finally {
      assert.equal(await restarted.stop(), 0);
    }
  });
});
