/**
 * Random workloads (cea-workload.ts: inserts, updates, replaces, upserts, deletes, transactions)
 * played during the copy and during CEA of syncs to sharded clusters, with shard keys on the field
 * the workload changes most (`n`), so documents keep moving between chunks and shards. After
 * commit the destination holds exactly the source's documents. Replica set → sharded (ranged,
 * hashed and compound keys, one collection unsharded) and sharded → sharded (the source sharded
 * by `n`, so its shard-key changes are cross-shard moves: a delete and an insert in either order).
 *
 * DDL is left out of these workloads: the test cluster does not rename sharded collections
 * (its README), which the workload's renames would need.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Int32, MongoClient, type Document } from 'mongodb';
import { spawnCluster } from '../cluster/index.js';
import { playOperations, sampleOperations, SYNCED, type Op } from './cea-workload.js';
import { copyFinished, emptyDestination, startFerry } from './ferry-process.js';
import { METADATA_DATABASE } from '../../src/domain/namespaces.js';

const RUN = String(process.pid);
let replicaSetUri: string;
let shardedUris: [string, string];
let clients: MongoClient[] = [];
const stops: (() => Promise<void>)[] = [];

before(async () => {
  const [rs, a, b] = await Promise.all([spawnCluster(), spawnCluster({ shards: 2 }), spawnCluster({ shards: 2 })]);
  stops.push(
    () => rs.stop(),
    () => a.stop(),
    () => b.stop(),
  );
  replicaSetUri = rs.uri;
  shardedUris = [a.uri, b.uri];
  clients = [rs.uri, a.uri, b.uri].map((uri) => new MongoClient(uri));
});

after(async () => {
  await Promise.all(clients.map((client) => client.close()));
  await Promise.all(stops.map((stop) => stop()));
});

/** Operations without those a sharded collection cannot take: an array or object as shard-key value. */
function shardable(ops: Op[]): Op[] {
  const ok = (op: Op): boolean =>
    op.kind === 'transaction'
      ? op.ops.every(ok)
      : !(op.kind === 'set' && op.field === 'n' && typeof op.value === 'object' && op.value !== null);
  return ops.filter(ok);
}

async function seedPlain(client: MongoClient, db: string, count: number): Promise<void> {
  for (const coll of SYNCED) {
    await client
      .db(db)
      .collection(coll)
      .insertMany(Array.from({ length: count }, (_, k) => ({ _id: k, n: new Int32(k), a: `v${k % 7}`, pad: 'p'.repeat(300) })) as never[]);
  }
}

async function syncWithWorkload(
  sourceUri: string,
  destinationUri: string,
  source: MongoClient,
  db: string,
  seed: number,
  sharding?: Document,
): Promise<void> {
  await emptyDestination(destinationUri);
  const ferry = await startFerry(
    ['--cluster0', sourceUri, '--cluster1', destinationUri, '--copyWorkers', '1', '--batchBytes', '4096', '--partitionSizeMB', '1'],
    { FERRY_COMMIT_RETRY_INTERVAL_MS: '200' },
  );
  try {
    const started = await ferry.post('start', {
      source: 'cluster0',
      destination: 'cluster1',
      includeNamespaces: [{ database: db }],
      ...(sharding === undefined ? {} : { sharding }),
    });
    assert.equal(started.status, 200, JSON.stringify(started.body));
    const during = await playOperations(source, db, shardable(sampleOperations(seed, 150, 0)));
    await ferry.waitForProgress(copyFinished, 120_000);
    const afterCopy = await playOperations(source, db, shardable(sampleOperations(seed + 1, 150, 0)));
    assert.ok(during.applied + afterCopy.applied > 100, 'most operations changed something');
    await ferry.waitForProgress((p) => p.canCommit === true, 120_000);
    assert.equal((await ferry.post('commit', {})).status, 200);
    const done = await ferry.waitForProgress((p) => p.state === 'COMMITTED', 120_000);
    assert.deepEqual(done.warnings ?? [], []);
  } finally {
    assert.equal(await ferry.stop(), 0);
  }
}

async function assertSameDocuments(source: MongoClient, destination: MongoClient, db: string): Promise<void> {
  for (const coll of SYNCED) {
    const [there, here] = await Promise.all(
      [destination, source].map((client) => client.db(db).collection(coll).find().sort({ _id: 1 }).toArray()),
    );
    assert.deepEqual(there, here, `${db}.${coll}: the same documents`);
  }
}

describe('random workloads into sharded clusters', () => {
  it('replica set → sharded: ranged, hashed and compound keys on the field the workload moves', async () => {
    const db = `wl_rs_${RUN}`;
    const [source, destination] = [clients[0]!, clients[1]!];
    await seedPlain(source, db, 200);
    await source.db(db).collection('c0').createIndex({ n: 1 });
    const entry = (coll: string, key: Document[]) => ({ database: db, collection: coll, shardCollection: { key } });
    await syncWithWorkload(replicaSetUri, shardedUris[0], source, db, 7, {
      createSupportingIndexes: true,
      shardingEntries: [entry('c0', [{ n: 1 }]), entry('c1', [{ n: 'hashed' }]), entry('c2', [{ n: 1 }, { _id: 1 }])],
    });
    await assertSameDocuments(source, destination, db);
  });

  it('sharded → sharded: the source sharded by the moving field, so key changes are cross-shard moves', async () => {
    const db = `wl_sh_${RUN}`;
    const [source, destination] = [clients[1]!, clients[2]!];
    // It was the first test's destination: that committed sync's metadata goes (one id per cluster).
    await source.db(METADATA_DATABASE).dropDatabase();
    const admin = source.db('admin');
    const { shards } = await admin.command({ listShards: 1 });
    await admin.command({ enableSharding: db });
    for (const coll of ['c0', 'c1']) {
      await admin.command({ shardCollection: `${db}.${coll}`, key: { n: 1 } });
      await admin.command({ split: `${db}.${coll}`, middle: { n: 100 } });
      await admin.command({
        moveChunk: `${db}.${coll}`,
        find: { n: 150 },
        to: (shards as { _id: string }[])[1]!._id,
        _waitForDelete: true,
      });
    }
    await seedPlain(source, db, 200);
    await syncWithWorkload(shardedUris[0], shardedUris[1], source, db, 11);
    await assertSameDocuments(source, destination, db);
  });
});
