/**
 * Preflight against real clusters (two test-cluster processes, or the deployments named by
 * FERRY_TEST_CLUSTER0_URI / FERRY_TEST_CLUSTER1_URI): reachability, topology rules, and the
 * destination namespaces the filters select being empty. Plus the topology rules for kinds of
 * cluster the test cluster cannot be (standalone, mongos).
 */
import assert from 'node:assert/strict';
import { createServer } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { MongoClient } from 'mongodb';
import { parseClusterUri } from '../../src/config/clusters.js';
import { startClusterPair, type ClusterPair } from '../helpers/clusters.js';
import { START_REQUEST as REQUEST } from './app.js';
import type { StartRequest } from '../../src/domain/start-request.js';
import type { ClusterEndpoint } from '../../src/domain/clusters.js';
import { METADATA_DATABASE } from '../../src/domain/namespaces.js';
import type { FerryError } from '../../src/errors/errors.js';
import { topologyOf, type Topology } from '../../src/cluster/commands.js';
import { checkTopologies, runPreflight } from '../../src/plan/preflight.js';

async function refusal(run: () => Promise<unknown> | void): Promise<FerryError> {
  try {
    await run();
  } catch (error) {
    return error as FerryError;
  }
  assert.fail('expected a refusal');
}

/** A port nothing listens on. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

describe('preflight against real clusters', () => {
  let pair: ClusterPair;
  let clusters: { cluster0: ClusterEndpoint; cluster1: ClusterEndpoint };
  let destination: MongoClient;
  // Database names unique to this run, so a real deployment's data is never touched.
  const db = `ferry_preflight_${process.pid}`;

  before(async () => {
    pair = await startClusterPair({ enableTestCommands: true });
    clusters = { cluster0: parseClusterUri('cluster0', pair.cluster0), cluster1: parseClusterUri('cluster1', pair.cluster1) };
    destination = await MongoClient.connect(pair.cluster1);
  });
  after(async () => {
    const source = await MongoClient.connect(pair.cluster0);
    await source.db(db).dropDatabase();
    await source.close();
    await destination.db(db).dropDatabase();
    await destination.db(METADATA_DATABASE).dropDatabase();
    await destination.close();
    await pair.stop();
  });

  it('passes for two replica sets with nothing selected on the destination', async () => {
    await runPreflight(REQUEST, { clusters, id: 'preflight' });
  });

  it("mongosync's rule: any namespace on the destination (empty collection, view, outside the filters) → DestinationNotEmpty", async () => {
    await destination.db(db).createCollection('empty');
    const error = await refusal(() => runPreflight(REQUEST, { clusters }));
    assert.equal(error.code, 'DestinationNotEmpty');
    assert.equal(error.status, 422);
    assert.match(error.message, new RegExp(`is not empty: it has 1 namespace\\(s\\): ${db}\\.empty; .*preExistingDestinationData`));
    const filtered = await refusal(() => runPreflight({ ...REQUEST, includeNamespaces: [{ database: 'elsewhere' }] }, { clusters }));
    assert.equal(filtered.code, 'DestinationNotEmpty', 'a filter alone does not make a non-empty destination acceptable');
    await destination.db(db).createCollection('aView', { viewOn: 'empty', pipeline: [] });
    const view = await refusal(() => runPreflight(REQUEST, { clusters }));
    assert.match(view.message, /has 2 namespace\(s\)/);
    await destination.db(db).dropDatabase();
  });

  it('preExistingDestinationData: other namespaces may stay; a selected one (even empty) → DestinationNotEmpty naming it', async () => {
    await destination.db(db).collection<{ _id: number }>('orders').insertOne({ _id: 1 });
    await destination.db(db).createCollection('empty');
    const withData = { ...REQUEST, preExistingDestinationData: true };
    const error = await refusal(() => runPreflight({ ...withData, includeNamespaces: [{ database: db }] }, { clusters }));
    assert.equal(error.code, 'DestinationNotEmpty');
    assert.match(error.message, new RegExp(`already has 2 of the namespace\\(s\\) this sync selects: ${db}\\.empty, ${db}\\.orders`));

    await runPreflight({ ...withData, excludeNamespaces: [{ database: db, collections: ['orders', 'empty'] }] }, { clusters });
    await runPreflight({ ...withData, includeNamespaces: [{ database: db, collectionsRegex: { pattern: '^inv' } }] }, { clusters });
    await destination.db(db).dropDatabase();
  });

  it("mongosync's disk space check reads the destination's free space (dbStats) unless skipDiskSpaceCheck", async (t) => {
    if (!pair.local) return t.skip('needs a fail point on the destination');
    const admin = destination.db('admin');
    await admin.command({ configureFailPoint: 'failCommand', mode: 'alwaysOn', data: { failCommands: ['dbStats'], errorCode: 2 } });
    try {
      const error = await refusal(() => runPreflight(REQUEST, { clusters }));
      assert.equal(error.code, 'ClusterCommandFailed');
      assert.match(error.message, /dbStats \(free disk space\)/);
      await runPreflight({ ...REQUEST, skipDiskSpaceCheck: true }, { clusters });
    } finally {
      await admin.command({ configureFailPoint: 'failCommand', mode: 'off' });
    }
    // Answered: this machine's disk holds the few bytes of the source.
    await runPreflight(REQUEST, { clusters });
  });

  it("documents in Ferry's metadata database and in Atlas's __mdb_internal ones never count", async () => {
    await destination.db(METADATA_DATABASE).collection<{ _id: string }>('resume').insertOne({ _id: 'state' });
    await destination.db('__mdb_internal_search').collection<{ _id: number }>('state').insertOne({ _id: 1 });
    await runPreflight(REQUEST, { clusters });
    await destination.db('__mdb_internal_search').dropDatabase();
  });

  it('the check runs on the destination, whichever cluster that is', async () => {
    await destination.db(db).collection<{ _id: number }>('orders').insertOne({ _id: 2 });
    // cluster1 is now the source: its documents are what will be copied, not an obstacle.
    await runPreflight({ ...REQUEST, source: 'cluster1', destination: 'cluster0' }, { clusters, id: 'preflight' });
    await destination.db(db).collection('orders').drop();
  });

  it('the disk space needed is the selected collections with their indexes, against the free space', async () => {
    const { collectionFootprint, freeDiskBytes } = await import('../../src/cluster/monitoring.js');
    await destination
      .db(db)
      .collection<{ _id: number; pad: string }>('sized')
      .insertMany(Array.from({ length: 50 }, (_, i) => ({ _id: i, pad: 'x'.repeat(1000) })));
    const footprint = await collectionFootprint(destination, db, 'sized');
    assert.ok(footprint >= 50_000, `collStats size + totalIndexSize: ${footprint}`);
    const free = await freeDiskBytes(destination);
    assert.ok(free === undefined || free > 0);
    await destination.db(db).collection('sized').drop();
  });

  it('sharding between two replica sets → ShardingNotAllowed', async () => {
    const error = await refusal(() =>
      runPreflight({ ...REQUEST, sharding: { createSupportingIndexes: false, shardingEntries: [] } }, { clusters, id: 'preflight' }),
    );
    assert.equal(error.code, 'ShardingNotAllowed');
    assert.match(error.message, /replicaSet → replicaSet/);
  });

  it('includeNamespaces that select nothing on the source start with a warning saying so, not a silent sync of nothing', async () => {
    const source = await MongoClient.connect(pair.cluster0);
    await source
      .db(db)
      .createCollection('orders')
      .catch(() => undefined);
    await source.close();
    for (const includeNamespaces of [
      [{ database: `${db}_absent` }],
      [{ database: db.toUpperCase() }],
      [{ database: db, collections: ['no_such_collection'] }],
    ]) {
      const { warnings } = await runPreflight({ ...REQUEST, includeNamespaces }, { clusters, id: 'preflight' });
      assert.equal(warnings.length, 1, JSON.stringify(includeNamespaces));
      assert.match(warnings[0]!, /^includeNamespaces selected no collection or view on the source cluster0 .* nothing was there to copy/);
      assert.match(warnings[0]!, /created later that match are synced/);
    }
    const excluded = await runPreflight(
      { ...REQUEST, includeNamespaces: [{ database: db, collections: ['orders'] }], excludeNamespaces: [{ database: db }] },
      { clusters, id: 'preflight' },
    );
    assert.match(excluded.warnings[0]!, /after excludeNamespaces/);
    // What exists is selected, and a whole-cluster sync of anything: nothing to say.
    const selected = await runPreflight(
      { ...REQUEST, includeNamespaces: [{ database: db, collections: ['orders'] }] },
      { clusters, id: 'preflight' },
    );
    assert.deepEqual(selected.warnings, []);
    assert.deepEqual((await runPreflight(REQUEST, { clusters, id: 'preflight' })).warnings, []);
  });

  it('an unreachable cluster → ClusterUnreachable (after the cluster timeout, 10 s) naming it without its password', async () => {
    const dead = parseClusterUri('cluster1', `mongodb://ferry:s3cret@127.0.0.1:${await closedPort()}/?replicaSet=rs0`);
    const error = await refusal(() => runPreflight(REQUEST, { clusters: { ...clusters, cluster1: dead }, id: 'preflight' }));
    assert.equal(error.code, 'ClusterUnreachable');
    assert.equal(error.status, 502);
    assert.match(error.message, new RegExp(`^cluster1 \\(${dead.address}\\) could not be reached for hello`));
    assert.doesNotMatch(error.message, /s3cret/);
  });
});

describe('topology rules', () => {
  const clusters = {
    cluster0: parseClusterUri('cluster0', 'mongodb://a.example:27017'),
    cluster1: parseClusterUri('cluster1', 'mongodb://b.example:27017'),
  };
  const sharding = { createSupportingIndexes: false, shardingEntries: [] };

  it('reads the kind of cluster from hello as documented', () => {
    assert.equal(topologyOf({ msg: 'isdbgrid' }), 'sharded');
    assert.equal(topologyOf({ setName: 'rs0' }), 'replicaSet');
    assert.equal(topologyOf({}), 'standalone');
  });

  const cases: [Topology, Topology, Partial<StartRequest>, string | undefined][] = [
    ['replicaSet', 'replicaSet', {}, undefined],
    ['sharded', 'sharded', {}, undefined],
    ['replicaSet', 'sharded', { sharding }, undefined],
    ['replicaSet', 'sharded', {}, 'ShardingRequired'],
    ['replicaSet', 'sharded', { sharding, reversible: true }, 'ReversibleNotSupported'],
    ['sharded', 'sharded', { sharding }, 'ShardingNotAllowed'],
    ['standalone', 'replicaSet', {}, 'ChangeStreamsUnavailable'],
    ['replicaSet', 'standalone', {}, 'UnsupportedTopology'],
    ['sharded', 'replicaSet', {}, undefined],
    ['sharded', 'replicaSet', { sharding }, 'ShardingNotAllowed'],
  ];
  for (const [source, destination, extra, expected] of cases) {
    it(
      `${source} → ${destination}${Object.keys(extra).length ? ` with ${Object.keys(extra).join(', ')}` : ''}: ` +
        `${expected ?? 'allowed'}`,
      async () => {
        const check = () => checkTopologies({ ...REQUEST, ...extra }, source, destination, clusters);
        if (expected === undefined) check();
        else assert.equal((await refusal(check)).code, expected);
      },
    );
  }
});
