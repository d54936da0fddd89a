/**
 * The whole round trip through the real `ferry` process: a reversible sync with writes on the
 * source, commit, writes on the new cluster (inserts, updates, deletes, transactions, DDL: indexes,
 * renames, drops), reverse, more writes, commit, and the original cluster equals the new one in
 * documents, options and indexes; then reverse again, writes on the original cluster, commit once
 * more, and both are equal again. At each step the side the state machine says is blocked refuses
 * the application's writes (UserWritesBlocked) and the other takes them; while the reversed sync
 * runs its destination holds every characteristic in temporary form; the way back is recorded on
 * both clusters at each commit; after each commit the embedded verifier of that direction finds its
 * destination clean.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { Document, Timestamp } from 'bson';
import { RUN } from './copy-fixtures.js';
import { playOperations, sampleOperations } from './cea-workload.js';
import { commitWhenReady, type FerryProcess, type Progress } from './ferry-process.js';
import {
  assertBlocked,
  assertTemporaryForms,
  differences,
  local,
  metadata,
  REVERSIBLE,
  seedReversible,
  startReversePair,
  type ReversePair,
} from './reverse-fixtures.js';

const DB = `reverse_${RUN}`;
const ID = `reverse-${RUN}`;

/** Writes on one cluster beside the random workload: a transaction, a rename, a new unique index. */
async function namedWrites(pair: ReversePair, side: 0 | 1, tag: string): Promise<void> {
  const client = pair.app[side];
  const db = client.db(DB);
  await client.withSession((session) =>
    session.withTransaction(async () => {
      await db.collection('c3').insertOne({ _id: `${tag}-tx-1`, n: 1 } as Document, { session });
      await db.collection('c3').updateOne({ _id: `${tag}-tx-1` } as Document, { $set: { n: 2 } }, { session });
      await db.collection('c1').insertOne({ _id: `${tag}-tx-2` } as Document, { session });
    }),
  );
  await db.collection(`moved_${tag}`).insertMany([{ _id: 1 }, { _id: 2 }] as Document[]);
  await db.collection(`moved_${tag}`).rename(`renamed_${tag}`);
  await db.collection(`renamed_${tag}`).createIndex({ k: 1 }, { name: 'k_unique', unique: true, sparse: true });
  await db.collection('log').insertOne({ _id: `${tag}-log`, line: tag } as Document);
  await db.collection('events').insertOne({ _id: new Date(), tag } as Document);
}

/**
 * Commits, waits for COMMITTED, then for the embedded verifier's final pass: it must find the
 * destination of this direction clean (its record lives in that direction's metadata, on `destination`).
 */
async function commitAndWait(ferry: FerryProcess, pair: ReversePair, destination: 0 | 1): Promise<Progress> {
  const committed = await commitWhenReady(ferry);
  assert.equal(committed.status, 200, JSON.stringify(committed.body));
  const done = await ferry.waitForProgress((p) => p.state === 'COMMITTED', 120_000);
  const report = await ferry.waitForVerification((r) => r.outcome !== 'pending', 120_000);
  assert.equal(report.outcome, 'clean', JSON.stringify(report.mismatches));
  assert.ok(report.progress.source.hashedDocumentCount > 0, JSON.stringify(report.progress));
  const record = (await metadata(pair.root[destination], 'verification')).find((d) => d._id === ID);
  assert.equal(record?.outcome, 'clean', `the verification of this direction is recorded on cluster${destination}`);
  return done;
}

/** The way back of the sync reversed `reversals` times, as both clusters recorded it at its commit. */
async function assertWayBack(pair: ReversePair, reversals: number, source: 'cluster0' | 'cluster1'): Promise<Timestamp> {
  const destination = source === 'cluster0' ? 'cluster1' : 'cluster0';
  const records = await Promise.all(pair.root.map(async (client) => (await metadata(client, 'wayBack')).find((d) => d._id === ID)));
  for (const record of records) {
    assert.ok(record !== undefined, 'the way back is recorded on both clusters');
    assert.equal(Number(record.reversals), reversals);
    assert.equal(record.source, source);
    assert.equal(record.writableAt?._bsontype, 'Timestamp');
    assert.deepEqual(record.userWritesBlocked, { [source]: true, [destination]: false });
  }
  assert.ok(records[0]!.writableAt.equals(records[1]!.writableAt), 'both clusters record the same time');
  return records[0]!.writableAt as Timestamp;
}

