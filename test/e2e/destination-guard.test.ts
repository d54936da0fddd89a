/**
 * Something other than Ferry changes what Ferry owns on the destination mid-sync: a synced
 * database dropped, Ferry's metadata database dropped, the destination restarted empty, a synced
 * collection dropped while the commit waits. Each time the sync stops with DestinationChanged
 * (named in progress), is never COMMITTED, and refuses resume and commit; Ferry's own DDL (applied
 * for the source's) is never taken for interference.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { Document } from 'bson';
import { METADATA_DATABASE } from '../../src/domain/namespaces.js';
import { RUN } from './copy-fixtures.js';
import { startFerry, type FerryProcess } from './ferry-process.js';
import { dbName, LOCAL_ONLY, QUICK, runningSync, seed, useFaultPair, warningMatching } from './safety-fixtures.js';

/** Waits until the sync stopped for good on DestinationChanged; checks what progress and the API say. */
async function assertStoppedForGood(ferry: FerryProcess, named: RegExp) {
  const stopped = await ferry.waitForProgress((p) => p.state === 'PAUSED', 30_000);
  const warning = warningMatching(stopped, /DestinationChanged/);
  assert.match(warning, named);
  assert.match(warning, /cannot continue/);
  assert.doesNotMatch(warning, /POST \/api\/v1\/resume/, 'resume is not suggested: it cannot work');
  assert.equal(stopped.canCommit, false);
  assert.match(stopped.info, /destination was changed/);
  const resume = await ferry.post('resume', {});
  assert.equal(resume.status, 409);
  assert.equal(resume.body.error, 'SyncCannotContinue');
  assert.match(resume.body.errorDescription, /DestinationChanged/);
  assert.equal((await ferry.progress()).state, 'PAUSED', 'a refused resume changes nothing');
  return stopped;
}

describe('interference with what Ferry owns on the destination', { skip: LOCAL_ONLY }, () => {
  const pair = useFaultPair();

  it('a synced database dropped on the destination stops the sync by name, and a restart keeps it stopped', async () => {
    const db = dbName('guard_dropdb');
    await seed(pair.sourceClient, db, 'items', 300);
    const id = `guard-dropdb-${RUN}`;
    const { ferry } = await runningSync(pair, id, db);
    try {
      await pair.destinationClient.db(db).dropDatabase();
      await assertStoppedForGood(ferry, new RegExp(`${db}\\.items \\(a collection Ferry created\\) is gone`));
    } finally {
      assert.equal(await ferry.stop(), 0);
    }
    const again = await startFerry(['--cluster0', pair.source.uri, '--cluster1', pair.destination.uri, '--id', id], QUICK);
    try {
      const recovered = await again.progress();
      assert.equal(recovered.state, 'PAUSED');
      warningMatching(recovered, /cannot continue \(DestinationChanged\)/);
      assert.equal((await again.post('resume', {})).body.error, 'SyncCannotContinue');
    } finally {
      assert.equal(await again.stop(), 0);
    }
  });

  it("Ferry's own DDL for the source's (drop, re-create, rename) is not taken for interference", async () => {
    const db = dbName('guard_ddl');
    await seed(pair.sourceClient, db, 'items', 100);
    await seed(pair.sourceClient, db, 'other', 50);
    const { ferry } = await runningSync(pair, `guard-ddl-${RUN}`, db, { FERRY_GUARD_INTERVAL_MS: '100' });
    try {
      const source = pair.sourceClient.db(db);
      await source.collection('other').drop();
      await seed(pair.sourceClient, db, 'other', 10);
      await source.collection('items').rename('renamed');
      await source.collection('renamed').insertOne({ _id: 'late' } as Document);
      // Several checks of the destination run meanwhile.
      await new Promise((resolve) => setTimeout(resolve, 1500));
      await ferry.waitForProgress((p) => p.canCommit === true, 30_000);
      assert.equal((await ferry.post('commit', {})).status, 200);
      const done = await ferry.waitForProgress((p) => p.state === 'COMMITTED', 30_000);
      // Ferry's own DDL is not interference, and a verifier still rescanning it warns of nothing.
      assert.deepEqual(done.warnings, []);
    } finally {
      assert.equal(await ferry.stop(), 0);
    }
    const destination = pair.destinationClient.db(db);
    assert.equal(await destination.collection('renamed').countDocuments(), 101);
    assert.equal(await destination.collection('other').countDocuments(), 10);
    assert.equal((await destination.listCollections({ name: 'items' }).toArray()).length, 0);
  });

  it('a collection dropped while the commit waits: PAUSED with the reason, never COMMITTED', async () => {
    const db = dbName('guard_commit');
    await seed(pair.sourceClient, db, 'people', 50);
    await seed(pair.sourceClient, db, 'other', 20);
    await pair.sourceClient.db(db).collection('people').createIndex({ name: 1 }, { unique: true, name: 'name_unique' });
    const { ferry } = await runningSync(pair, `guard-commit-${RUN}`, db);
    try {
      // A duplicate written behind Ferry's back holds the commit (the unique index cannot be restored)...
      await pair.destinationClient
        .db(db)
        .collection('people')
        .insertOne({ _id: 'intruder', name: 'item 7' } as Document);
      assert.equal((await ferry.post('commit', {})).status, 200);
      await ferry.waitForProgress((p) => p.state === 'COMMITTING' && p.warnings?.some((w: string) => w.includes('name_unique')), 30_000);
      // ...and then a synced collection is dropped.
      await pair.destinationClient.db(db).collection('other').drop();
      await assertStoppedForGood(ferry, new RegExp(`${db}\\.other`));
      await new Promise((resolve) => setTimeout(resolve, 500));
      assert.equal((await ferry.progress()).state, 'PAUSED', 'never COMMITTED');
    } finally {
      assert.equal(await ferry.stop(), 0);
    }
  });

  it("Ferry's metadata database dropped mid-sync stops it", async () => {
    const db = dbName('guard_meta');
    await seed(pair.sourceClient, db, 'items', 200);
    const { ferry } = await runningSync(pair, `guard-meta-${RUN}`, db);
    try {
      await pair.destinationClient.db(METADATA_DATABASE).dropDatabase();
      await assertStoppedForGood(ferry, /metadata (database )?was dropped|is gone from the destination's metadata/);
    } finally {
      // Its state could not be recorded (the metadata is gone): a clean stop all the same.
      assert.equal(await ferry.stop(), 0);
    }
  });

  // Last: the destination is empty afterwards.
  it('the destination restarted empty stops the sync', async () => {
    const db = dbName('guard_restart');
    await seed(pair.sourceClient, db, 'items', 200);
    const { ferry } = await runningSync(pair, `guard-restart-${RUN}`, db);
    try {
      await pair.destination.restart();
      await assertStoppedForGood(ferry, /gone|dropped|restarted empty/);
    } finally {
      assert.equal(await ferry.stop(), 0);
    }
  });
});
