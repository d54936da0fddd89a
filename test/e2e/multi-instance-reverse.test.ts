/**
 * Several instances, one per source shard, reversed (issue 13): a 2-shard source and a 2-shard
 * destination, two `ferry` processes (`--id` = the source's shard IDs). A reversible start is
 * accepted, committed on both; writes go to the destination; `reverse` sent to one instance only
 * waits (REVERSING, progress names the instance missing) and nothing of the reversed sync is
 * written; once the other gets it, the reversed sync runs, each instance applying the change events
 * of one shard of the new source; writes during it, commit on both, and the original source equals
 * the destination. SIGKILL of the instance that waits for the other's reverse, and of the other
 * right after it got reverse: each restarts and the reverse completes. Also: to a destination
 * with another number of shards, a reversible start of several instances is refused by name,
 * nothing started.
 *
 * `FERRY_TEST_SHARDED_URI` and `FERRY_TEST_SHARDED_DEST_URI` point the clusters at real deployments
 * (the refusal then needs a cluster of its own and is skipped).
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { MongoClient, type Document } from 'mongodb';
import { spawnCluster } from '../cluster/index.js';
import { startFerry, type FerryProcess } from './ferry-process.js';
import { shardedSourcePair, sortedDocs, type ShardedSourcePair } from './multi-instance-fixtures.js';
import { METADATA_DATABASE } from '../../src/domain/namespaces.js';

let pair: ShardedSourcePair;
let oneShard: { uri: string; stop(): Promise<void> } | undefined;
let shards: string[];
const DB = `multi_reverse_${process.pid}`;
const local = process.env.FERRY_TEST_SHARDED_URI === undefined || process.env.FERRY_TEST_SHARDED_URI === '';
const BODY = { source: 'cluster0', destination: 'cluster1', reversible: true, enableUserWriteBlocking: true };

before(async () => {
  [pair, oneShard] = await Promise.all([shardedSourcePair(true), local ? spawnCluster({ shards: 1 }) : undefined]);
  shards = pair.shards;
  const admin = pair.source.db('admin');
  await admin.command({ enableSharding: DB, primaryShard: shards[0] });
  await admin.command({ shardCollection: `${DB}.orders`, key: { k: 1 } });
  await admin.command({ split: `${DB}.orders`, middle: { k: 100 } });
  await admin.command({ moveChunk: `${DB}.orders`, find: { k: 150 }, to: shards[1], _waitForDelete: true });
  const db = pair.source.db(DB);
  await db.collection('orders').insertMany(Array.from({ length: 200 }, (_, i) => ({ _id: i, k: i, v: 0 })) as never[]);
  await db.collection('plain').insertMany(Array.from({ length: 20 }, (_, i) => ({ _id: i, v: 0 })) as never[]);
});

after(async () => {
  await Promise.all([pair?.stop(), oneShard?.stop()]);
});

/** Every collection of the database with its documents, by name. */
async function collections(client: MongoClient): Promise<Record<string, Document[]>> {
  const names = (await client.db(DB).listCollections({}, { nameOnly: true }).toArray()).map((entry) => entry.name).sort();
  const all: Record<string, Document[]> = {};
  for (const name of names) all[name] = await sortedDocs(client, DB, name);
  return all;
}

/** Writes on both shards' ranges of `orders` and on `plain`, tagged. */
async function writes(client: MongoClient, tag: string): Promise<void> {
  const db = client.db(DB);
  await db.collection('orders').insertMany([
    { _id: `${tag}-low`, k: 10, v: tag },
    { _id: `${tag}-high`, k: 150, v: tag },
  ] as Document[]);
  await db.collection('orders').updateMany({ k: { $in: [20, 120] } } as Document, { $set: { v: tag } });
  await db.collection('orders').deleteMany({ k: { $in: [30, 130] }, _id: { $type: 'number' } } as Document);
  await db.collection('plain').insertOne({ _id: tag, v: tag } as Document);
}

