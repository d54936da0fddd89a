/**
 * Ferry killed (SIGKILL) at each step of a reverse, then started again with the same flags: it
 * finishes the step it was in, from the metadata on the reversed sync's destination.
 *
 * - In REVERSING: the new destination refuses the changes that put it in temporary form (a fail
 *   point), so the reverse waits, naming them; killed there, a restarted Ferry reports REVERSING,
 *   finishes the reverse and runs the reversed sync.
 * - In the reversed sync's RUNNING, with events applied and more arriving: a restarted Ferry
 *   continues the reversed sync (not the committed one whose metadata the other cluster still
 *   holds) from its recorded position.
 * - In the reversed sync's COMMITTING, its restore refused (the same fail point): a restarted Ferry
 *   finishes the commit.
 * Throughout, writes go to the new source; at the end both clusters are equal.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { Document } from 'bson';
import type { MongoClient } from 'mongodb';
import { RUN } from './copy-fixtures.js';
import { playOperations, sampleOperations } from './cea-workload.js';
import { commitWhenReady, type FerryProcess } from './ferry-process.js';
import {
  assertTemporaryForms,
  blockMode,
  differences,
  local,
  REVERSIBLE,
  seedReversible,
  startReversePair,
  type ReversePair,
} from './reverse-fixtures.js';

const DB = `reverse_crash_${RUN}`;
const RETRY = { FERRY_COMMIT_RETRY_INTERVAL_MS: '200' };

/** Makes `client`'s cluster refuse every `collMod` (on), or stop refusing (off). */
async function refuseCollMod(client: MongoClient, on: boolean): Promise<void> {
  await client.db('admin').command({
    configureFailPoint: 'failCommand',
    mode: on ? 'alwaysOn' : 'off',
    data: { failCommands: ['collMod'], errorCode: 96 },
  });
}

/** The restarted Ferry found the reversed sync (reversed once) in `state`. */
function assertRecovered(ferry: FerryProcess, state: string): void {
  const line = ferry.log().find((entry) => String(entry.message).startsWith('Recovered a sync'));
  assert.equal(line?.state, state, JSON.stringify(line));
  assert.equal(line?.reversals, 1);
  assert.equal(line?.destination, 'cluster0');
}

describe('reverse survives SIGKILL', { skip: local ? false : 'needs test clusters of its own, with fail points' }, () => {
  let pair: ReversePair;
  let ferry: FerryProcess;

  before(async () => {
    pair = await startReversePair({ enableTestCommands: true });
    await seedReversible(pair.app[0], DB);
    ferry = await pair.ferry('reverse-crash', RETRY);
    assert.equal((await ferry.post('start', REVERSIBLE)).status, 200);
    await playOperations(pair.app[0], DB, sampleOperations(11, 40, 2));
    await ferry.waitForProgress((p) => p.canCommit === true, 120_000);
    assert.equal((await ferry.post('commit', {})).status, 200);
    await ferry.waitForProgress((p) => p.state === 'COMMITTED', 120_000);
    await playOperations(pair.app[1], DB, sampleOperations(12, 40, 2));
  });

  after(async () => {
    await ferry?.stop('SIGKILL');
    await pair?.close();
  });

  it('killed in REVERSING, finishes the reverse when started again', async () => {
    await refuseCollMod(pair.root[0], true);
    try {
      assert.equal((await ferry.post('reverse', {})).status, 200);
      const waiting = await ferry.waitForProgress((p) => p.warnings?.some((w: string) => w.includes('OperationFailed')), 60_000);
      assert.equal(waiting.state, 'REVERSING');
      assert.match(waiting.warnings.join('\n'), /Reverse could not make .* temporary on index "email_unique" of reverse_crash_\d+\.kept/);
      assert.equal(waiting.canCommit, false);
      assert.equal(await blockMode(pair.root[0]), true, 'the new destination is blocked');
      assert.equal(await blockMode(pair.root[1]), false, 'the new source is writable');
      assert.equal(await ferry.stop('SIGKILL'), null);
    } finally {
      await refuseCollMod(pair.root[0], false);
    }
    await pair.app[1]
      .db(DB)
      .collection('kept')
      .insertOne({ _id: 'while-down', email: 'down@example.com' } as Document);
    ferry = await pair.ferry('reverse-crash', RETRY);
    assertRecovered(ferry, 'REVERSING');
    const running = await ferry.waitForProgress((p) => p.state === 'RUNNING', 60_000);
    assert.match(running.directionMapping.Source, /^cluster1: /);
    assert.deepEqual(running.warnings, []);
    await assertTemporaryForms(pair.root[0], DB);
  });

  it('killed while the reversed sync runs, continues it when started again', async () => {
    const writes = playOperations(pair.app[1], DB, sampleOperations(13, 150, 2));
    await ferry.waitForProgress((p) => p.totalEventsApplied > 20, 60_000);
    assert.equal(await ferry.stop('SIGKILL'), null);
    await writes;
    ferry = await pair.ferry('reverse-crash', RETRY);
    assertRecovered(ferry, 'RUNNING');
    const recovered = await ferry.progress();
    assert.equal(recovered.state, 'RUNNING', 'the reversed sync, not the committed one');
    assert.match(recovered.directionMapping.Source, /^cluster1: /);
    await ferry.waitForProgress((p) => p.canCommit === true, 120_000);
    const kept = pair.root[0].db(DB).collection('kept');
    for (let tries = 0; (await kept.countDocuments({ _id: 'while-down' } as Document)) === 0; tries++) {
      assert.ok(tries < 100, 'a write made while Ferry was down reaches the new destination');
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  });

  it('killed in the reversed sync COMMITTING, finishes the commit when started again', async () => {
    await refuseCollMod(pair.root[0], true);
    try {
      assert.equal((await commitWhenReady(ferry)).status, 200);
      const stuck = await ferry.waitForProgress((p) => p.warnings?.some((w: string) => w.includes('OperationFailed')), 60_000);
      assert.equal(stuck.state, 'COMMITTING');
      assert.equal(await ferry.stop('SIGKILL'), null);
    } finally {
      await refuseCollMod(pair.root[0], false);
    }
    ferry = await pair.ferry('reverse-crash', RETRY);
    assertRecovered(ferry, 'COMMITTING');
    const done = await ferry.waitForProgress((p) => p.state === 'COMMITTED', 60_000);
    assert.match(done.directionMapping.Source, /^cluster1: /);
    assert.equal(await blockMode(pair.root[0]), false, 'the old source takes writes again');
    assert.equal(await blockMode(pair.root[1]), true, 'the new source is blocked from commit on');
    assert.deepEqual(await differences(pair), []);
    assert.equal(await ferry.stop(), 0);
  });
});
