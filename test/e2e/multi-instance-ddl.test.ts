/**
 * Several instances, one per source shard (issue 13): DDL on sharded collections during
 * change-event application, with writes on every shard. The database's primary shard alone
 * reports a drop or rename of a sharded collection (the other shards' parts are `fromMigrate`), so
 * its instance applies it for all. The other instance is held (paused) around the DDL, so that it
 * still has earlier writes to the collection to apply when the DDL arrives, and later writes (to
 * the new name) right after: the drop must not be undone by the earlier inserts, and the rename
 * must not overwrite the later ones. The destination is sharded: the other instance then writes
 * the renamed collection with its shard key, which only the DDL's instance recorded, and the
 * commit copies its hot document (`--hotDocIDs`, given to it only) by its shard key. The
 * destination equals the source at commit.
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
const DB = `multi_ddl_${process.pid}`;
let shards: string[];

before(async () => {
  // A sharded destination: the instance that did not apply a DDL writes to the renamed collection by its shard key.
  pair = await shardedSourcePair(true);
  ({ sourceUri, destinationUri, source, destination, shards } = pair);
  const admin = source.db('admin');
  await admin.command({ enableSharding: DB, primaryShard: shards[0] });
  for (const coll of ['dropped', 'renamed', 'kept']) {
    await admin.command({ shardCollection: `${DB}.${coll}`, key: { k: 1 } });
    await admin.command({ split: `${DB}.${coll}`, middle: { k: 100 } });
    await admin.command({ moveChunk: `${DB}.${coll}`, find: { k: 150 }, to: shards[1], _waitForDelete: true });
    await source
      .db(DB)
      .collection(coll)
      .insertMany(Array.from({ length: 200 }, (_, i) => ({ _id: i, k: i, v: 0 })) as never[]);
  }
});

after(async () => {
  await pair?.stop();
});

/** Every collection of the database with its documents, by name. */
async function collections(client: MongoClient): Promise<Record<string, Document[]>> {
  const names = (await client.db(DB).listCollections({}, { nameOnly: true }).toArray()).map((entry) => entry.name).sort();
  const all: Record<string, Document[]> = {};
  for (const name of names) all[name] = await sortedDocs(client, DB, name);
  return all;
}

describe('several instances: DDL on a sharded collection with writes on every shard', () => {
  const ferries: FerryProcess[] = [];
  const ferry = (id: string, ...extra: string[]) =>
    startFerry(['--cluster0', sourceUri, '--cluster1', destinationUri, '--id', id, ...extra], { FERRY_COMMIT_RETRY_INTERVAL_MS: '200' });

  after(async () => {
    await Promise.all(ferries.map((each) => each.stop().catch(() => null)));
  });

  it('applies a drop and a rename once, after every instance applied its earlier writes and before its later ones', async () => {
    const [first, second] = shards as [string, string];
    const one = await ferry(first);
    const two = await ferry(second, '--hotDocIDs', JSON.stringify({ db: DB, collection: 'kept', ids: [{ _id: 199 }] }));
    ferries.push(one, two);
    const body = { source: 'cluster0', destination: 'cluster1', includeNamespaces: [{ database: DB }] };
    assert.equal((await one.post('start', body)).status, 200);
    assert.equal((await two.post('start', body)).status, 200);
    await Promise.all([one, two].map((each) => each.waitForProgress((p) => p.canCommit === true, 180_000)));
    const db = source.db(DB);
    const applied = async (instance: FerryProcess) => Number((await instance.progress()).totalEventsApplied);
    /** Waits until the primary shard's instance waits for the held one at the DDL, or has applied it. */
    const dealt = async (done: () => Promise<boolean>) => {
      for (let waited = 0; ; waited += 200) {
        const warnings: string[] = (await one.progress()).warnings ?? [];
        if (warnings.some((w) => w.includes(`waits for instance "${second}"`)) || (await done())) return;
        assert.ok(waited < 60_000, 'the primary shard instance neither applied the DDL nor waited');
        await new Promise((resolve) => setTimeout(resolve, 200));
      }
    };
    const onDestination = async (name: string) =>
      (await destination.db(DB).listCollections({ name }, { nameOnly: true }).toArray()).length > 0;

    // Drop: the held instance still has inserts and updates of the collection, on its shard, to apply.
    const twoBefore = await applied(two);
    assert.equal((await two.post('pause', {})).status, 200);
    await two.waitForProgress((p) => p.state === 'PAUSED');
    await db.collection('dropped').insertMany([
      { _id: 'a', k: 150 },
      { _id: 'b', k: 20 },
    ] as Document[]);
    await db.collection('dropped').updateMany({ k: { $gte: 190 } } as Document, { $set: { v: 1 } });
    await db.collection('dropped').drop();
    await dealt(async () => !(await onDestination('dropped')));

    // Rename: earlier writes on both shards, then later ones under the new name on both shards.
    await db.collection('renamed').insertMany([
      { _id: 'c', k: 160 },
      { _id: 'd', k: 30 },
    ] as Document[]);
    await db.collection('renamed').deleteMany({ k: { $in: [1, 101] } } as Document);
    await source.db('admin').command({ renameCollection: `${DB}.renamed`, to: `${DB}.moved` });
    await db.collection('moved').insertMany([
      { _id: 'e', k: 170 },
      { _id: 'f', k: 40 },
    ] as Document[]);
    await db.collection('moved').updateMany({ k: { $in: [120, 20] } } as Document, { $set: { v: 2 } });
    await db.collection('kept').insertOne({ _id: 'g', k: 180 } as Document);

    assert.equal((await two.post('resume', {})).status, 200);
    // Its backlog on its shard: 1 insert and 10 updates of 'dropped', 1 insert and 1 delete of
    // 'renamed', 1 insert and 1 update of 'moved', 1 insert of 'kept'.
    await two.waitForProgress((p) => Number(p.totalEventsApplied) >= twoBefore + 16, 60_000);
    await Promise.all([one, two].map((each) => each.waitForProgress((p) => p.canCommit === true, 180_000)));
    await converged(pair, collections, 'after the drop and the rename');
    assert.equal(await onDestination('dropped'), false);
    assert.equal(await onDestination('renamed'), false);

    // The hot document changes (its shard key too, within its shard) only now: the commit brings it across.
    for (let i = 1; i <= 3; i++) await db.collection('kept').updateOne({ _id: 199 } as Document, { $set: { v: i, k: 190 + i } });
    assert.equal((await one.post('commit', {})).status, 200);
    assert.equal((await two.post('commit', {})).status, 200);
    await Promise.all([one, two].map((each) => each.waitForProgress((p) => p.state === 'COMMITTED', 120_000)));
    assert.deepEqual(await collections(destination), await collections(source), 'after commit');
    for (const each of ferries.splice(0)) assert.equal(await each.stop(), 0);
  });
});
