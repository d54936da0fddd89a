// The write workload on generated data: it changes the source the way it says, without refused
// writes, and two workloads with different seeds never insert the same _id.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { MongoClient } from 'mongodb';
import { generateDataset } from '../../scripts/generate.js';
import { InvalidWorkloadOptionError, startWorkload } from '../../scripts/workload.js';
import { spawnCluster, type ClusterHandle } from '../cluster/index.js';

describe('write workload', () => {
  let cluster: ClusterHandle;
  let client: MongoClient;

  before(async () => {
    cluster = await spawnCluster();
    await generateDataset({ uri: cluster.uri, sizeMB: 1, seed: 3 });
    client = await MongoClient.connect(cluster.uri);
  });

  after(async () => {
    await client.close();
    await cluster.stop();
  });

  it('inserts, updates, replaces and deletes generated documents, two workloads side by side without a refused write', async () => {
    const orders = client.db('gen_shop').collection<{ _id: number }>('orders');
    const ordersBefore = await orders.countDocuments();
    const [first, second] = await Promise.all([
      startWorkload({ uri: cluster.uri, opsPerSecond: 400, seed: 1, idRange: 1, seconds: 1.5 }),
      startWorkload({ uri: cluster.uri, opsPerSecond: 400, seed: 1, idRange: 2, seconds: 1.5 }),
    ]);
    const stats = await Promise.all([first.finished, second.finished]);
    for (const s of stats) {
      assert.equal(s.errors, 0, s.firstError);
      assert.ok(s.inserts > 0 && s.updates > 0 && s.replaces > 0 && s.deletes > 0, JSON.stringify(s));
      assert.equal(s.writes, s.inserts + s.updates + s.replaces + s.deletes);
      assert.ok(s.changes > 0 && s.changes <= s.writes, JSON.stringify(s));
    }
    // Each workload inserts in its own _id range of the Int32-keyed orders.
    const inRange = (range: number) => orders.countDocuments({ _id: { $gte: range * 10_000_000, $lt: (range + 1) * 10_000_000 } });
    assert.ok((await inRange(1)) > 0 && (await inRange(2)) > 0);
    assert.notEqual(await orders.countDocuments(), ordersBefore);
    const updated = await orders.countDocuments({ $or: [{ reviewed: true }, { updatedAt: { $exists: true } }] });
    assert.ok(updated > 0, 'operator and pipeline updates reached the source');
  });

  it('refuses an _id range that does not exist before writing anything', async () => {
    for (const idRange of [0, 201]) await assert.rejects(startWorkload({ uri: cluster.uri, idRange }), InvalidWorkloadOptionError);
  });
});
