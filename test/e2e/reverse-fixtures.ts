/**
 * What the reverse tests share: a pair of test clusters of their own (a reversible sync covers
 * whole clusters: it cannot be filtered), started with users so that write blocking shows (Ferry
 * connects as `root`, which bypasses it; the application as a `readWriteAnyDatabase` user); data
 * with every characteristic a sync holds in temporary form; probes of write blocking and of the
 * temporary forms; and a snapshot of a whole cluster to show that a refused request changed
 * nothing. (Not a test file.)
 */
import assert from 'node:assert/strict';
import type { Document } from 'bson';
import { EJSON } from 'bson';
import { MongoClient, MongoServerError } from 'mongodb';
import { spawnCluster, type ClusterHandle, type ClusterOptions } from '../cluster/index.js';
import { compareClusters, type ClusterDifference } from '../../scripts/lib/compare-clusters.js';
import { METADATA_DATABASE } from '../../src/domain/namespaces.js';
import { RUN } from './copy-fixtures.js';
import { seed } from './cea-workload.js';
import { startFerry, type FerryProcess } from './ferry-process.js';

export const USERS = [
  { user: 'ferry', password: 'ferry-pw', roles: ['root'] },
  { user: 'app', password: 'app-pw', roles: ['readWriteAnyDatabase'] },
];

/** The start request of a reversible sync from cluster0 to cluster1. */
export const REVERSIBLE = { source: 'cluster0', destination: 'cluster1', reversible: true, enableUserWriteBlocking: true };

/** Reverse needs whole clusters of its own, with users: not something a real deployment pair gives a test. */
export const local = !(process.env.FERRY_TEST_CLUSTER0_URI && process.env.FERRY_TEST_CLUSTER1_URI);

export function as(uri: string, user: string, password: string): string {
  const url = new URL(uri);
  url.username = user;
  url.password = password;
  return url.toString();
}

/** Two clusters, each reached as Ferry (`root`) and as the application. */
export interface ReversePair {
  cluster: [ClusterHandle, ClusterHandle];
  /** Ferry's user on each. */
  root: [MongoClient, MongoClient];
  /** The application's user on each. */
  app: [MongoClient, MongoClient];
  uri(index: 0 | 1, user?: 'ferry' | 'app'): string;
  ferry(id: string, env?: Record<string, string>): Promise<FerryProcess>;
  close(): Promise<void>;
}

export async function startReversePair(options: ClusterOptions = {}): Promise<ReversePair> {
  const cluster = (await Promise.all([spawnCluster({ users: USERS, ...options }), spawnCluster({ users: USERS, ...options })])) as [
    ClusterHandle,
    ClusterHandle,
  ];
  const uri = (index: 0 | 1, user: 'ferry' | 'app' = 'ferry') => as(cluster[index].uri, user, `${user}-pw`);
  const root = (await Promise.all([MongoClient.connect(uri(0)), MongoClient.connect(uri(1))])) as [MongoClient, MongoClient];
  const app = (await Promise.all([MongoClient.connect(uri(0, 'app')), MongoClient.connect(uri(1, 'app'))])) as [MongoClient, MongoClient];
  return {
    cluster,
    root,
    app,
    uri,
    ferry: (id, env = {}) => startFerry(['--cluster0', uri(0), '--cluster1', uri(1), '--id', `${id}-${RUN}`], env),
    close: async () => {
      await Promise.allSettled([...root, ...app].map((client) => client.close()));
      await Promise.allSettled(cluster.map((each) => each.stop()));
    },
  };
}

/**
 * Whether the application's write to `client` is refused with UserWritesBlocked: it inserts a
 * document into `db.probe` and, when that is accepted, deletes it again (a sync carries both).
 */
export async function writesBlocked(client: MongoClient, db: string): Promise<boolean> {
  const probe = client.db(db).collection('probe');
  const _id = `probe-${RUN}-${Math.random()}`;
  try {
    await probe.insertOne({ _id } as Document);
  } catch (error) {
    if (error instanceof MongoServerError && (error.code === 371 || error.codeName === 'UserWritesBlocked')) return true;
    throw error;
  }
  await probe.deleteOne({ _id } as Document);
  return false;
}

