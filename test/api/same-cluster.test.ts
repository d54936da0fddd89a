/**
 * The same cluster as source and destination is refused, recognised by the cluster itself and
 * never by the connection strings: preflight compares what `hello` says (the same process, or the
 * same replica set by name and members: two different sets may share a name), and `start` looks
 * on the source for the lease it has just written on the destination (which also tells two
 * routers of one sharded cluster apart). A refusal leaves nothing behind.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { MongoClient } from 'mongodb';
import { sameCluster } from '../../src/cluster/commands.js';
import { PHASES } from '../../src/cli/compose.js';
import { parseClusterUri } from '../../src/config/clusters.js';
import { resolveOptions } from '../../src/config/resolve.js';
import { syncSettings } from '../../src/config/settings.js';
import { METADATA_DATABASE } from '../../src/domain/namespaces.js';
import { SyncOrchestrator } from '../../src/sync/orchestrator.js';
import { spawnCluster, type ClusterProcess } from '../cluster/index.js';
import { startFerry } from '../e2e/ferry-process.js';
import { silentLogger } from '../helpers/phase-context.js';
import { START_REQUEST } from './app.js';

describe('sameCluster (what hello says)', () => {
  it('the same process, or the same replica set by name and a member in common, is one cluster', () => {
    assert.equal(sameCluster({ processId: 'a1' }, { processId: 'a1' }), true);
    assert.equal(sameCluster({ setName: 'rs0', hosts: ['h1:27017', 'h2:27017'] }, { setName: 'rs0', hosts: ['h2:27017'] }), true);
  });

  it('two replica sets sharing a name but no member, or two processes of nothing in common, are two', () => {
    assert.equal(
      sameCluster({ setName: 'rs0', hosts: ['h1:27017'], processId: 'a' }, { setName: 'rs0', hosts: ['h2:27017'], processId: 'b' }),
      false,
    );
    assert.equal(sameCluster({ setName: 'rs0', hosts: ['h1:27017'] }, { setName: 'rs1', hosts: ['h1:27017'] }), false);
    // Two mongos routers: hello says neither; the start's probe decides.
    assert.equal(sameCluster({ msg: 'isdbgrid', processId: 'a' }, { msg: 'isdbgrid', processId: 'b' }), false);
  });
});

describe('a sync from a cluster onto itself', { skip: process.env.FERRY_TEST_CLUSTER0_URI ? 'needs a local test cluster' : false }, () => {
  let node: ClusterProcess;
  let client: MongoClient;
  // Two spellings of one cluster: the same port by IP and by name.
  let byIp: string;
  let byName: string;

  before(async () => {
    node = await spawnCluster();
    byIp = node.uri;
    byName = node.uri.replace('127.0.0.1', 'localhost');
    client = await MongoClient.connect(byIp);
    await client
      .db(`same_${process.pid}`)
      .collection('items')
      .insertOne({ _id: 1 } as never);
  });
  after(async () => {
    await client?.close();
    await node?.stop();
  });

  it('is refused at start with SameCluster whatever the URIs say, and leaves nothing behind', async () => {
    const ferry = await startFerry(['--cluster0', byIp, '--cluster1', byName, '--id', `same-${process.pid}`]);
    try {
      const refused = await ferry.post('start', { source: 'cluster0', destination: 'cluster1' });
      assert.equal(refused.status, 422);
      assert.equal(refused.body.error, 'SameCluster');
      assert.match(refused.body.errorDescription, /are the same cluster/);
      assert.equal((await ferry.progress()).state, 'IDLE');
    } finally {
      assert.equal(await ferry.stop(), 0);
    }
    const databases = (await client.db('admin').admin().listDatabases()).databases.map((db) => db.name);
    assert.ok(!databases.includes(METADATA_DATABASE), `no metadata written: ${databases.join(', ')}`);
  });

  it('is refused by start itself when hello could not tell (the lease read back from the source), its lease removed', async () => {
    const clusters = { cluster0: parseClusterUri('cluster0', byIp), cluster1: parseClusterUri('cluster1', byName) };
    const options = resolveOptions({ cluster0: byIp, cluster1: byName }, {});
    const sync = new SyncOrchestrator({
      clusters,
      id: `same-probe-${process.pid}`,
      settings: syncSettings(options),
      phases: PHASES,
      logger: silentLogger,
    });
    try {
      // Straight to start, as if preflight had been satisfied (two routers of one sharded cluster pass it).
      await assert.rejects(sync.start(START_REQUEST), { code: 'SameCluster', message: /reads back from the source/ });
    } finally {
      await sync.close();
    }
    assert.equal(await client.db(METADATA_DATABASE).collection('leases').countDocuments(), 0, 'the lease it took is gone');
    assert.equal(await client.db(METADATA_DATABASE).collection('resume').countDocuments(), 0);
  });
});
