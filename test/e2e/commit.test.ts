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
