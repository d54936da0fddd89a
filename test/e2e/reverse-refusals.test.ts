/**
 * Every wrong reversible start and every reverse-related call in the wrong state is refused by
 * name, and changes nothing: the state stays, and both clusters hold exactly what they held
 * (every collection's documents, options and indexes, Ferry's metadata included, and write
 * blocking). Checked through the real `ferry` process:
 *
 * - `start` with `reversible: true` and namespace filters, `buildIndexes: "never"`, or write
 *   blocking on fewer than both clusters: InvalidRequest; between sharded clusters whose shard
 *   counts differ, or from a replica set to a sharded cluster: ReversibleNotSupported (versions
 *   the test cluster cannot have: test/unit/reverse-rules.test.ts);
 * - `reverse` in IDLE, RUNNING, PAUSED and COMMITTING, and twice (in REVERSING, then in the
 *   reversed sync's RUNNING): InvalidStateTransition;
 * - in REVERSING, `start`, `pause`, `resume`, `commit` and `reverse`: InvalidStateTransition;
 * - `reverse` after a sync not started reversible, or whose way back is gone from both clusters:
 *   NotReversible;
 * - `reverse` once the new source's oplog no longer holds the time it became writable:
 *   ReverseHistoryLost.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { Document } from 'bson';
import { MongoClient } from 'mongodb';
import { spawnCluster, type ClusterProcess, type ShardedClusterHandle } from '../cluster/index.js';
import { isReservedDatabase, METADATA_DATABASE } from '../../src/domain/namespaces.js';
import { RUN } from './copy-fixtures.js';
import { startFerry, type FerryProcess } from './ferry-process.js';
import {
  local,
  metadata,
  REVERSIBLE,
  seedReversible,
  snapshot,
  snapshots,
  startReversePair,
  type ReversePair,
} from './reverse-fixtures.js';

const DB = `reverse_refused_${RUN}`;
const RETRY = { FERRY_COMMIT_RETRY_INTERVAL_MS: '200' };
/**
 * A running sync moves its change-stream checkpoints (application's, the verifier's) by itself:
 * left out of snapshots taken while it runs.
 */
const CHECKPOINTS = [`${METADATA_DATABASE}.changeStream`, `${METADATA_DATABASE}.verification`];

/**
 * Waits for COMMITTED and the embedded verifier's final pass after it: until then the verifier
 * writes its own metadata on the destination (its outcome, changes it cannot verify), which a
 * snapshot would take for the refused call's doing.
 */
async function committedAndVerified(ferry: FerryProcess): Promise<void> {
  await ferry.waitForProgress((p) => p.state === 'COMMITTED', 60_000);
  await ferry.waitForVerification((r) => r.outcome !== 'pending', 60_000);
}

/** Makes `client`'s cluster refuse every `collMod` (on), or stop refusing (off). */
async function refuseCollMod(client: MongoClient, on: boolean): Promise<void> {
  await client.db('admin').command({
    configureFailPoint: 'failCommand',
    mode: on ? 'alwaysOn' : 'off',
    data: { failCommands: ['collMod'], errorCode: 96 },
  });
}

/**
 * Sends `command` and asserts it is refused with `status` and `error`, that the state is still
 * `state`, and that neither cluster changed (snapshots before and after, less `skip`).
 */
async function assertRefused(
  pair: ReversePair,
  ferry: FerryProcess,
  request: { command: string; body?: unknown },
  expected: { status: number; error: string; state: string; skip?: string[] },
): Promise<Record<string, any>> {
  const before = await snapshots(pair, expected.skip);
  const response = await ferry.post(request.command, request.body ?? {});
  const what = `${request.command} ${JSON.stringify(request.body ?? {})} in ${expected.state}`;
  assert.equal(response.status, expected.status, `${what}: ${JSON.stringify(response.body)}`);
  assert.equal(response.body.success, false);
  assert.equal(response.body.error, expected.error, `${what}: ${response.body.errorDescription}`);
  assert.equal((await ferry.progress()).state, expected.state, `${what}: the state is unchanged`);
  assert.deepEqual(await snapshots(pair, expected.skip), before, `${what}: neither cluster changed`);
  return response.body;
}

