/**
 * One sync, one acting Ferry: the lease of a sync (src/meta/lease.ts) and the fencing of metadata
 * writes by its epoch (src/meta/fence.ts). A second Ferry with the same --id is refused by name
 * while the first lives; a dead holder's lease is taken over (at once on the same machine, at its
 * expiry from elsewhere); a holder whose lease was taken over stops and writes nothing more; and a
 * second instance (another --id) whose namespaces overlap on the same destination is refused,
 * while a disjoint one runs and the first commit leaves the destination blocked for it.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { MongoClient } from 'mongodb';
import { METADATA_DATABASE } from '../../src/domain/namespaces.js';
import { crossClusterFence, EPOCH_FIELD, FencedCollection, fixedFence } from '../../src/meta/fence.js';
import { RUN } from './copy-fixtures.js';
import { startFerry } from './ferry-process.js';
import { dbName, LOCAL_ONLY, QUICK, runningSync, seed, useFaultPair, warningMatching } from './safety-fixtures.js';

const MAIN = fileURLToPath(new URL('../../src/cli/main.js', import.meta.url));

/** Runs ferry until it exits by itself (bounded); its exit code and stderr. */
function runToExit(args: string[], env: Record<string, string>, timeoutMs = 30_000): Promise<{ code: number | null; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [MAIN, '--port', '0', ...args], {
      stdio: ['ignore', 'ignore', 'pipe'],
      env: { ...process.env, ...env },
    });
    let stderr = '';
    child.stderr.on('data', (chunk) => (stderr += chunk));
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.once('exit', (code) => {
      clearTimeout(timer);
      resolve({ code, stderr });
    });
  });
}

function leases(client: MongoClient) {
  return client
    .db(METADATA_DATABASE)
    .collection<{ _id: string; epoch: number; holder: { host: string; pid: number; token: string } }>('leases');
}

