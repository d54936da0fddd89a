/**
 * Several instances, one per source shard (issue 13): a document whose shard-key change moves it
 * to another shard. mongos runs the update as a delete on the old shard and an insert on the new
 * one in one transaction; each shard's stream shows its half, and each half is applied by another
 * instance, so the destination may see them in either order, and the old shard's earlier events of
 * the document may come after the new shard's insert. Both orders are forced by pausing one
 * instance while the source moves documents, then resuming it: the migration converges (no lost
 * document, no duplicate, nothing paused) and the destination equals the source at commit.
 *
 * The instance of the new shard waits at the insert until the other has applied its earlier
 * events (progress says so): without that wait, the paused old-shard instance, resumed, replays
 * the document's insert and replacement by `_id` over the moved version, then deletes it.
 * Also: a reversible start is refused by name, and a hot document (`--hotDocIDs`) given to the
 * second instance only is copied by the commit.
 *
 * `FERRY_TEST_SHARDED_URI` and `FERRY_TEST_RS_URI` point the clusters at real deployments.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { Document, MongoClient } from 'mongodb';
import { startFerry, type FerryProcess } from './ferry-process.js';
import { converged, shardedSourcePair, sortedDocs, type ShardedSourcePair } from './multi-instance-fixtures.js';

let pair: ShardedSourcePair;
let sourceUri: string;
let destinationUri: string;
let source: MongoClient;
let destination: MongoClient;
const DB = `multi_moves_${process.pid}`;
let shards: string[];

before(async () => {
  pair = await shardedSourcePair();
  ({ sourceUri, destinationUri, source, destination, shards } = pair);
  const admin = source.db('admin');
  await admin.command({ enableSharding: DB, primaryShard: shards[0] });
  await admin.command({ shardCollection: `${DB}.moves`, key: { k: 1 } });
  await admin.command({ split: `${DB}.moves`, middle: { k: 100 } });
  await admin.command({ moveChunk: `${DB}.moves`, find: { k: 150 }, to: shards[1], _waitForDelete: true });
  await source
    .db(DB)
    .collection('moves')
    .insertMany(Array.from({ length: 200 }, (_, i) => ({ _id: i, k: i, v: 0 })) as never[]);
});

after(async () => {
  await pair?.stop();
});

/** The moved collection on the destination equals the source's. */
const movesConverged = (label: string) => converged(pair, (client) => sortedDocs(client, DB, 'moves'), label);

