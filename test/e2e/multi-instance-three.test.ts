/**
 * Several Ferry instances at scale (issue 13, "How it is checked"): a 3-shard source, a 2-shard
 * destination and three `ferry` processes, one per source shard, each bound to its own loopback
 * address (127.0.0.2, .3, .4), with its own working directory, log directory and environment
 * (nothing inherited from the test but PATH): they share nothing but the clusters. Every command
 * goes to each instance over its own address, as an operator sends it.
 *
 * - identical commands, a workload during the copy and during change-event application, commit:
 *   the destination equals the source (documents, indexes, sharding);
 * - `pause`, `resume` and `commit` sent to two instances only: the migration waits safely (the
 *   source accepts writes, the destination stays write-blocked, nothing commits) and the two name
 *   the third; once it gets the command the migration completes;
 * - SIGKILL of the coordinator during its copy, and of another instance while COMMITTING: each is
 *   restarted with the same id and the migration commits, the destination equal to the source;
 * - a start body that differs is refused by name with nothing changed, and two different bodies
 *   sent at the same instant: exactly one wins, the other is refused (MismatchedCommand).
 *
 * `FERRY_TEST_SHARDED3_URI` (a 3-shard source) and `FERRY_TEST_SHARDED1_URI` (a sharded
 * destination) point the clusters at real deployments.
 */
import { after, afterEach, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MongoClient, type Document } from 'mongodb';
import { spawnCluster } from '../cluster/index.js';
import { emptyDestination, startFerry, type FerryProcess, type Progress } from './ferry-process.js';
import { METADATA_DATABASE } from '../../src/domain/namespaces.js';
import { compareClusters } from '../../scripts/lib/compare-clusters.js';
import { createNamespaceSelector } from '../../src/plan/namespaces.js';

let sourceUri: string;
let destinationUri: string;
let source: MongoClient;
let destination: MongoClient;
/** The source's shard IDs, sorted: the first is the coordinator's. */
let shards: string[];
const stops: (() => Promise<void>)[] = [];
const RUN = String(process.pid);
const pad = 'p'.repeat(200);

before(async () => {
  const real = [process.env.FERRY_TEST_SHARDED3_URI, process.env.FERRY_TEST_SHARDED1_URI];
  if (real.every((uri) => uri !== undefined && uri !== '')) {
    [sourceUri, destinationUri] = real as string[];
  } else {
    const [a, b] = await Promise.all([spawnCluster({ shards: 3 }), spawnCluster({ shards: 2 })]);
    stops.push(
      () => a.stop(),
      () => b.stop(),
    );
    [sourceUri, destinationUri] = [a.uri, b.uri];
  }
  source = new MongoClient(sourceUri);
  destination = new MongoClient(destinationUri);
  const { shards: listed } = await source.db('admin').command({ listShards: 1 });
  shards = (listed as { _id: string }[]).map((shard) => shard._id).sort();
  assert.equal(shards.length, 3, 'a 3-shard source');
});

after(async () => {
  await Promise.all([source?.close(), destination?.close()]);
  await Promise.all(stops.map((stop) => stop()));
});

/**
 * A database spread over the three shards: `orders` ranged on `customer` (one chunk per shard),
 * `users` hashed, `logs` on the coordinator's shard only (enough documents that its copy takes a
 * moment), `plain` unsharded on the second shard (its database's primary).
 */