/** Whether `client`'s cluster blocks user writes now (`serverStatus.repl.userWriteBlockMode`: 2 enabled), without writing. */
export async function blockMode(client: MongoClient): Promise<boolean> {
  const status = await client.db('admin').command({ serverStatus: 1 });
  return Number(status.repl?.userWriteBlockMode) === 2;
}

/** Asserts which of the two clusters refuse the application's writes. */
export async function assertBlocked(pair: ReversePair, db: string, blocked: [boolean, boolean], when: string): Promise<void> {
  assert.deepEqual([await writesBlocked(pair.app[0], db), await writesBlocked(pair.app[1], db)], blocked, `write blocking ${when}`);
}

/**
 * The data of a reversible sync's tests, in `db` on `client`: the change-event workload's
 * collections (c0 to c3, which it changes, drops and renames), and beside them, untouched by it,
 * `kept` with a unique, a `prepareUnique`, a TTL and a hidden index, a capped collection with a
 * document limit (`log`), a clustered collection with its own TTL (`events`), a view and `probe`
 * (writesBlocked's).
 */
export async function seedReversible(client: MongoClient, db: string): Promise<void> {
  await seed(client, db, 40);
  const database = client.db(db);
  await database.createCollection('probe');
  await database
    .collection('kept')
    .insertMany(Array.from({ length: 20 }, (_, i) => ({ _id: i, email: `k${i}@example.com`, at: new Date(), rank: i })) as Document[]);
  await database
    .collection('kept')
    .createIndexes([
      { key: { email: 1 }, name: 'email_unique', unique: true },
      { key: { rank: -1 }, name: 'rank_prepared', prepareUnique: true } as never,
      { key: { at: 1 }, name: 'at_ttl', expireAfterSeconds: 30 * 86_400 },
      { key: { rank: 1 }, name: 'rank_hidden', hidden: true },
    ]);
  await database.createCollection('log', { capped: true, size: 64 * 1024, max: 30 });
  for (let i = 0; i < 10; i++) await database.collection('log').insertOne({ _id: i, line: `line ${i}` } as Document);
  await database.createCollection('events', { clusteredIndex: { key: { _id: 1 }, unique: true }, expireAfterSeconds: 365 * 86_400 });
  await database
    .collection('events')
    .insertMany(Array.from({ length: 5 }, (_, i) => ({ _id: new Date(Date.now() - i * 1000), i })) as unknown as Document[]);
  await database.createCollection('recent', { viewOn: 'c0', pipeline: [{ $match: { b: 1 } }] });
}

/** Indexes of `db.coll` by name. */
export async function indexesOf(client: MongoClient, db: string, coll: string): Promise<Record<string, Document>> {
  return Object.fromEntries((await client.db(db).collection(coll).listIndexes().toArray()).map((index) => [index.name, index]));
}

/** The `listCollections` options of `db.coll`. */
export async function optionsOf(client: MongoClient, db: string, coll: string): Promise<Document> {
  const [entry] = (await client.db(db).listCollections({ name: coll }, { nameOnly: false }).toArray()) as { options?: Document }[];
  return entry?.options ?? {};
}

/**
 * Asserts that `client` holds every characteristic of `db` in the temporary form a sync's
 * destination holds it in: no index unique, `prepareUnique` or hidden, every TTL index at
 * 2147483647, every capped collection at the largest size without a document limit, no
 * collection-level TTL; and that `kept`, `log` and `events` (seedReversible's) are there to say so.
 */