describe('several instances: a shard-key change moving a document between shards', () => {
  const ferries: FerryProcess[] = [];
  const ferry = (id: string, ...extra: string[]) =>
    startFerry(['--cluster0', sourceUri, '--cluster1', destinationUri, '--id', id, ...extra], { FERRY_COMMIT_RETRY_INTERVAL_MS: '200' });

  after(async () => {
    await Promise.all(ferries.map((each) => each.stop().catch(() => null)));
  });

  it('converges whichever instance applies its half first', async () => {
    const [first, second] = shards as [string, string];
    const one = await ferry(first);
    // A hot document of the second shard, named to its instance only: its events are skipped there,
    // and the commit (the coordinator's) copies every instance's hot documents.
    const two = await ferry(second, '--hotDocIDs', JSON.stringify({ db: DB, collection: 'moves', ids: [{ _id: 199 }] }));
    ferries.push(one, two);
    const body = { source: 'cluster0', destination: 'cluster1', includeNamespaces: [{ database: DB }] };
    // Reversed, each instance needs a shard of the destination: to a replica set a reversible start is refused by name, nothing started.
    const reversible = await one.post('start', {
      source: 'cluster0',
      destination: 'cluster1',
      reversible: true,
      enableUserWriteBlocking: 'sourceAndDestination',
    });
    assert.equal(reversible.status, 422, JSON.stringify(reversible.body));
    assert.match(JSON.stringify(reversible.body), /ReversibleNotSupported/);
    assert.match(JSON.stringify(reversible.body), /several instances/);
    assert.equal((await one.progress()).state, 'IDLE');
    assert.equal((await one.post('start', body)).status, 200);
    assert.equal((await two.post('start', body)).status, 200);
    await Promise.all([one, two].map((each) => each.waitForProgress((p) => p.canCommit === true, 180_000)));
    const moves = source.db(DB).collection('moves');

    // Applied events counted by an instance: its backlog is applied once the count grew by its size.
    const applied = async (instance: FerryProcess) => Number((await instance.progress()).totalEventsApplied);

    // Insert before delete: the old shard's instance is held while documents leave its shard.
    const oneBefore = await applied(one);
    assert.equal((await one.post('pause', {})).status, 200);
    await one.waitForProgress((p) => p.state === 'PAUSED');
    await moves.insertOne({ _id: 'fresh', k: 10, v: 1 } as Document);
    await moves.replaceOne({ _id: 'fresh' } as Document, { k: 10, v: 2 });
    await moves.updateOne({ _id: 'fresh' } as Document, { $set: { k: 150, v: 3 } });
    await moves.replaceOne({ _id: 5 } as Document, { k: 5, v: 1 });
    await moves.updateOne({ _id: 5 } as Document, { $set: { k: 160 } });
    // The new shard's instance has dealt with the inserts: it waits for the held one (saying so),
    // or, had it applied them, the moved versions are on the destination.
    const dealt = async () => {
      const held = ((await two.progress()).warnings ?? []).some((w: string) => w.includes(`"${first}"`) && w.includes('cross-shard move'));
      const moved = await destination
        .db(DB)
        .collection('moves')
        .countDocuments({ _id: { $in: ['fresh', 5] }, k: { $gte: 150 } } as Document);
      return held || moved === 2;
    };
    for (let waited = 0; !(await dealt()); waited += 200) {
      assert.ok(waited < 60_000, 'the new shard instance neither applied the moved documents nor waited');
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    assert.equal((await one.post('resume', {})).status, 200);
    // Its five: the insert, replacement and delete of 'fresh', the replacement and delete of 5.
    await one.waitForProgress((p) => Number(p.totalEventsApplied) >= oneBefore + 5, 60_000);
    await Promise.all([one, two].map((each) => each.waitForProgress((p) => p.canCommit === true, 180_000)));
    await movesConverged('insert before delete');

    // Delete before insert: the new shard's instance is held while documents arrive on its shard.
    const twoBefore = await applied(two);
    assert.equal((await two.post('pause', {})).status, 200);
    await two.waitForProgress((p) => p.state === 'PAUSED');
    await moves.updateOne({ _id: 6 } as Document, { $set: { k: 170, v: 4 } });
    await moves.insertOne({ _id: 'late', k: 20, v: 1 } as Document);
    await moves.updateOne({ _id: 'late' } as Document, { $set: { k: 180 } });
    // And back: a document leaving the new shard while its instance is held, then returning.
    await moves.updateOne({ _id: 150 } as Document, { $set: { k: 30 } });
    await moves.updateOne({ _id: 150 } as Document, { $set: { k: 130, v: 5 } });
    // The old shard's instance applies its deletes (it runs), then the new one catches up.
    await one.waitForProgress((p) => p.lagTimeSeconds !== null && p.lagTimeSeconds < 5);
    assert.equal((await two.post('resume', {})).status, 200);
    // Its four: the inserts of 6 and 'late', the delete and the insert of 150.
    await two.waitForProgress((p) => Number(p.totalEventsApplied) >= twoBefore + 4, 60_000);
    await Promise.all([one, two].map((each) => each.waitForProgress((p) => p.canCommit === true, 180_000)));
    await movesConverged('delete before insert');

    for (let i = 1; i <= 5; i++) await moves.updateOne({ _id: 199 } as Document, { $set: { v: i } });
    assert.equal((await one.post('commit', {})).status, 200);
    assert.equal((await two.post('commit', {})).status, 200);
    await Promise.all([one, two].map((each) => each.waitForProgress((p) => p.state === 'COMMITTED', 120_000)));
    assert.deepEqual(await sortedDocs(destination, DB, 'moves'), await sortedDocs(source, DB, 'moves'), 'after commit');
    for (const each of ferries.splice(0)) assert.equal(await each.stop(), 0);
  });
});