describe('reverse refusals', { skip: local ? false : 'needs test clusters of its own, with users and fail points' }, () => {
  let pair: ReversePair;

  before(async () => {
    pair = await startReversePair({ enableTestCommands: true });
    await seedReversible(pair.app[0], DB);
  });

  after(async () => {
    await pair?.close();
  });

  it('start: reversible with filters, buildIndexes "never" or without write blocking on both clusters; reverse in IDLE', async () => {
    const ferry = await pair.ferry('refused-start');
    try {
      const wrong: [string, object][] = [
        ['includeNamespaces', { ...REVERSIBLE, includeNamespaces: [{ database: DB }] }],
        ['excludeNamespaces', { ...REVERSIBLE, excludeNamespaces: [{ database: DB, collections: ['log'] }] }],
        ['buildIndexes never', { ...REVERSIBLE, buildIndexes: 'never' }],
        ['write blocking off', { ...REVERSIBLE, enableUserWriteBlocking: false }],
        ['write blocking on the destination only', { ...REVERSIBLE, enableUserWriteBlocking: 'destinationOnly' }],
        ['write blocking by default (destination only)', { source: 'cluster0', destination: 'cluster1', reversible: true }],
      ];
      for (const [why, body] of wrong) {
        const refused = await assertRefused(
          pair,
          ferry,
          { command: 'start', body },
          { status: 400, error: 'InvalidRequest', state: 'IDLE' },
        );
        assert.match(refused.errorDescription, /reversible/, why);
      }
      await assertRefused(pair, ferry, { command: 'reverse' }, { status: 409, error: 'InvalidStateTransition', state: 'IDLE' });
    } finally {
      assert.equal(await ferry.stop(), 0);
    }
  });

  it('reverse in RUNNING, PAUSED and COMMITTING, twice, without its way back, and every call in REVERSING', async () => {
    const ferry = await pair.ferry('refused-calls', RETRY);
    const refusedState = (state: string, skip?: string[]) => ({
      status: 409,
      error: 'InvalidStateTransition',
      state,
      ...(skip ? { skip } : {}),
    });
    try {
      assert.equal((await ferry.post('start', REVERSIBLE)).status, 200);
      await ferry.waitForProgress((p) => p.canCommit === true, 120_000);
      await assertRefused(pair, ferry, { command: 'reverse' }, refusedState('RUNNING', CHECKPOINTS));

      assert.equal((await ferry.post('pause', {})).status, 200);
      await assertRefused(pair, ferry, { command: 'reverse' }, refusedState('PAUSED'));
      assert.equal((await ferry.post('resume', {})).status, 200);
      await ferry.waitForProgress((p) => p.canCommit === true, 120_000);

      // COMMITTING, held there: the destination refuses the restores.
      await refuseCollMod(pair.root[1], true);
      try {
        assert.equal((await ferry.post('commit', {})).status, 200);
        await ferry.waitForProgress((p) => p.warnings?.some((w: string) => w.includes('OperationFailed')), 60_000);
        // The verifier follows the destination through COMMITTING (its stream positions move).
        await assertRefused(pair, ferry, { command: 'reverse' }, refusedState('COMMITTING', CHECKPOINTS));
      } finally {
        await refuseCollMod(pair.root[1], false);
      }
      await committedAndVerified(ferry);

      // The way back gone from both clusters: nothing to reverse from.
      const wayBack = await Promise.all(pair.root.map((client) => metadata(client, 'wayBack')));
      const records = (client: MongoClient) => client.db(METADATA_DATABASE).collection('wayBack');
      await Promise.all(pair.root.map((client) => records(client).deleteMany({})));
      const gone = await assertRefused(pair, ferry, { command: 'reverse' }, { status: 409, error: 'NotReversible', state: 'COMMITTED' });
      assert.match(gone.errorDescription, /became writable/);
      await Promise.all(pair.root.map((client, i) => records(client).insertMany(wayBack[i]!)));

      // REVERSING, held there: the new destination refuses the temporary forms.
      await refuseCollMod(pair.root[0], true);
      try {
        assert.equal((await ferry.post('reverse', {})).status, 200);
        await ferry.waitForProgress((p) => p.warnings?.some((w: string) => w.includes('OperationFailed')), 60_000);
        const calls: [string, unknown][] = [
          ['start', REVERSIBLE],
          ['pause', {}],
          ['resume', {}],
          ['commit', {}],
          ['reverse', {}],
        ];
        for (const [command, body] of calls) await assertRefused(pair, ferry, { command, body }, refusedState('REVERSING'));
      } finally {
        await refuseCollMod(pair.root[0], false);
      }
      // Settled, as the first RUNNING above: the reversed sync's copy check and verifier planning done.
      await ferry.waitForProgress((p) => p.state === 'RUNNING' && p.canCommit === true, 60_000);
      await assertRefused(pair, ferry, { command: 'reverse' }, refusedState('RUNNING', CHECKPOINTS));
    } finally {
      assert.equal(await ferry.stop(), 0);
    }
  });

  it('reverse after a sync that was not reversible → NotReversible', async () => {
    const db = `plain_${RUN}`;
    // Whatever the tests before left blocked.
    for (const client of pair.root) await client.db('admin').command({ setUserWriteBlockMode: 1, global: false });
    // Like mongosync, a start needs an empty destination: what the tests before synced there goes.
    const { databases } = await pair.root[1].db('admin').admin().listDatabases({ nameOnly: true });
    for (const { name } of databases) if (!isReservedDatabase(name)) await pair.root[1].db(name).dropDatabase();
    await pair.app[0]
      .db(db)
      .collection('items')
      .insertMany([{ _id: 1 }, { _id: 2 }] as Document[]);
    const ferry = await pair.ferry('refused-plain');
    try {
      const started = await ferry.post('start', {
        source: 'cluster0',
        destination: 'cluster1',
        enableUserWriteBlocking: true,
        includeNamespaces: [{ database: db }],
      });
      assert.equal(started.status, 200, JSON.stringify(started.body));
      await ferry.waitForProgress((p) => p.canCommit === true, 60_000);
      assert.equal((await ferry.post('commit', {})).status, 200);
      await committedAndVerified(ferry);
      const refused = await assertRefused(pair, ferry, { command: 'reverse' }, { status: 409, error: 'NotReversible', state: 'COMMITTED' });
      assert.match(refused.errorDescription, /reversible: true/);
    } finally {
      assert.equal(await ferry.stop(), 0);
    }
  });
});

