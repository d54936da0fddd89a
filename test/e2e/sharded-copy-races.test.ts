/**
 * Races between the initial copy and the source, replica set → sharded destination (issue 12),
 * each made certain with `failCommand` fail points.
 *
 * A document whose shard-key value changes while the initial copy holds its older version:
 * the copy reads the document under key A, the
 * source moves it to key B (a chunk of the other shard), change-event application writes the
 * new version under B, and only then does the copy's insert of the old version land, on the shard
 * that owns A. No later event touches the document, so nothing but Ferry's own bookkeeping can
 * remove that old copy: after commit the destination must hold exactly one document, under B.
 *
 * The order is made certain with `failCommand` on the destination's shards: the copy's `insert`
 * into the collection is held there (change-event application writes with `update` and `delete`,
 * which go on) until the test has seen the new version on the destination.
 *
 * Rule 8 of the spec (§3): a rename of a listed collection before its copy starts (the copy's
 * read of it held on the source, `estimatedCopiedBytes` 0) ends with the collection under its new
 * name, whole, still sharded with its key; a rename into another database at that moment is
 * refused by name (UnsupportedRename), nothing of it applied.
 *
 * The source is a replica set, the destination a 2-shard test cluster, both with test commands on.
 * No real deployment: fail points are needed.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { MongoClient, type Document } from 'mongodb';
import { spawnCluster } from '../cluster/index.js';
import type { ShardedClusterHandle } from '../cluster/sharding/launch.js';
import { emptyDestination, startFerry, type FerryProcess } from './ferry-process.js';
import { METADATA_DATABASE } from '../../src/domain/namespaces.js';

const RUN = String(process.pid);
/** How long the copy's insert is held on each shard: far longer than applying one change event takes. */
const HOLD_MS = 15_000;

let sourceUri: string;
let sharded: ShardedClusterHandle;
let source: MongoClient;
let destination: MongoClient;
const stops: (() => Promise<void>)[] = [];

before(async () => {
  const [rs, cluster] = await Promise.all([
    spawnCluster({ enableTestCommands: true }),
    spawnCluster({ shards: 2, enableTestCommands: true }),
  ]);
  stops.push(
    () => rs.stop(),
    () => cluster.stop(),
  );
  sourceUri = rs.uri;
  sharded = cluster;
  source = new MongoClient(sourceUri);
  destination = new MongoClient(sharded.uri);
});

after(async () => {
  await source?.close();
  await destination?.close();
  await Promise.all(stops.map((stop) => stop()));
});

/** A client straight to one shard (not through mongos), by shard id. */
function shardClient(id: string): MongoClient {
  const shard = sharded.shards.find((s) => s.id === id);
  assert.ok(shard !== undefined, `shard ${id}`);
  return new MongoClient(shard.uri, { directConnection: true });
}

/** `{shard, min, max}` of each chunk of `ns`, in key order. */
async function chunks(ns: string): Promise<{ shard: string; min: Document; max: Document }[]> {
  const entry = await destination
    .db('config')
    .collection('collections')
    .findOne({ _id: ns } as Document);
  assert.ok(entry !== null, `${ns} is sharded on the destination`);
  const found = await destination
    .db('config')
    .collection('chunks')
    .find(entry.uuid !== undefined ? { uuid: entry.uuid } : { ns })
    .toArray();
  return found.map((c) => ({ shard: String(c.shard), min: c.min as Document, max: c.max as Document }));
}

function inChunk(k: number, chunk: { min: Document; max: Document }): boolean {
  const above = typeof chunk.min.k !== 'number' || chunk.min.k <= k;
  const below = typeof chunk.max.k !== 'number' || k < chunk.max.k;
  return above && below;
}

