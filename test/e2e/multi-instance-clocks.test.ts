/**
 * Several instances on hosts whose clocks disagree (issue 13: "each instance on its own host").
 * Two `ferry` processes, one per shard of a 2-shard source; the second runs with its clock ten
 * minutes fast (test/helpers/clock-offset.ts). Who is alive and which pause/resume is the latest
 * are judged by the destination's clock, so the fast instance neither takes the other for dead
 * nor mistakes an older command for the latest, and the migration commits.
 *
 * `FERRY_TEST_SHARDED_URI` and `FERRY_TEST_RS_URI` point the clusters at real deployments.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { fileURLToPath } from 'node:url';
import { startFerry, type FerryProcess } from './ferry-process.js';
import { shardedSourcePair, sortedDocs, type ShardedSourcePair } from './multi-instance-fixtures.js';

const CLOCK_OFFSET = fileURLToPath(new URL('../helpers/clock-offset.js', import.meta.url));
const TEN_MINUTES_MS = 10 * 60_000;
const DB = `multi_clocks_${process.pid}`;

let pair: ShardedSourcePair;

before(async () => {
  pair = await shardedSourcePair();
  const admin = pair.source.db('admin');
  await admin.command({ enableSharding: DB, primaryShard: pair.shards[0] });
  await admin.command({ shardCollection: `${DB}.orders`, key: { customer: 1 } });
  await admin.command({ split: `${DB}.orders`, middle: { customer: 50 } });
  await admin.command({ moveChunk: `${DB}.orders`, find: { customer: 70 }, to: pair.shards[1], _waitForDelete: true });
  await pair.source
    .db(DB)
    .collection('orders')
    .insertMany(Array.from({ length: 200 }, (_, i) => ({ _id: i, customer: i % 100, total: i })) as never[]);
});

after(() => pair?.stop());

describe('several instances whose host clocks disagree', () => {
  const ferries: FerryProcess[] = [];
  after(async () => {
    await Promise.all(ferries.map((each) => each.stop().catch(() => null)));
  });

  it('agree on who is alive and which command is the latest, by the destination’s clock, and commit', async () => {
    const [first, second] = pair.shards;
    const args = (id: string) => ['--cluster0', pair.sourceUri, '--cluster1', pair.destinationUri, '--id', id];
    const one = await startFerry(args(first!), { FERRY_COMMIT_RETRY_INTERVAL_MS: '200' });
    const fast = await startFerry(
      args(second!),
      { FERRY_COMMIT_RETRY_INTERVAL_MS: '200', FERRY_TEST_CLOCK_OFFSET_MS: String(TEN_MINUTES_MS) },
      undefined,
      ['--import', CLOCK_OFFSET],
    );
    ferries.push(one, fast);
    const body = { source: 'cluster0', destination: 'cluster1', includeNamespaces: [{ database: DB }] };
    assert.equal((await one.post('start', body)).status, 200);
    assert.equal((await fast.post('start', body)).status, 200);

    // Alive: the fast instance does not take the other's lease for expired.
    const ready = await Promise.all([one, fast].map((each) => each.waitForProgress((p) => p.canCommit === true, 120_000)));
    for (const progress of ready) assert.deepEqual(progress.warnings, []);
    const notRunning = (p: Record<string, any>) => (p.warnings as string[]).filter((w) => w.includes('not running'));
    assert.deepEqual(notRunning(await fast.progress()), []);

    // The latest command: pause to both, then resume to the instance with the right clock only.
    // The fast one's pause is stamped after that resume by its own clock, not by the destination's.
    assert.equal((await one.post('pause', {})).status, 200);
    assert.equal((await fast.post('pause', {})).status, 200);
    assert.equal((await one.post('resume', {})).status, 200);
    const resumeMissing = new RegExp(`^resume was sent to "${first}" but not to "${second}"`);
    for (const each of [one, fast]) {
      const seen = await each.waitForProgress((p) => (p.warnings as string[]).some((w) => resumeMissing.test(w)), 30_000);
      assert.equal(
        (seen.warnings as string[]).some((w) => w.startsWith('pause was sent')),
        false,
        JSON.stringify(seen.warnings),
      );
    }
    assert.equal((await fast.post('resume', {})).status, 200);

    await pair.source
      .db(DB)
      .collection('orders')
      .updateMany({ customer: { $in: [10, 90] } }, { $inc: { total: 1000 } });
    await Promise.all([one, fast].map((each) => each.waitForProgress((p) => p.canCommit === true, 60_000)));
    assert.equal((await one.post('commit', {})).status, 200);
    assert.equal((await fast.post('commit', {})).status, 200);
    await Promise.all([one, fast].map((each) => each.waitForProgress((p) => p.state === 'COMMITTED', 120_000)));
    assert.deepEqual(await sortedDocs(pair.destination, DB, 'orders'), await sortedDocs(pair.source, DB, 'orders'));
    for (const each of ferries.splice(0)) assert.equal(await each.stop(), 0);
  });
});