async function seed(db: string): Promise<void> {
  const admin = source.db('admin');
  await admin.command({ enableSharding: db, primaryShard: shards[1] });
  await admin.command({ shardCollection: `${db}.orders`, key: { customer: 1 } });
  // Its chunks start on the primary (the second shard): the first goes to the first shard, the last to the third.
  await admin.command({ split: `${db}.orders`, middle: { customer: 100 } });
  await admin.command({ split: `${db}.orders`, middle: { customer: 200 } });
  await admin.command({ moveChunk: `${db}.orders`, find: { customer: 0 }, to: shards[0], _waitForDelete: true });
  await admin.command({ moveChunk: `${db}.orders`, find: { customer: 200 }, to: shards[2], _waitForDelete: true });
  await admin.command({ shardCollection: `${db}.users`, key: { _id: 'hashed' } });
  await admin.command({ shardCollection: `${db}.logs`, key: { k: 1 } });
  await admin.command({ moveChunk: `${db}.logs`, find: { k: 0 }, to: shards[0], _waitForDelete: true });
  const data = source.db(db);
  await data.collection('orders').createIndex({ total: 1 }, { name: 'total_1' });
  await data
    .collection('orders')
    .insertMany(Array.from({ length: 900 }, (_, i) => ({ _id: i, customer: i % 300, total: i, pad })) as never[]);
  await data.collection('users').insertMany(Array.from({ length: 300 }, (_, i) => ({ _id: i, name: `user ${i}` })) as never[]);
  await data.collection('logs').insertMany(Array.from({ length: 3000 }, (_, i) => ({ _id: i, k: i, pad })) as never[]);
  await data.collection('plain').insertMany(Array.from({ length: 100 }, (_, i) => ({ _id: i, v: i })) as never[]);
}

/** Writes on every shard that keep shard keys where they are (moves between shards are another matter). */
async function workload(db: string, round: number): Promise<void> {
  const data = source.db(db);
  const base = 10_000 * round;
  for (let i = 0; i < 30; i++) {
    const customer = (i * 37) % 300; // every shard's range
    await data.collection('orders').insertOne({ _id: base + i, customer, total: -i } as Document);
    await data.collection('orders').updateOne({ _id: (i * 31 + round) % 900 } as Document, { $inc: { total: 1000 } });
    await data.collection('users').updateOne({ _id: (i * 7 + round) % 300 } as Document, { $set: { seen: round } });
    await data.collection('users').insertOne({ _id: base + i, name: `new ${round}.${i}` } as Document);
    await data.collection('plain').updateOne({ _id: i } as Document, { $inc: { v: round } });
  }
  await data.collection('orders').deleteMany({ _id: { $gte: 300 + round * 10, $lt: 305 + round * 10 } } as Document);
  await data.collection('users').deleteMany({ _id: { $gte: 100 + round * 10, $lt: 104 + round * 10 } } as Document);
  await data.collection('logs').updateMany({ k: { $lt: 50 } } as Document, { $set: { round } });
}

/** A new migration: its destination namespaces and its metadata (every instance's) start empty. */
async function fresh(db: string): Promise<void> {
  await emptyDestination(destinationUri);
  await destination.db(METADATA_DATABASE).dropDatabase();
  await seed(db);
}

/** The start request (sharded → sharded: the destination is sharded as the source is, no `sharding` option). */
function startBody(db: string, extra: Document = {}): Document {
  return { source: 'cluster0', destination: 'cluster1', includeNamespaces: [{ database: db }], ...extra };
}

/** Slow enough that a kill can land in the middle of the coordinator's copy. */
const SLOW_COPY = ['--copyWorkers', '1', '--batchesInFlight', '1', '--batchBytes', '16384', '--partitionSizeMB', '1'];

/**
 * Instance `index` (0-2) of the migration, for shard `shards[index]`: its API on 127.0.0.(2 + index),
 * its own directory as working directory, HOME, TMPDIR and log directory, and no environment of the test's.
 */
async function instance(index: number, env: Record<string, string> = {}, flags: string[] = []): Promise<FerryProcess> {
  const home = mkdtempSync(join(tmpdir(), `ferry-m3-${shards[index]}-`));
  const ferry = await startFerry(
    ['--cluster0', sourceUri, '--cluster1', destinationUri, '--id', shards[index]!, '--bindAddress', `127.0.0.${2 + index}`, ...flags],
    { HOME: home, TMPDIR: home, FERRY_COMMIT_RETRY_INTERVAL_MS: '200', ...env },
    home,
    [],
    { cwd: home, inheritEnv: false },
  );
  assert.match(ferry.base, new RegExp(`^http://127\\.0\\.0\\.${2 + index}:\\d+$`), 'the API on its own loopback address');
  return ferry;
}