describe('a shard-key change during the copy', () => {
  it('leaves one document, under the new key, when the copy writes the old version after the change was applied', async () => {
    const db = `keychange_${RUN}`;
    const coll = 'moves';
    const ns = `${db}.${coll}`;
    await source
      .db(db)
      .collection(coll)
      .insertMany(Array.from({ length: 400 }, (_, i) => ({ _id: i, k: 1000 + i, pad: 'p'.repeat(100) })) as never[]);
    await emptyDestination(sharded.uri);
    const hold = { failCommands: ['insert'], namespace: ns, blockConnection: true, blockTimeMS: HOLD_MS };
    const shards = sharded.shards.map((s) => shardClient(s.id));
    const ferry = await startFerry(['--cluster0', sourceUri, '--cluster1', sharded.uri]);
    try {
      for (const shard of shards) await shard.db('admin').command({ configureFailPoint: 'failCommand', mode: { times: 1 }, data: hold });
      const started = await ferry.post('start', {
        source: 'cluster0',
        destination: 'cluster1',
        includeNamespaces: [{ database: db }],
        sharding: {
          createSupportingIndexes: true,
          shardingEntries: [{ database: db, collection: coll, shardCollection: { key: [{ k: 1 }] } }],
        },
      });
      assert.equal(started.status, 200, JSON.stringify(started.body));

      // The copy has read every document (one batch) and its inserts wait on both shards.
      for (const shard of shards) await shard.db('admin').command({ waitForFailPoint: 'failCommand', timesEntered: 1, maxTimeMS: 60_000 });
      const layout = await chunks(ns);
      const owner = layout.find((chunk) => inChunk(1000, chunk))!.shard;
      const other = layout.find((chunk) => chunk.shard !== owner && typeof chunk.min.k === 'number');
      assert.ok(other !== undefined, `a chunk of the other shard: ${JSON.stringify(layout)}`);
      const moved = other.min.k as number;

      // Key A (1000, owner's chunk) → key B (the other shard's chunk), after the copy read A.
      await source
        .db(db)
        .collection(coll)
        .updateOne({ _id: 0 } as Document, { $set: { k: moved } });
      const deadline = Date.now() + HOLD_MS;
      while (
        (await destination
          .db(db)
          .collection(coll)
          .countDocuments({ _id: 0, k: moved } as Document)) === 0
      ) {
        assert.ok(Date.now() < deadline, 'change-event application wrote the new version while the copy was held');
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      const ownerShard = shards[sharded.shards.findIndex((s) => s.id === owner)]!;
      assert.equal(
        await ownerShard
          .db(db)
          .collection(coll)
          .countDocuments({ _id: 0 } as Document),
        0,
        "the copy's old version has not landed yet: the race is the one this test is about",
      );

      await ferry.waitForProgress((p) => p.canCommit === true, 120_000);
      assert.equal((await ferry.post('commit', {})).status, 200);
      await ferry.waitForProgress((p) => p.state === 'COMMITTED', 120_000);
    } finally {
      for (const shard of shards) {
        await shard
          .db('admin')
          .command({ configureFailPoint: 'failCommand', mode: 'off' })
          .catch(() => undefined);
        await shard.close();
      }
      assert.equal(await ferry.stop(), 0);
    }
    const copies = await destination
      .db(db)
      .collection(coll)
      .find({ _id: 0 } as Document)
      .toArray();
    assert.deepEqual(
      copies.map((doc) => doc.k),
      [
        (await source
          .db(db)
          .collection(coll)
          .findOne({ _id: 0 } as Document))!.k,
      ],
      'exactly one copy of the document, under its new key',
    );
    assert.equal(await destination.db(db).collection(coll).countDocuments(), 400, 'no document lost or doubled');
  });
});

/**
 * A sync of `db` (and `alsoInclude`) with `db.listed` sharded on `k`, the copy's first read of it
 * held on the source (`find` of the copy workers, `ferry-copy`) for `HOLD_MS`; resolves once held.
 */
async function startWithCopyHeld(db: string, alsoInclude: string[] = []): Promise<FerryProcess> {
  await source
    .db(db)
    .collection('listed')
    .insertMany(Array.from({ length: 300 }, (_, i) => ({ _id: i, k: i, pad: 'p'.repeat(100) })) as never[]);
  await emptyDestination(sharded.uri);
  await destination.db(METADATA_DATABASE).dropDatabase();
  const admin = source.db('admin');
  const { count } = await admin.command({
    configureFailPoint: 'failCommand',
    mode: { times: 1 },
    data: { failCommands: ['find'], namespace: `${db}.listed`, appName: 'ferry-copy', blockConnection: true, blockTimeMS: HOLD_MS },
  });
  const ferry = await startFerry(['--cluster0', sourceUri, '--cluster1', sharded.uri]);
  const started = await ferry.post('start', {
    source: 'cluster0',
    destination: 'cluster1',
    includeNamespaces: [db, ...alsoInclude].map((database) => ({ database })),
    sharding: {
      createSupportingIndexes: true,
      shardingEntries: [{ database: db, collection: 'listed', shardCollection: { key: [{ k: 1 }] } }],
    },
  });
  assert.equal(started.status, 200, JSON.stringify(started.body));
  await admin.command({ waitForFailPoint: 'failCommand', timesEntered: Number(count) + 1, maxTimeMS: 60_000 });
  // Other collections (one-document ones run beside it) may be copied meanwhile; this one's is not.
  assert.equal(
    await destination.db(db).collection('listed').countDocuments(),
    0,
    'the copy of the listed collection has not started: the moment rule 8 is about',
  );
  return ferry;
}

async function shardKeyOf(ns: string): Promise<Document | undefined> {
  const entry = await destination
    .db('config')
    .collection('collections')
    .findOne({ _id: ns } as Document);
  return entry?.key as Document | undefined;
}

describe('rule 8: a rename of a listed collection before its copy starts', () => {
  it('within its database: the collection ends under its new name, whole, sharded with its key', async () => {
    const db = `renamebefore_${RUN}`;
    const ferry = await startWithCopyHeld(db);
    try {
      await source.db('admin').command({ renameCollection: `${db}.listed`, to: `${db}.renamed` });
      await source
        .db(db)
        .collection('renamed')
        .updateOne({ _id: 7 } as Document, { $set: { k: 1000, after: true } });
      const ready = await ferry.waitForProgress((p) => p.canCommit === true || p.state === 'PAUSED', 120_000);
      assert.equal(ready.state, 'RUNNING', JSON.stringify(ready.warnings));
      assert.equal((await ferry.post('commit', {})).status, 200);
      await ferry.waitForProgress((p) => p.state === 'COMMITTED', 120_000);
    } finally {
      await source
        .db('admin')
        .command({ configureFailPoint: 'failCommand', mode: 'off' })
        .catch(() => undefined);
      assert.equal(await ferry.stop(), 0);
    }
    const names = (await destination.db(db).listCollections().toArray()).map((c) => c.name).sort();
    assert.deepEqual(names, ['renamed'], 'the old name is gone');
    const copied = await destination.db(db).collection('renamed').find().sort({ _id: 1 }).toArray();
    assert.deepEqual(copied, await source.db(db).collection('renamed').find().sort({ _id: 1 }).toArray());
    assert.deepEqual(await shardKeyOf(`${db}.renamed`), { k: 1 }, 'still sharded with its key');
  });

  it('into another database: refused by name, nothing of the rename applied', async () => {
    const db = `renamefromcopy_${RUN}`;
    const target = `renametocopy_${RUN}`;
    await source
      .db(target)
      .collection('other')
      .insertOne({ _id: 1 } as Document);
    const ferry = await startWithCopyHeld(db, [target]);
    try {
      await source.db('admin').command({ renameCollection: `${db}.listed`, to: `${target}.moved` });
      const paused = await ferry.waitForProgress((p) => p.state === 'PAUSED', 120_000);
      const warning = (paused.warnings as string[]).find((w) => w.includes('UnsupportedRename'));
      assert.ok(warning !== undefined, JSON.stringify(paused.warnings));
      assert.match(warning, /renameCollection across databases/);
      assert.equal(paused.canCommit, false);
    } finally {
      await source
        .db('admin')
        .command({ configureFailPoint: 'failCommand', mode: 'off' })
        .catch(() => undefined);
      assert.equal(await ferry.stop(), 0);
    }
    const inTarget = (await destination.db(target).listCollections().toArray()).map((c) => c.name);
    assert.deepEqual(inTarget, ['other'], 'nothing of the rename in the target database');
    const inSource = (await destination.db(db).listCollections().toArray()).map((c) => c.name);
    assert.deepEqual(inSource, ['listed'], 'the listed collection is not dropped');
    assert.deepEqual(await shardKeyOf(`${db}.listed`), { k: 1 }, 'and still sharded');
  });
});