describe('several instances: reverse', () => {
  const ferries: FerryProcess[] = [];
  const ferry = (destinationUri: string, id: string) =>
    startFerry(['--cluster0', pair.sourceUri, '--cluster1', destinationUri, '--id', id], {
      FERRY_COMMIT_RETRY_INTERVAL_MS: '200',
      FERRY_LEASE_DURATION_MS: '3000',
    });

  after(async () => {
    await Promise.all(ferries.map((each) => each.stop().catch(() => null)));
  });

  it('refuses a reversible start to a destination with another number of shards, starting nothing', { skip: !local }, async () => {
    const refused = await ferry(oneShard!.uri, shards[0]!);
    ferries.push(refused);
    const answer = await refused.post('start', BODY);
    assert.equal(answer.status, 422, JSON.stringify(answer.body));
    assert.equal(answer.body.error, 'ReversibleNotSupported');
    assert.match(answer.body.errorDescription, /as many shards on each: .* has 2, .* 1/);
    assert.equal((await refused.progress()).state, 'IDLE');
    const destination = await MongoClient.connect(oneShard!.uri);
    try {
      const names = (await destination.db('admin').command({ listDatabases: 1, nameOnly: true })).databases.map((d: Document) => d.name);
      assert.ok(!names.includes(METADATA_DATABASE) && !names.includes(DB), `nothing written: ${names.join(', ')}`);
    } finally {
      await destination.close();
    }
    assert.equal(await ferries.pop()!.stop(), 0);
  });

  it('reverses once every instance got reverse, each applying one shard of the new source', async () => {
    const started = Date.now();
    const [first, second] = shards as [string, string];
    let one = await ferry(pair.destinationUri, first);
    let two = await ferry(pair.destinationUri, second);
    ferries.push(one, two);
    for (const each of [one, two]) assert.equal((await each.post('start', BODY)).status, 200);
    await Promise.all([one, two].map((each) => each.waitForProgress((p) => p.canCommit === true, 120_000)));
    for (const each of [one, two]) assert.equal((await each.post('commit', {})).status, 200);
    await Promise.all([one, two].map((each) => each.waitForProgress((p) => p.state === 'COMMITTED', 60_000)));
    assert.deepEqual(await collections(pair.destination), await collections(pair.source), 'after the commit');

    // The application moved to the destination.
    await writes(pair.destination, 'after-commit');

    // Reverse on one instance only: it waits, naming the other; nothing of the reversed sync is written.
    assert.equal((await one.post('reverse', {})).status, 200);
    const waiting = await one.waitForProgress(
      (p) => p.state === 'REVERSING' && (p.warnings ?? []).some((w: string) => w.includes(`"${second}" to get the reverse request`)),
      30_000,
    );
    assert.equal(waiting.coordinatorID, first);
    assert.equal((await two.progress()).state, 'COMMITTED');
    const resumeDocs = () => pair.source.db(METADATA_DATABASE).collection('resume').countDocuments();
    assert.equal(await resumeDocs(), 0, 'no reversed sync recorded on the new destination while an instance has not got reverse');

    // SIGKILLed while it waits, the coordinator restarts still waiting for the other: it got reverse.
    assert.equal(await ferries.shift()!.stop('SIGKILL'), null);
    one = await ferry(pair.destinationUri, first);
    ferries.push(one);
    await one.waitForProgress(
      (p) => p.state === 'REVERSING' && (p.warnings ?? []).some((w: string) => w.includes(`"${second}" to get the reverse request`)),
      30_000,
    );
    assert.equal(await resumeDocs(), 0, 'still nothing of the reversed sync written');

    // The other gets it, and is SIGKILLed at once: restarted, it finishes its part of the reverse.
    assert.equal((await two.post('reverse', {})).status, 200);
    assert.equal(await ferries.splice(ferries.indexOf(two), 1)[0]!.stop('SIGKILL'), null);
    two = await ferry(pair.destinationUri, second);
    ferries.push(two);
    await Promise.all([one, two].map((each) => each.waitForProgress((p) => p.state === 'RUNNING', 60_000)));
    assert.equal(await resumeDocs(), 2, 'each instance runs its reversed sync');

    // Writes during the reversed sync, on both shards of the new source.
    await writes(pair.destination, 'reversed');
    await Promise.all([one, two].map((each) => each.waitForProgress((p) => p.canCommit === true, 120_000)));
    for (const each of [one, two]) assert.equal((await each.post('commit', {})).status, 200);
    await Promise.all([one, two].map((each) => each.waitForProgress((p) => p.state === 'COMMITTED', 60_000)));
    assert.deepEqual(await collections(pair.source), await collections(pair.destination), 'after the reversed commit');
    const orders = await sortedDocs(pair.source, DB, 'orders');
    assert.ok(orders.some((doc) => doc._id === 'reversed-high') && !orders.some((doc) => doc.k === 130 && typeof doc._id === 'number'));
    for (const each of ferries.splice(0)) assert.equal(await each.stop(), 0);
    console.log(`multi-instance reverse round trip: ${((Date.now() - started) / 1000).toFixed(1)} s`);
  });
});
