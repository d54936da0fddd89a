/**
 * Commit rules through the real `ferry` process: commit is refused before `canCommit` (and
 * changes nothing), needs an empty body, moves RUNNING → COMMITTING → COMMITTED by itself, and
 * restores every temporary characteristic (unique, TTL, hidden, capped size and max). A restore the
 * destination refuses (duplicates that forbid a unique index) keeps the sync COMMITTING with the
 * index named in progress, and the commit completes by itself once the duplicates are gone.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { Document } from 'bson';
import { RUN, useClusterPair } from './copy-fixtures.js';
import { startFerry } from './ferry-process.js';

const clusters = useClusterPair();

function filterFor(db: string) {
  return { includeNamespaces: [{ database: db }] };
}

async function differences(db: string) {
  return clusters.differences(filterFor(db).includeNamespaces);
}

describe('commit', () => {
  it("preExistingDestinationData (mongosync's): the destination's own data stays, views are not synced, no write blocking", async () => {
    const db = `commit_pre_${RUN}`;
    const kept = `commit_kept_${RUN}`;
    await clusters.source
      .db(db)
      .collection<{ _id: number }>('orders')
      .insertMany(Array.from({ length: 50 }, (_, i) => ({ _id: i })));
    await clusters.source.db(db).createCollection('recent', { viewOn: 'orders', pipeline: [{ $match: { _id: { $gte: 40 } } }] });
    const ferry = await startFerry([
      '--cluster0',
      clusters.pair.cluster0,
      '--cluster1',
      clusters.pair.cluster1,
      '--id',
      `commit-pre-${RUN}`,
    ]);
    try {
      await clusters.emptyDestination();
      await clusters.destination.db(kept).collection<{ _id: number }>('existing').insertOne({ _id: 1 });
      const refused = await ferry.post('start', { source: 'cluster0', destination: 'cluster1', ...filterFor(db) });
      assert.equal(refused.body.error, 'DestinationNotEmpty', 'without preExistingDestinationData the destination must be empty');
      const started = await ferry.post('start', {
        source: 'cluster0',
        destination: 'cluster1',
        preExistingDestinationData: true,
        ...filterFor(db),
      });
      assert.equal(started.status, 200, JSON.stringify(started.body));
      await ferry.waitForProgress((p) => p.canCommit === true, 60_000);
      await clusters.source.db(db).collection<{ _id: number }>('orders').insertOne({ _id: 50 });
      await ferry.waitForProgress((p) => p.lagTimeSeconds === 0 && p.totalEventsApplied >= 1, 60_000);
      assert.equal((await ferry.post('commit', {})).status, 200);
      await ferry.waitForProgress((p) => p.state === 'COMMITTED', 60_000);
      const log = ferry.log();
      assert.ok(log.some((line) => String(line.message).startsWith('ATTENTION! Data migration to a non-empty cluster')));
      assert.ok(log.some((line) => String(line.message).startsWith('Views are not synced with preExistingDestinationData')));
      assert.ok(!log.some((line) => /user writes on the (source|destination)/i.test(String(line.message))), 'no write blocking');
    } finally {
      assert.equal(await ferry.stop(), 0);
    }
    assert.deepEqual(await clusters.destination.db(kept).collection('existing').find({}).toArray(), [{ _id: 1 }]);
    assert.equal(await clusters.destination.db(db).collection('orders').countDocuments(), 51);
    const views = await clusters.destination.db(db).listCollections({ type: 'view' }).toArray();
    assert.deepEqual(views, [], 'the view is left for the operator to create after the cut-over');
  });

  it("--hotDocIDs (mongosync's): their events are not applied during the sync; the commit copies them from the source", async () => {
    const db = `commit_hot_${RUN}`;
    const counters = clusters.source.db(db).collection<{ _id: number; n: number }>('counters');
    await counters.insertMany([
      { _id: 1, n: 0 },
      { _id: 2, n: 0 },
      { _id: 3, n: 0 },
    ]);
    const hot = { db, collection: 'counters', ids: [{ _id: { $numberInt: '1' } }, { _id: { $numberLong: '2' } }] };
    const ferry = await startFerry([
      '--cluster0',
      clusters.pair.cluster0,
      '--cluster1',
      clusters.pair.cluster1,
      '--id',
      `commit-hot-${RUN}`,
      '--hotDocIDs',
      JSON.stringify(hot),
    ]);
    const destination = clusters.destination.db(db).collection<{ _id: number; n: number }>('counters');
    try {
      await clusters.emptyDestination();
      assert.equal((await ferry.post('start', { source: 'cluster0', destination: 'cluster1', ...filterFor(db) })).status, 200);
      await ferry.waitForProgress((p) => p.canCommit === true, 60_000);
      for (let i = 1; i <= 20; i++) await counters.updateOne({ _id: 1 }, { $set: { n: i } });
      await counters.deleteOne({ _id: 2 }); // a hot document the source no longer holds
      await counters.updateOne({ _id: 3 }, { $set: { n: 5 } }); // not hot: applied as usual
      await ferry.waitForProgress((p) => p.lagTimeSeconds === 0 && p.totalEventsApplied >= 1, 60_000);
      for (let tries = 0; (await destination.findOne({ _id: 3 }))?.n !== 5; tries++) {
        assert.ok(tries < 200, 'the event of the document that is not hot is applied');
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      assert.deepEqual(await destination.find({}, { sort: { _id: 1 } }).toArray(), [
        { _id: 1, n: 0 },
        { _id: 2, n: 0 },
        { _id: 3, n: 5 },
      ]);

      assert.equal((await ferry.post('commit', {})).status, 200);
      await ferry.waitForProgress((p) => p.state === 'COMMITTED', 60_000);
      const copied = ferry.log().find((line) => line.message === 'Commit: hot documents (--hotDocIDs) copied from the source');
      assert.deepEqual({ written: copied?.written, deleted: copied?.deleted }, { written: 1, deleted: 1 });
    } finally {
      assert.equal(await ferry.stop(), 0);
    }
    assert.deepEqual(await destination.find({}, { sort: { _id: 1 } }).toArray(), [
      { _id: 1, n: 20 },
      { _id: 3, n: 5 },
    ]);
    assert.deepEqual(await differences(db), []);
  });

  it('is refused before canCommit, and with a body, changing nothing', async () => {
    const db = `commit_early_${RUN}`;
    const docs = Array.from({ length: 3000 }, (_, i) => ({ _id: i, pad: 'x'.repeat(500) }));
    await clusters.source
      .db(db)
      .collection('big')
      .insertMany(docs as Document[]);
    const ferry = await startFerry([
      '--cluster0',
      clusters.pair.cluster0,
      '--cluster1',
      clusters.pair.cluster1,
      '--id',
      `commit-early-${RUN}`,
      '--copyWorkers',
      '1',
      '--batchesInFlight',
      '1',
      '--batchBytes',
      '4096',
    ]);
    try {
      await clusters.emptyDestination();
      assert.equal((await ferry.post('start', { source: 'cluster0', destination: 'cluster1', ...filterFor(db) })).status, 200);
      const early = await ferry.post('commit', {});
      assert.equal(early.status, 409);
      assert.equal(early.body.error, 'NotReadyToCommit');
      assert.equal((await ferry.progress()).state, 'RUNNING');

      await ferry.waitForProgress((p) => p.canCommit === true, 120_000);
      const withBody = await ferry.post('commit', { now: true });
      assert.equal(withBody.status, 400);
      assert.equal(withBody.body.error, 'InvalidRequest');
      assert.equal((await ferry.progress()).state, 'RUNNING');

      const committed = await ferry.post('commit', {});
      assert.equal(committed.status, 200, JSON.stringify(committed.body));
      const again = await ferry.post('commit', {});
      assert.equal(again.body.error, 'InvalidStateTransition');
      const done = await ferry.waitForProgress((p) => p.state === 'COMMITTED', 60_000);
      assert.equal(done.canWrite, true);
      assert.equal(done.info, 'commit completed');
      const reverse = await ferry.post('reverse', {});
      assert.equal(reverse.body.error, 'NotReversible', 'a sync not started reversible cannot be reversed');
    } finally {
      assert.equal(await ferry.stop(), 0);
    }
    assert.deepEqual(await differences(db), []);
  });

  it(
    'restores unique, TTL, hidden and capped characteristics; a refused ' +
      'unique conversion is reported by name and the commit finishes once fixed',
    async () => {
      const db = `commit_restore_${RUN}`;
      const source = clusters.source.db(db);
      await source
        .collection('people')
        .insertMany(
          Array.from({ length: 50 }, (_, i) => ({ _id: i, email: `p${i}@example.com`, at: new Date(), legacy: i })) as Document[],
        );
      await source
        .collection('people')
        .createIndexes([
          { key: { email: 1 }, name: 'email_unique', unique: true },
          { key: { at: 1 }, name: 'at_ttl', expireAfterSeconds: 30 * 86_400 },
          { key: { legacy: 1 }, name: 'legacy_hidden', hidden: true },
          { key: { legacy: -1 }, name: 'legacy_prepared', prepareUnique: true } as never,
        ]);
      await source.createCollection('log', { capped: true, size: 64 * 1024, max: 20 });
      for (let i = 0; i < 10; i++) await source.collection('log').insertOne({ _id: i, line: `line ${i}` } as Document);

      const ferry = await startFerry(
        ['--cluster0', clusters.pair.cluster0, '--cluster1', clusters.pair.cluster1, '--id', `commit-restore-${RUN}`],
        { FERRY_COMMIT_RETRY_INTERVAL_MS: '200' },
      );
      try {
        await clusters.emptyDestination();
        assert.equal((await ferry.post('start', { source: 'cluster0', destination: 'cluster1', ...filterFor(db) })).status, 200);
        await ferry.waitForProgress((p) => p.canCommit === true, 60_000);
        const people = clusters.destination.db(db).collection('people');
        const temporary = Object.fromEntries((await people.listIndexes().toArray()).map((index) => [index.name, index]));
        assert.equal(temporary.email_unique.unique, undefined, 'non-unique during the sync');
        assert.equal(temporary.at_ttl.expireAfterSeconds, 2147483647, 'TTL off during the sync');
        assert.equal(temporary.legacy_hidden.hidden, undefined, 'visible during the sync');

        // Something wrote to the destination behind Ferry's back: a duplicate email.
        await people.insertOne({ _id: 'intruder', email: 'p7@example.com' } as Document);
        assert.equal((await ferry.post('commit', {})).status, 200);
        const stuck = await ferry.waitForProgress((p) => p.warnings?.some((w: string) => w.includes('email_unique')), 60_000);
        assert.equal(stuck.state, 'COMMITTING');
        const warning = stuck.warnings.find((w: string) => w.includes('email_unique'));
        assert.match(warning, /unique/);
        assert.match(warning, new RegExp(`${db}\\.people`));
        assert.match(warning, /CannotConvertIndexToUnique/);
        await new Promise((resolve) => setTimeout(resolve, 600));
        assert.equal((await ferry.progress()).state, 'COMMITTING', 'never committed with a characteristic missing');

        await people.deleteOne({ _id: 'intruder' } as Document);
        await ferry.waitForProgress((p) => p.state === 'COMMITTED', 60_000);
        // The verifier saw the intruder come and go; its final pass finds the destination clean.
        const report = await ferry.waitForVerification((r) => r.outcome !== 'pending', 60_000);
        assert.equal(report.outcome, 'clean', JSON.stringify(report));
        assert.deepEqual((await ferry.progress()).warnings, []);
      } finally {
        assert.equal(await ferry.stop(), 0);
      }
      assert.deepEqual(await differences(db), []);
      const log = (await clusters.destination.db(db).listCollections({ name: 'log' }, { nameOnly: false }).toArray()) as {
        options?: Document;
      }[];
      assert.equal(log[0]!.options!.size, 64 * 1024);
      assert.equal(Number(log[0]!.options!.max), 20);
    },
  );
});