export async function assertTemporaryForms(client: MongoClient, db: string): Promise<void> {
  const kept = await indexesOf(client, db, 'kept');
  assert.deepEqual(Object.keys(kept).sort(), ['_id_', 'at_ttl', 'email_unique', 'rank_hidden', 'rank_prepared']);
  for (const info of await client.db(db).listCollections({ type: 'collection' }, { nameOnly: false }).toArray()) {
    const ns = `${db}.${info.name}`;
    const options = (info as { options?: Document }).options ?? {};
    assert.equal(options.expireAfterSeconds, undefined, `${ns}: no collection TTL`);
    if (options.capped === true) {
      assert.equal(Number(options.size), 1024 ** 5, `${ns}: capped at the largest size`);
      const max = Number(options.max ?? 0);
      assert.ok(max <= 0 || max >= 0x7fffffff, `${ns}: no document limit (${options.max})`);
    }
    for (const index of Object.values(await indexesOf(client, db, info.name))) {
      if (index.name === '_id_') continue;
      const where = `${ns} index ${index.name}`;
      assert.equal(index.unique, undefined, `${where}: non-unique`);
      assert.equal(index.prepareUnique, undefined, `${where}: no prepareUnique`);
      assert.equal(index.hidden, undefined, `${where}: visible`);
      if (index.expireAfterSeconds !== undefined) assert.equal(index.expireAfterSeconds, 2147483647, `${where}: TTL off`);
    }
  }
  assert.equal(kept.at_ttl!.expireAfterSeconds, 2147483647);
  assert.equal((await optionsOf(client, db, 'log')).capped, true);
  assert.equal((await optionsOf(client, db, 'events')).clusteredIndex !== undefined, true);
}

/** Differences between the two clusters' user data (documents, options, indexes), none when equal. */
export function differences(pair: ReversePair): Promise<ClusterDifference[]> {
  return compareClusters(pair.uri(0), pair.uri(1));
}

/**
 * Everything a cluster holds, Ferry's metadata included, and whether it blocks user writes: each
 * collection's options, indexes and documents, as canonical text. Two equal snapshots mean
 * nothing was written in between (a lease renewed meanwhile aside). `skip` leaves namespaces out (a
 * running sync's checkpoints).
 */
export async function snapshot(client: MongoClient, skip: readonly string[] = []): Promise<string> {
  const { databases } = await client.db('admin').command({ listDatabases: 1, nameOnly: true });
  const names = (databases as { name: string }[]).map((d) => d.name).filter((name) => !['admin', 'config', 'local'].includes(name));
  const parts: Document = { userWritesBlocked: await blockMode(client) };
  for (const db of names.sort()) {
    const collections = await client.db(db).listCollections({}, { nameOnly: false }).toArray();
    for (const info of collections.sort((a, b) => (a.name < b.name ? -1 : 1))) {
      const ns = `${db}.${info.name}`;
      if (skip.includes(ns) || info.name.startsWith('system.')) continue; // system.views: the views' options say it
      const { uuid: _uuid, ...rest } = (info as Document).info ?? {};
      parts[ns] = { options: (info as Document).options, info: rest };
      if ((info as Document).type === 'view') continue;
      const collection = client.db(db).collection(info.name);
      parts[ns].indexes = await collection.listIndexes().toArray();
      parts[ns].documents = await collection.find({}, { sort: { _id: 1 } }).toArray();
      // A lease's renewal is its live holder's heartbeat, not a write: who holds it, and its epoch, still count.
      if (ns === `${METADATA_DATABASE}.leases`) {
        parts[ns].documents = (parts[ns].documents as Document[]).map(({ renewedAt: _r, expiresAt: _e, ...lease }) => lease);
      }
    }
  }
  return EJSON.stringify(parts, { relaxed: false });
}

/** Snapshots of both clusters (see `snapshot`). */
export function snapshots(pair: ReversePair, skip: readonly string[] = []): Promise<string[]> {
  return Promise.all(pair.root.map((client) => snapshot(client, skip)));
}

/** The metadata documents of collection `name` on `client` (Ferry's database). */
export function metadata(client: MongoClient, name: string): Promise<Document[]> {
  return client.db(METADATA_DATABASE).collection(name).find({}).toArray();
}
