/**
 * The destination guard after a crash inside Ferry's own catalog change: change-event application
 * dropped a collection Ferry created (for the source's drop), and Ferry was killed before its
 * records said so. The restarted Ferry's guard finds the collection gone while the records still
 * call it created: that is Ferry's own change, not someone else's, and must not stop the sync (it
 * did, with DestinationChanged, in the cea-crash test). A drop Ferry did not make is still noticed.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { MongoClient } from 'mongodb';
import { DestinationGuard } from '../../src/guard/destination-guard.js';
import type { Lease } from '../../src/meta/lease.js';
import { fixedFence } from '../../src/meta/fence.js';
import { MetadataStore } from '../../src/meta/store.js';
import { METADATA_DATABASE } from '../../src/domain/namespaces.js';
import { startClusterPair, type ClusterPair } from '../helpers/clusters.js';
import { fakeCluster } from '../helpers/phase-context.js';
import { RUN } from './copy-fixtures.js';

let pair: ClusterPair;
let client: MongoClient;

before(async () => {
  pair = await startClusterPair();
  client = await MongoClient.connect(pair.cluster1);
});

after(async () => {
  await client?.close();
  await pair?.stop();
});

/** What a guard needs of a sync recorded on the destination: its resume document and created namespaces. */
async function recordedSync(instance: string, db: string, colls: string[]): Promise<{ guard: () => DestinationGuard }> {
  const meta = client.db(METADATA_DATABASE);
  const createdAt = new Date();
  await meta.collection<any>('resume').insertOne({ _id: instance, instance, createdAt, state: 'RUNNING' });
  for (const coll of colls) {
    await client.db(db).createCollection(coll);
    await meta
      .collection<any>('namespaces')
      .insertOne({ _id: { instance, ns: `${db}.${coll}` }, instance, db, coll, type: 'collection', created: true });
  }
  const lease = { instance, renew: async () => {} } as unknown as Lease;
  // A new guard stands for a restarted Ferry: it knows only what the metadata holds.
  const guard = () =>
    new DestinationGuard({
      destination: fakeCluster('cluster1', client),
      store: new MetadataStore(client, instance, fixedFence(1)),
      lease,
      createdAt,
    });
  return { guard };
}

describe('the destination guard and a crash inside Ferry’s own change', () => {
  it('a collection Ferry dropped itself before a kill is not taken for interference; one dropped by someone else is', async () => {
    const instance = `guard-own-${RUN}`;
    const db = `guard_own_${RUN}`;
    const { guard } = await recordedSync(instance, db, ['mine', 'theirs']);
    await guard().check(); // learns both collections' identity

    // Ferry applies the source's drop of `mine`, and is killed before recording it.
    const before = guard();
    await before.check();
    await before.changing([{ db, coll: 'mine' }], () => client.db(db).collection('mine').drop());

    // The restarted Ferry checks at launch: its own drop is not interference.
    const restarted = guard();
    await restarted.check();
    await restarted.check();

    // Someone else drops `theirs`: noticed, by name.
    await client.db(db).collection('theirs').drop();
    await assert.rejects(restarted.check(), (error: Error) => {
      assert.equal(error.name, 'DestinationChanged');
      assert.match(error.message, new RegExp(`${db}\\.theirs \\(a collection Ferry created\\) is gone`));
      assert.doesNotMatch(error.message, /\.mine /);
      return true;
    });
  });
});