const all = (ferries: FerryProcess[], done: (p: Progress) => boolean, timeoutMs = 120_000) =>
  Promise.all(ferries.map((ferry) => ferry.waitForProgress(done, timeoutMs)));

async function postAll(ferries: FerryProcess[], path: string, body: Document = {}): Promise<void> {
  const replies = await Promise.all(ferries.map((ferry) => ferry.post(path, body)));
  for (const reply of replies) assert.equal(reply.status, 200, `${path}: ${JSON.stringify(reply.body)}`);
}

const warns = (progress: Progress, ...parts: string[]) =>
  (progress.warnings ?? []).some((warning: string) => parts.every((part) => warning.includes(part)));

/** The destination equals the source in `db`: documents, indexes and options, and the collections sharded on the source's keys. */
async function assertMigrated(db: string): Promise<void> {
  const differences = await compareClusters(sourceUri, destinationUri, { selector: createNamespaceSelector([{ database: db }]) });
  assert.deepEqual(differences, [], 'the destination equals the source');
  const sharded = await destination
    .db('config')
    .collection('collections')
    .find({ _id: { $regex: `^${db}\\.` } } as Document)
    .toArray();
  const keys = Object.fromEntries(sharded.map((entry) => [String(entry._id), entry.key]));
  assert.deepEqual(keys, { [`${db}.logs`]: { k: 1 }, [`${db}.orders`]: { customer: 1 }, [`${db}.users`]: { _id: 'hashed' } });
  // Open for writes once every instance committed.
  await destination
    .db(db)
    .collection('plain')
    .insertOne({ _id: 'after commit' } as Document);
}

/**
 * Whether user writes are blocked on each shard of a sharded cluster (`serverStatus().repl.userWriteBlockMode`:
 * 1 off, 2 on). The test's own client holds every privilege (no access control), so it writes
 * through the blocking: the mode is read instead.
 */
async function writeBlocking(client: MongoClient): Promise<boolean[]> {
  const { shards: listed } = await client.db('admin').command({ listShards: 1 });
  return Promise.all(
    (listed as { host: string }[]).map(async ({ host }) => {
      const [set, hosts] = host.split('/');
      const shard = await MongoClient.connect(`mongodb://${hosts}/?replicaSet=${set}`);
      try {
        const status = await shard.db('admin').command({ serverStatus: 1 });
        return (status.repl as Document).userWriteBlockMode === 2;
      } finally {
        await shard.close();
      }
    }),
  );
}