describe('the lease of a sync', { skip: LOCAL_ONLY }, () => {
  const pair = useFaultPair({ enableTestCommands: true });
  const flags = (id: string) => ['--cluster0', pair.source.uri, '--cluster1', pair.destination.uri, '--id', id];

  it('a second Ferry with the same --id is refused by name while the first runs, and the first goes on', async () => {
    const db = dbName('lease_twice');
    await seed(pair.sourceClient, db, 'items', 100);
    const id = `lease-twice-${RUN}`;
    const { ferry } = await runningSync(pair, id, db);
    try {
      const second = await runToExit(flags(id), QUICK);
      assert.equal(second.code, 1);
      assert.match(second.stderr, /^ferry: error: SyncLeaseHeld: another Ferry runs the sync/);
      assert.match(second.stderr, new RegExp(`pid ${ferry.child.pid}\\b`), 'names the holder');
      assert.equal((await ferry.progress()).state, 'RUNNING');
      assert.equal((await ferry.post('commit', {})).status, 200);
      assert.equal((await ferry.waitForProgress((p) => p.state === 'COMMITTED', 30_000)).canWrite, true);
      // Even committed, the sync is the first Ferry's while it lives.
      assert.equal((await runToExit(flags(id), QUICK)).code, 1);
      assert.equal((await ferry.progress()).state, 'COMMITTED');
    } finally {
      assert.equal(await ferry.stop(), 0);
    }
  });

  it("a dead Ferry's lease is taken over: on the same machine at once, then the sync continues to COMMITTED", async () => {
    const db = dbName('lease_dead');
    await seed(pair.sourceClient, db, 'items', 100);
    const id = `lease-dead-${RUN}`;
    // A minute-long lease: waiting for it to expire would time the restart out.
    const { ferry } = await runningSync(pair, id, db, { FERRY_LEASE_DURATION_MS: '60000' });
    const before = await leases(pair.destinationClient).findOne({ _id: id });
    await ferry.stop('SIGKILL');
    const restarted = await startFerry(flags(id), { ...QUICK, FERRY_LEASE_DURATION_MS: '60000' });
    try {
      assert.equal((await restarted.progress()).state, 'RUNNING');
      const after = await leases(pair.destinationClient).findOne({ _id: id });
      assert.equal(after!.epoch, before!.epoch + 1, 'a takeover raises the epoch');
      assert.equal(after!.holder.pid, restarted.child.pid);
      await restarted.waitForProgress((p) => p.canCommit === true, 30_000);
      assert.equal((await restarted.post('commit', {})).status, 200);
      await restarted.waitForProgress((p) => p.state === 'COMMITTED', 30_000);
    } finally {
      assert.equal(await restarted.stop(), 0);
    }
  });

  it('a stop that lands while a restarted Ferry is starting its verifier ends at once, not at the stop deadline', async () => {
    const db = dbName('lease_stop_starting');
    await seed(pair.sourceClient, db, 'items', 100);
    const id = `lease-stop-starting-${RUN}`;
    const { ferry } = await runningSync(pair, id, db);
    assert.equal(await ferry.stop(), 0);
    // Every read of the verifier's record waits 1.5 s on the destination: the restarted verifier's
    // first read is in flight when the stop lands, and it must start nothing once it returns.
    const failPoint = (mode: unknown) =>
      pair.destinationClient.db('admin').command({
        configureFailPoint: 'failCommand',
        mode,
        data: { failCommands: ['find'], namespace: `${METADATA_DATABASE}.verification`, blockConnection: true, blockTimeMS: 1500 },
      });
    await failPoint('alwaysOn');
    try {
      const restarted = await startFerry(flags(id), QUICK);
      await new Promise((resolve) => setTimeout(resolve, 300));
      assert.equal(await restarted.stop(), 0, 'stopped cleanly, not at the stop deadline');
    } finally {
      await failPoint('off');
    }
  });

  it('a holder elsewhere that stopped renewing is taken over once its lease expires, not before', async () => {
    const db = dbName('lease_elsewhere');
    await seed(pair.sourceClient, db, 'items', 100);
    const id = `lease-elsewhere-${RUN}`;
    // A restarted Ferry watches a live-looking holder for up to one lease duration (and a renewal interval).
    const long = { FERRY_LEASE_DURATION_MS: '15000' };
    const { ferry } = await runningSync(pair, id, db, long);
    await ferry.stop('SIGKILL');
    // As if the dead holder had run on another machine (its pid says nothing here), its lease live for 5 s more.
    const expiresAt = new Date(Date.now() + 5000);
    await leases(pair.destinationClient).updateOne({ _id: id }, { $set: { 'holder.host': 'elsewhere.example', expiresAt } });
    const restarted = await startFerry(flags(id), { ...QUICK, ...long });
    try {
      assert.equal((await restarted.progress()).state, 'RUNNING');
      const taken = (await leases(pair.destinationClient).findOne({ _id: id }))! as unknown as {
        holder: { pid: number };
        acquiredAt: Date;
      };
      assert.equal(taken.holder.pid, restarted.child.pid);
      // Same machine, same clock: taken at its expiry or after, never while the holder could still be alive.
      assert.ok(
        taken.acquiredAt.getTime() >= expiresAt.getTime(),
        `taken at ${taken.acquiredAt.toISOString()}, expiring ${expiresAt.toISOString()}`,
      );
    } finally {
      assert.equal(await restarted.stop(), 0);
    }
  });

  it('a Ferry whose lease another took over stops acting on the sync and writes nothing more', async () => {
    const db = dbName('lease_stale');
    await seed(pair.sourceClient, db, 'items', 100);
    const id = `lease-stale-${RUN}`;
    const { ferry } = await runningSync(pair, id, db);
    const meta = pair.destinationClient.db(METADATA_DATABASE);
    try {
      // Another instance takes the lease over and writes the sync's record under its epoch.
      const current = (await leases(pair.destinationClient).findOne({ _id: id }))!;
      const epoch = current.epoch + 1;
      await leases(pair.destinationClient).updateOne(
        { _id: id },
        { $set: { epoch, holder: { host: 'other.example', pid: 4242, token: 'other' }, expiresAt: new Date(Date.now() + 600_000) } },
      );
      await meta.collection<{ _id: string }>('resume').updateOne({ _id: id }, { $set: { [EPOCH_FIELD]: epoch, note: 'new holder' } });
      const stopped = await ferry.waitForProgress((p) => p.state === 'PAUSED', 30_000);
      const warning = warningMatching(stopped, /LeaseLost/);
      assert.match(warning, /other\.example, pid 4242/);
      assert.equal((await ferry.post('resume', {})).body.error, 'SyncCannotContinue');
      const resume = await meta.collection<{ _id: string; state?: string; [EPOCH_FIELD]?: number }>('resume').findOne({ _id: id });
      assert.equal(resume!.state, 'RUNNING', 'the stale Ferry did not record its stop over the new holder');
      assert.equal(resume![EPOCH_FIELD], epoch);
    } finally {
      assert.equal(await ferry.stop(), 0);
    }
  });

  it('a metadata write under an older epoch than the document has is refused (LeaseLost)', async () => {
    const collection = pair.destinationClient.db(METADATA_DATABASE).collection<{ _id: string; n?: number }>(`fence_${RUN}`);
    await collection.insertOne({ _id: 'doc', [EPOCH_FIELD]: 5 } as never);
    const stale = new FencedCollection(collection, fixedFence(4));
    await assert.rejects(stale.updateOne({ _id: 'doc' }, { $set: { n: 1 } }), { code: 'LeaseLost' });
    await assert.rejects(stale.replaceOne({ _id: 'doc' }, { n: 1 }, { upsert: true }), { code: 'LeaseLost' });
    await stale.deleteMany({ _id: 'doc' });
    const current = new FencedCollection(collection, fixedFence(5));
    const updated = await current.updateOne({ _id: 'doc' }, { $set: { n: 2 } });
    assert.equal(updated.modifiedCount, 1, 'the stale delete left it; the holder of its epoch writes it');
    await new FencedCollection(collection, fixedFence(6)).updateOne({ _id: 'doc' }, { $set: { n: 3 } });
    assert.deepEqual(await collection.findOne({ _id: 'doc' }), { _id: 'doc', [EPOCH_FIELD]: 6, n: 3 });
  });

  it("a copy kept on the sync's other cluster (crossClusterFence) is neither stamped nor refused by epoch", async () => {
    const collection = pair.destinationClient.db(METADATA_DATABASE).collection<{ _id: string; n?: number }>(`fence_cross_${RUN}`);
    // As the way back on the source: written by another direction's lease, whose epochs count apart.
    await collection.insertOne({ _id: 'doc', [EPOCH_FIELD]: 9 } as never);
    await new FencedCollection(collection, crossClusterFence(fixedFence(2))).replaceOne({ _id: 'doc' }, { n: 1 }, { upsert: true });
    assert.deepEqual(await collection.findOne({ _id: 'doc' }), { _id: 'doc', n: 1 });
    await new FencedCollection(collection, fixedFence(1)).deleteMany({ _id: 'doc' });
    assert.equal(await collection.countDocuments(), 0, 'the lease that cluster gets later, whatever its epoch, clears it');
  });

  it('another --id whose namespaces overlap on the same destination is refused; a disjoint one runs on the non-empty destination, unblocked', async () => {
    const shared = dbName('lease_overlap');
    const apart = dbName('lease_apart');
    // The syncs the tests above left unfinished would keep the destination blocked too (rightly): forget them.
    await pair.destinationClient
      .db(METADATA_DATABASE)
      .collection<{ _id: string }>('resume')
      .deleteMany({ state: { $ne: 'COMMITTED' } });
    await seed(pair.sourceClient, shared, 'items', 100);
    await seed(pair.sourceClient, apart, 'items', 100);
    const { ferry: first } = await runningSync(pair, `overlap-a-${RUN}`, shared);
    const second = await startFerry(flags(`overlap-b-${RUN}`), QUICK);
    try {
      for (const includeNamespaces of [
        [{ database: shared }],
        [{ database: shared, collections: ['items'] }],
        [{ databaseRegex: { pattern: '^lease_overlap_' } }],
      ]) {
        const refused = await second.post('start', { source: 'cluster0', destination: 'cluster1', includeNamespaces });
        assert.equal(refused.status, 409, JSON.stringify(includeNamespaces));
        assert.equal(refused.body.error, 'OverlappingSync');
        assert.match(refused.body.errorDescription, new RegExp(`overlap-a-${RUN}.*${shared}\\.`));
      }
      const accepted = await second.post('start', {
        source: 'cluster0',
        destination: 'cluster1',
        includeNamespaces: [{ database: apart }],
        // The first sync's database is already there: mongosync's rule asks the operator to say so.
        preExistingDestinationData: true,
      });
      assert.equal(accepted.status, 200, JSON.stringify(accepted.body));
      await second.waitForProgress((p) => p.canCommit === true, 60_000);
      assert.equal((await first.post('commit', {})).status, 200);
      await first.waitForProgress((p) => p.state === 'COMMITTED', 30_000);
      // A sync onto pre-existing data does not block the destination (mongosync's rule), so the
      // first commit lifts the blocking, and the second sync still commits (it bypasses blocking anyway).
      const status = await pair.destinationClient.db('admin').command({ serverStatus: 1 });
      assert.equal(status.repl.userWriteBlockMode, 1, 'the first commit lifts the blocking: the other sync holds none');
      assert.equal((await second.post('commit', {})).status, 200);
      await second.waitForProgress((p) => p.state === 'COMMITTED', 30_000);
      const items = await pair.destinationClient.db(apart).collection('items').countDocuments();
      assert.equal(items, 100, 'the disjoint sync copied its database');
    } finally {
      assert.equal(await first.stop(), 0);
      assert.equal(await second.stop(), 0);
    }
  });
});