describe('reverse: a cut-over that can be undone', { skip: local ? false : 'needs test clusters of its own, with users' }, () => {
  let pair: ReversePair;

  before(async () => {
    pair = await startReversePair();
    await seedReversible(pair.app[0], DB);
  });

  after(async () => {
    await pair?.close();
  });

  it('start → commit → reverse → commit → reverse → commit, every write carried each way', async () => {
    const ferry = await pair.ferry('reverse');
    try {
      // Forward: cluster0 → cluster1, with writes on cluster0 while it runs.
      const started = await ferry.post('start', REVERSIBLE);
      assert.equal(started.status, 200, JSON.stringify(started.body));
      await assertBlocked(pair, DB, [false, true], 'during the forward sync');
      await playOperations(pair.app[0], DB, sampleOperations(1, 60, 2));
      await commitAndWait(ferry, pair, 1);
      await assertBlocked(pair, DB, [true, false], 'once the forward sync is committed');
      await assertWayBack(pair, 0, 'cluster0');
      assert.deepEqual(await differences(pair), [], 'cluster1 equals cluster0 after the forward commit');

      // The application works on cluster1, then wants to go back.
      const onNew = await playOperations(pair.app[1], DB, sampleOperations(2, 80, 3));
      assert.ok(onNew.applied > 40, `the writes on the new cluster went through (${JSON.stringify(onNew)})`);
      await namedWrites(pair, 1, 'after-commit');

      const reversed = await ferry.post('reverse', {});
      assert.equal(reversed.status, 200, JSON.stringify(reversed.body));
      const reversing = await ferry.progress();
      assert.ok(['REVERSING', 'RUNNING'].includes(reversing.state), reversing.state);
      assert.match(reversing.directionMapping.Source, /^cluster1: /);
      assert.match(reversing.directionMapping.Destination, /^cluster0: /);
      const running = await ferry.waitForProgress((p) => p.state === 'RUNNING', 60_000);
      assert.match(running.directionMapping.Source, /^cluster1: /);
      assert.equal(running.canWrite, false);
      await assertBlocked(pair, DB, [true, false], 'while the reversed sync runs');
      await assertTemporaryForms(pair.root[0], DB);

      // Writes continue on cluster1 while the reversed sync runs.
      await playOperations(pair.app[1], DB, sampleOperations(3, 60, 2));
      await namedWrites(pair, 1, 'while-reversed');
      // Counted from zero in the reversed direction (the forward sync applied events too).
      const ready = await ferry.waitForProgress((p) => p.canCommit === true && p.totalEventsApplied > 0, 120_000);
      assert.ok(ready.lagTimeSeconds <= 30);
      assert.equal(ready.info, 'change event application');
      await commitAndWait(ferry, pair, 0);
      await assertBlocked(pair, DB, [false, true], 'once the reversed sync is committed');
      await assertWayBack(pair, 1, 'cluster1');
      assert.deepEqual(await differences(pair), [], 'cluster0 equals cluster1 in documents, options and indexes');

      // And back again: cluster0 → cluster1.
      const again = await ferry.post('reverse', {});
      assert.equal(again.status, 200, JSON.stringify(again.body));
      const forward = await ferry.waitForProgress((p) => p.state === 'RUNNING', 60_000);
      assert.match(forward.directionMapping.Source, /^cluster0: /);
      await assertBlocked(pair, DB, [false, true], 'while the twice-reversed sync runs');
      await assertTemporaryForms(pair.root[1], DB);
      await playOperations(pair.app[0], DB, sampleOperations(4, 60, 2));
      await namedWrites(pair, 0, 'reversed-twice');
      await commitAndWait(ferry, pair, 1);
      await assertBlocked(pair, DB, [true, false], 'once the twice-reversed sync is committed');
      await assertWayBack(pair, 2, 'cluster0');
      assert.deepEqual(await differences(pair), [], 'cluster1 equals cluster0 again');

      const resume = await Promise.all(pair.root.map(async (client) => (await metadata(client, 'resume')).find((d) => d._id === ID)));
      assert.deepEqual(
        resume.map((doc) => [doc?.state, Number(doc?.reversals ?? 0)]),
        [
          ['COMMITTED', 1],
          ['COMMITTED', 2],
        ],
        'each cluster holds the metadata of the last sync it was the destination of',
      );
    } finally {
      assert.equal(await ferry.stop(), 0);
    }
  });
});