describe('three instances, one per shard of a 3-shard source, into a 2-shard destination', () => {
  const running: FerryProcess[] = [];
  // A test that failed half-way leaves its instances running: they go before the next migration.
  afterEach(async () => {
    await Promise.all(running.splice(0).map((ferry) => ferry.stop('SIGKILL').catch(() => null)));
  });
  const launch = async (index: number, env?: Record<string, string>, flags?: string[]) => {
    const ferry = await instance(index, env, flags);
    running.push(ferry);
    return ferry;
  };
  const stopAll = async (ferries: FerryProcess[]) => {
    for (const ferry of ferries) assert.equal(await ferry.stop(), 0);
  };

  it('syncs with identical commands on separate loopback addresses, under a workload, and commits an equal destination', async () => {
    const db = `m3_main_${RUN}`;
    await fresh(db);
    const ferries = await Promise.all([0, 1, 2].map((index) => launch(index)));
    await postAll(ferries, 'start', startBody(db));
    const during = workload(db, 1);
    const started = await all(ferries, (p) => p.state === 'RUNNING');
    for (const [index, progress] of started.entries()) {
      assert.equal(progress.mongosyncID, shards[index]);
      assert.equal(progress.coordinatorID, shards[0]);
    }
    await during;
    await all(ferries, (p) => p.canCommit === true);
    await workload(db, 2);
    await all(ferries, (p) => p.canCommit === true);
    await postAll(ferries, 'commit');
    const committed = await all(ferries, (p) => p.state === 'COMMITTED');
    for (const progress of committed) assert.equal(progress.canWrite, true);
    // Each instance applied its own shard's events, and copied its own shard's documents.
    for (const progress of committed) assert.ok(progress.totalEventsApplied > 0, JSON.stringify(progress));
    await stopAll(ferries);
    await assertMigrated(db);
  });

  it('waits safely when pause, resume or commit reach two instances only, naming the third, and completes once it gets them', async () => {
    const db = `m3_two_${RUN}`;
    await fresh(db);
    const ferries = await Promise.all([0, 1, 2].map((index) => launch(index)));
    const [one, two, three] = ferries as [FerryProcess, FerryProcess, FerryProcess];
    await postAll(ferries, 'start', startBody(db, { enableUserWriteBlocking: 'sourceAndDestination' }));
    await all(ferries, (p) => p.canCommit === true);
    // pause to two: every instance names the third, and nobody can commit.
    await postAll([one, two], 'pause');
    const third = `"${shards[2]}"`;
    for (const progress of await all(ferries, (p) => warns(p, 'pause was sent to', `but not to ${third}`))) {
      assert.equal(progress.canCommit, false);
    }
    assert.equal((await one.post('commit', {})).status, 409, 'no commit while an instance is paused');
    await postAll([three], 'pause');
    await postAll([one, two], 'resume');
    await all([one, two, three], (p) => warns(p, 'resume was sent to', `but not to ${third}`) && p.canCommit === false);
    await postAll([three], 'resume');
    await all(ferries, (p) => p.canCommit === true);
    // commit to two: they are COMMITTING and wait for the third, naming it; nothing is half-done.
    await postAll([one, two], 'commit');
    for (const progress of await all([one, two], (p) => p.state === 'COMMITTING' && warns(p, third, 'commit request'))) {
      assert.equal(progress.canWrite, false);
    }
    assert.equal((await three.progress()).state, 'RUNNING');
    await new Promise((resolve) => setTimeout(resolve, 1500)); // time enough for a step taken too early
    // Nothing half-done: the source is not write-blocked, the destination still is, nobody took a commit point.
    assert.deepEqual(await writeBlocking(source), [false, false, false], 'the source is not blocked before every instance got commit');
    assert.deepEqual(await writeBlocking(destination), [true, true], 'the destination stays blocked');
    const steps = await destination.db(METADATA_DATABASE).collection('coordination').find().toArray();
    assert.ok(
      steps.every((doc) => (doc.steps as Document).commitPoint === undefined),
      'no commit point taken',
    );
    for (const ferry of [one, two]) assert.equal((await ferry.progress()).state, 'COMMITTING');
    await postAll([three], 'commit');
    await all(ferries, (p) => p.state === 'COMMITTED');
    await stopAll(ferries);
    // sourceAndDestination: the source is blocked from the commit on (the application has moved), the destination open.
    assert.deepEqual(await writeBlocking(source), [true, true, true]);
    assert.deepEqual(await writeBlocking(destination), [false, false]);
    await source.db('admin').command({ setUserWriteBlockMode: 1, global: false });
    await assertMigrated(db);
  });

  it('commits after SIGKILL of the coordinator during its copy and of another instance while COMMITTING', async () => {
    const db = `m3_kill_${RUN}`;
    await fresh(db);
    const env = { FERRY_LEASE_DURATION_MS: '3000', FERRY_CHECKPOINT_INTERVAL_MS: '20' };
    const ferries = await Promise.all([0, 1, 2].map((index) => launch(index, env, SLOW_COPY)));
    let [one, two] = ferries as [FerryProcess, FerryProcess, FerryProcess];
    const three = ferries[2]!;
    await postAll(ferries, 'start', startBody(db));
    const during = workload(db, 1);
    // The coordinator dies in the middle of its copy.
    const copying = await one.waitForProgress(
      (p) => p.info === 'collection copy' && (p.collectionCopy?.estimatedCopiedBytes ?? 0) > 0,
      120_000,
    );
    assert.equal(await one.stop('SIGKILL'), null);
    assert.ok(copying.collectionCopy.estimatedCopiedBytes < copying.collectionCopy.estimatedTotalBytes, JSON.stringify(copying));
    await all([two, three], (p) => warns(p, `"${shards[0]}"`) && p.canCommit === false);
    one = await launch(0, env, SLOW_COPY);
    await during;
    await all([one, two, three], (p) => p.canCommit === true);
    await workload(db, 2);
    await all([one, two, three], (p) => p.canCommit === true);
    // Another instance dies once it got commit, while COMMITTING.
    await postAll([one, two], 'commit');
    await two.waitForProgress((p) => p.state === 'COMMITTING');
    assert.equal(await two.stop('SIGKILL'), null);
    await postAll([three], 'commit');
    two = await launch(1, env, SLOW_COPY);
    assert.match((await two.progress()).state, /^COMMITT(ING|ED)$/, 'it continues the commit it got');
    await all([one, two, three], (p) => p.state === 'COMMITTED');
    await stopAll([one, two, three]);
    await assertMigrated(db);
  });

  it('refuses a start body that differs, by name and with nothing changed, even when sent at the same instant', async () => {
    const db = `m3_mismatch_${RUN}`;
    await fresh(db);
    const ferries = await Promise.all([0, 1, 2].map((index) => launch(index)));
    const [one, two, three] = ferries as [FerryProcess, FerryProcess, FerryProcess];
    const other = startBody(db, { excludeNamespaces: [{ database: db, collections: ['plain'] }] });
    const metadataOf = async (id: string) =>
      Promise.all(
        ['resume', 'coordination', 'leases'].map((coll) =>
          destination
            .db(METADATA_DATABASE)
            .collection(coll)
            .findOne({ _id: id } as Document),
        ),
      );
    // Two bodies sent at the same instant to two instances: exactly one wins.
    const [first, second] = await Promise.all([one.post('start', startBody(db)), two.post('start', other)]);
    const replies = [first, second];
    assert.deepEqual(replies.map((reply) => reply.status).sort(), [200, 409], JSON.stringify(replies.map((reply) => reply.body)));
    const winner = first.status === 200 ? 0 : 1;
    const loser = 1 - winner;
    const refused = replies[loser]!;
    assert.match(JSON.stringify(refused.body), /MismatchedCommand/);
    assert.match(JSON.stringify(refused.body), new RegExp(shards[winner]!));
    assert.equal((await ferries[loser]!.progress()).state, 'IDLE');
    assert.deepEqual(await metadataOf(shards[loser]!), [null, null, null], 'the refused instance wrote nothing');
    // A third instance sent the losing body later is refused too, by the winner's name, and changes nothing.
    const later = await three.post('start', winner === 0 ? other : startBody(db));
    assert.equal(later.status, 409, JSON.stringify(later.body));
    assert.match(JSON.stringify(later.body), /MismatchedCommand/);
    assert.equal((await three.progress()).state, 'IDLE');
    assert.deepEqual(await metadataOf(shards[2]!), [null, null, null]);
    // The same body as the winner's is accepted by both, and the migration runs.
    const winning = winner === 0 ? startBody(db) : other;
    await postAll([ferries[loser]!, three], 'start', winning);
    const ready = await all(ferries, (p) => p.canCommit === true);
    for (const progress of ready) assert.deepEqual(progress.warnings ?? [], []);
    for (const ferry of ferries) assert.equal(await ferry.stop('SIGKILL'), null);
  });
});
