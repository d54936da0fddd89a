/**
 * The metadata store's indexes, against an in-process test cluster: each collection that holds
 * many documents per instance is indexed on the fields Ferry reads it by (the re-check queues in
 * the order they are read), so that a store with thousands of namespaces or a million re-checks
 * waiting is read by index ranges. Creating them again changes nothing.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { MongoClient } from 'mongodb';
import { METADATA_DATABASE } from '../../src/domain/namespaces.js';
import { METADATA_COLLECTIONS } from '../../src/meta/names.js';
import { fixedFence } from '../../src/meta/fence.js';
import { MetadataStore } from '../../src/meta/store.js';
import { startCluster } from '../cluster/index.js';

describe('metadata store indexes', () => {
  let cluster: Awaited<ReturnType<typeof startCluster>>;
  let client: MongoClient;

  before(async () => {
    cluster = await startCluster({ noopIntervalMs: 0, ttlIntervalMs: 0 });
    client = await MongoClient.connect(cluster.uri);
  });

  after(async () => {
    await client.close();
    await cluster.stop();
  });

  const keysOf = async (name: string) =>
    (await client.db(METADATA_DATABASE).collection(name).listIndexes().toArray()).map((index) => JSON.stringify(index.key)).sort();

  it('indexes what is read by instance, and the re-check queues by instance then due time; twice is the same', async () => {
    const store = new MetadataStore(client, 'sync-a', fixedFence(1));
    await store.ensureIndexes();
    await store.ensureIndexes();
    const byInstance = ['{"_id":1}', '{"instance":1}'];
    const byDueTime = ['{"_id":1}', '{"instance":1,"dueAt":1}'];
    const { namespaces, partitions, tombstones, verificationPartitions, verificationMismatches } = METADATA_COLLECTIONS;
    for (const name of [namespaces, partitions, tombstones, verificationPartitions, verificationMismatches]) {
      assert.deepEqual(await keysOf(name), byInstance, name);
    }
    for (const name of [METADATA_COLLECTIONS.verificationRechecks, METADATA_COLLECTIONS.verificationCatalogRechecks]) {
      assert.deepEqual(await keysOf(name), byDueTime, name);
    }
  });
});