describe('reverse once the way back is out of the oplog', { skip: local ? false : 'needs a cluster with a tiny oplog' }, () => {
  let pair: ReversePair;

  before(async () => {
    pair = await startReversePair({ oplogSizeMB: 1 });
    await seedReversible(pair.app[0], DB);
  });

  after(async () => {
    await pair?.close();
  });

  it('→ ReverseHistoryLost, the sync stays COMMITTED and nothing changes', async () => {
    const ferry = await pair.ferry('refused-lost');
    try {
      assert.equal((await ferry.post('start', REVERSIBLE)).status, 200);
      await ferry.waitForProgress((p) => p.canCommit === true, 60_000);
      assert.equal((await ferry.post('commit', {})).status, 200);
      await committedAndVerified(ferry);
      // About 3 MiB of writes on the new cluster roll its 1 MiB oplog past where it became writable.
      for (let i = 0; i < 30; i++) {
        await pair.app[1]
          .db(DB)
          .collection('bulk')
          .insertMany(Array.from({ length: 10 }, (_, k) => ({ _id: i * 10 + k, pad: 'x'.repeat(10_000) })) as Document[]);
      }
      const refused = await assertRefused(
        pair,
        ferry,
        { command: 'reverse' },
        { status: 422, error: 'ReverseHistoryLost', state: 'COMMITTED' },
      );
      assert.match(refused.errorDescription, /cluster1 .*oplog no longer reaches back/);
    } finally {
      assert.equal(await ferry.stop(), 0);
    }
  });
});

describe('reversible with sharded clusters', { skip: local ? false : 'needs sharded test clusters of its own' }, () => {
  let replicaSet: ClusterProcess;
  let oneShard: ShardedClusterHandle;
  let twoShards: ShardedClusterHandle;
  let clients: MongoClient[] = [];

  before(async () => {
    [replicaSet, oneShard, twoShards] = await Promise.all([spawnCluster(), spawnCluster({ shards: 1 }), spawnCluster({ shards: 2 })]);
    clients = await Promise.all([replicaSet, oneShard, twoShards].map((cluster) => MongoClient.connect(cluster.uri)));
    await clients[0]!
      .db(DB)
      .collection('items')
      .insertOne({ _id: 1 } as Document);
    await clients[1]!
      .db(DB)
      .collection('items')
      .insertOne({ _id: 1 } as Document);
  });

  after(async () => {
    await Promise.allSettled(clients.map((client) => client.close()));
    await Promise.allSettled([replicaSet, oneShard, twoShards].map((cluster) => cluster?.stop()));
  });

  /** Starts Ferry between `from` and `to`; asserts `body` is refused with ReversibleNotSupported for `reason`, changing nothing. */
  async function refusedBetween(from: number, to: number, body: object, reason: RegExp): Promise<void> {
    const uris = [replicaSet.uri, oneShard.uri, twoShards.uri];
    // The default id: one instance on a sharded cluster may run with no other (InstanceIdNotAllowed).
    const ferry = await startFerry(['--cluster0', uris[from]!, '--cluster1', uris[to]!]);
    try {
      const before = await Promise.all([snapshot(clients[from]!), snapshot(clients[to]!)]);
      const response = await ferry.post('start', body);
      assert.equal(response.status, 422, JSON.stringify(response.body));
      assert.equal(response.body.error, 'ReversibleNotSupported');
      assert.match(response.body.errorDescription, reason);
      assert.equal((await ferry.progress()).state, 'IDLE');
      assert.deepEqual(await Promise.all([snapshot(clients[from]!), snapshot(clients[to]!)]), before, 'neither cluster changed');
    } finally {
      assert.equal(await ferry.stop(), 0);
    }
  }

  it('between sharded clusters whose shard counts differ → ReversibleNotSupported', async () => {
    await refusedBetween(1, 2, REVERSIBLE, /as many shards on each: cluster0 \(.*\) has 1, cluster1 \(.*\) 2/);
  });

  it('from a replica set to a sharded cluster → ReversibleNotSupported', async () => {
    const sharding = { createSupportingIndexes: false, shardingEntries: [] };
    await refusedBetween(0, 2, { ...REVERSIBLE, sharding }, /replica set → sharded cluster sync cannot be reversible/);
  });
});
