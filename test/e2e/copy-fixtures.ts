/**
 * Source data for the copy's end-to-end tests, beyond what the generator writes: `_id`s of every
 * type mixed in one collection (MinKey and MaxKey included), documents near 16 MiB, an empty
 * collection, a capped collection past its limit, a collation, a validator with documents that
 * break it, every index kind and option, views (one on another), and namespaces a filter leaves
 * out. (Not a test file.)
 */
import { Binary, Decimal128, Double, Int32, Long, MaxKey, MinKey, ObjectId, UUID, type Document } from 'bson';
import { after, before } from 'node:test';
import { MongoClient, type Db, type InsertManyResult, type OptionalId } from 'mongodb';
import { compareClusters, temporaryIndexForm, type ClusterDifference } from '../../scripts/lib/compare-clusters.js';
import { temporaryCollectionOptions } from '../../src/plan/collection-options.js';
import { createNamespaceSelector } from '../../src/plan/namespaces.js';
import { startClusterPair, type ClusterPair } from '../helpers/clusters.js';
import { emptyDestination } from './ferry-process.js';
import type { ClusterOptions } from '../cluster/index.js';
import { METADATA_DATABASE } from '../../src/domain/namespaces.js';
import type { NamespaceFilter } from '../../src/domain/start-request.js';

/**
 * Inserts documents whose `_id`s are of any BSON type (the driver's typings only let an `_id`
 * be what the schema says, an ObjectId by default).
 */
export function insertDocuments(
  db: Db,
  coll: string,
  docs: object[],
  options: { bypassDocumentValidation?: boolean } = {},
): Promise<InsertManyResult> {
  return db.collection(coll).insertMany(docs as unknown as OptionalId<Document>[], { ordered: false, ...options });
}

/** Names carry the process id, so runs against a real deployment never meet an earlier run's data. */
export const RUN = String(process.pid);
export const EDGE_DB = `edge_${RUN}`;
export const OTHER_DB = `other_${RUN}`;
/** The generator's database prefix. */
export const GENERATED_PREFIX = `gen${RUN}_`;

/** `_id`s of every type an `_id` may hold, in turn. */
export function mixedId(i: number): unknown {
  switch (i % 11) {
    case 0:
      return new Int32(i);
    case 1:
      return Long.fromNumber(2 ** 40 + i);
    case 2:
      return new Double(i + 0.5);
    case 3:
      return Decimal128.fromString(`${i}.75`);
    case 4:
      return `key-${String(i).padStart(6, '0')}`;
    case 5:
      return new ObjectId();
    case 6:
      return new UUID();
    case 7:
      return { region: 'eu', seq: new Int32(i) };
    case 8:
      return new Date(1_700_000_000_000 + i);
    case 9:
      return new Binary(Buffer.from([i & 0xff, (i >> 8) & 0xff, 7]), 0);
    default:
      return i % 2 === 0;
  }
}

async function insertAll(db: Db, coll: string, docs: object[]): Promise<void> {
  for (let i = 0; i < docs.length; i += 500) await insertDocuments(db, coll, docs.slice(i, i + 500));
}

/** Fills `EDGE_DB` (and `OTHER_DB`, which the filters leave out) on the source. */
export async function writeEdgeCases(client: MongoClient): Promise<void> {
  const db = client.db(EDGE_DB);
  // Mixed types, two of them a boolean (only two distinct booleans exist), MinKey and MaxKey.
  const mixed: object[] = [];
  for (let i = 0; i < 1200; i++) {
    const _id = mixedId(i);
    if (typeof _id === 'boolean' && i > 21) continue;
    mixed.push({ _id, i: new Int32(i), text: 't'.repeat(2000), nested: { a: [1, 2, { b: null }] } });
  }
  mixed.push({ _id: new MinKey(), edge: 'min' }, { _id: new MaxKey(), edge: 'max' });
  await insertAll(db, 'mixed', mixed);

  // Documents near the 16 MiB limit between small ones.
  const big = (n: number) => ({ _id: new Int32(n), blob: new Binary(Buffer.alloc(16 * 1024 * 1024 - 200, n), 0) });
  await insertDocuments(db, 'big', [{ _id: new Int32(0), small: true }]);
  await insertDocuments(db, 'big', [big(1)]);
  await insertDocuments(db, 'big', [{ _id: new Int32(2), small: true }]);
  await insertDocuments(db, 'big', [big(3)]);

  await db.createCollection('empty');
  await db.collection('empty').createIndex({ never: 1 }, { name: 'never_1', unique: true });

  // Capped past its document limit: the oldest were evicted on the source.
  await db.createCollection('capped', { capped: true, size: 256 * 1024, max: 100 });
  for (let i = 0; i < 150; i++) await insertDocuments(db, 'capped', [{ _id: new Int32(i), line: `event ${i}` }]);

  await db.createCollection('collated', { collation: { locale: 'fr', strength: 2 } });
  await insertAll(
    db,
    'collated',
    ['Été', 'ete', 'Zoé', 'zoe', 'Émile', 'apple'].map((name, i) => ({ _id: `${name}-${i}`, name })),
  );
  await db.collection('collated').createIndex({ name: 1 }, { name: 'name_simple', collation: { locale: 'simple' } });

  await db.createCollection('validated', {
    validator: { $jsonSchema: { required: ['name'] } },
    validationLevel: 'strict',
    validationAction: 'error',
  });
  await insertDocuments(db, 'validated', [{ _id: new Int32(1), name: 'fine' }]);
  await insertDocuments(db, 'validated', [{ _id: new Int32(2), nameless: true }], { bypassDocumentValidation: true });

  const indexed = db.collection('indexed');
  await insertAll(
    db,
    'indexed',
    Array.from({ length: 300 }, (_, i) => ({
      _id: new Int32(i),
      email: `user${i}@example.com`,
      a: new Int32(i % 17),
      b: `b${i % 5}`,
      createdAt: new Date(1_700_000_000_000 + i * 1000),
      legacy: i,
      status: i % 3 === 0 ? 'open' : 'closed',
      ...(i % 4 === 0 ? { maybe: new Int32(i) } : {}),
      shard: `s${i}`,
      body: `lorem ipsum ${i} dolor`,
      location: { type: 'Point', coordinates: [(i % 360) - 180 + 0.5, (i % 180) - 90 + 0.25] },
      grid: [i % 100, (i * 7) % 100],
      attributes: { colour: i % 2 === 0 ? 'red' : 'blue', size: new Int32(i % 3) },
    })),
  );
  await indexed.createIndexes([
    { key: { email: 1 }, name: 'email_unique', unique: true },
    { key: { a: 1, b: -1 }, name: 'a_b' },
    { key: { createdAt: 1 }, name: 'created_ttl', expireAfterSeconds: 60 * 365 * 86_400 },
    { key: { legacy: 1 }, name: 'legacy_hidden', hidden: true },
    { key: { status: 1 }, name: 'open_partial', partialFilterExpression: { status: 'open' } },
    { key: { maybe: 1 }, name: 'maybe_sparse', sparse: true },
    { key: { shard: 'hashed' }, name: 'shard_hashed' },
    { key: { body: 'text' }, name: 'body_text', weights: { body: 3 }, default_language: 'english' },
    { key: { location: '2dsphere' }, name: 'location_2dsphere' },
    { key: { grid: '2d' }, name: 'grid_2d', min: -10, max: 110 },
    { key: { 'attributes.$**': 1 }, name: 'attributes_wildcard' },
    { key: { b: 1 }, name: 'b_unique_partial', unique: true, partialFilterExpression: { a: { $gt: 100 } } },
  ]);

  await db.createCollection('mixedView', { viewOn: 'mixed', pipeline: [{ $match: { i: { $gt: 10 } } }, { $project: { text: 0 } }] });
  await db.createCollection('viewOnView', { viewOn: 'mixedView', pipeline: [{ $limit: 5 }], collation: { locale: 'en' } });

  // Left out by the tests' filters.
  await insertDocuments(db, 'skipThis', [{ _id: 1, excluded: 'by collectionsRegex' }]);
  await insertDocuments(client.db(OTHER_DB), 'notIncluded', [{ _id: 1 }]);
}

/** The start request filters the tests use with this data and the generator's. */
export const EDGE_FILTERS = {
  includeNamespaces: [{ database: EDGE_DB }, { databaseRegex: { pattern: `^${GENERATED_PREFIX.toUpperCase()}`, options: 'i' } }],
  excludeNamespaces: [
    { database: EDGE_DB, collectionsRegex: { pattern: '^skip' } },
    { database: `${GENERATED_PREFIX}inventory`, collections: ['labels'] },
  ],
};

/** Drops the databases of a cluster that `drop` names. */
async function dropDatabases(client: MongoClient, drop: (name: string) => boolean): Promise<void> {
  const { databases } = await client.db('admin').command({ listDatabases: 1, nameOnly: true });
  for (const { name } of databases as { name: string }[]) if (drop(name)) await client.db(name).dropDatabase();
}

/** Drops this run's databases from a cluster. */
async function dropRunDatabases(client: MongoClient): Promise<void> {
  await dropDatabases(client, (name) => name.startsWith(GENERATED_PREFIX) || name.endsWith(`_${RUN}`));
}

/** Drops what this run wrote on a cluster: its databases and its instances' metadata. */
/** Drops what this run left on a cluster: its databases and its instances' metadata (for real deployments). */
export async function cleanUpRun(client: MongoClient, metadataDatabase: string): Promise<void> {
  await dropRunDatabases(client);
  const ours = { instance: { $regex: `-${RUN}$` } };
  const meta = client.db(metadataDatabase);
  const ourIds = { _id: { $regex: `-${RUN}$` } } as object;
  await Promise.all([
    meta.collection('partitions').deleteMany(ours),
    meta.collection('namespaces').deleteMany(ours),
    meta.collection('tombstones').deleteMany(ours),
    meta.collection('resume').deleteMany(ourIds),
    meta.collection('changeStream').deleteMany(ourIds),
    meta.collection('commit').deleteMany(ourIds),
    meta.collection('verification').deleteMany(ourIds),
    meta.collection('verificationPartitions').deleteMany(ours),
    meta.collection('verificationRechecks').deleteMany(ours),
    meta.collection('verificationCatalogRechecks').deleteMany(ours),
    meta.collection('verificationMismatches').deleteMany(ours),
  ]);
}

export interface TestClusters {
  pair: ClusterPair;
  /** A client on cluster0 (the source in these tests) and on cluster1. */
  source: MongoClient;
  destination: MongoClient;
  /**
   * How the destination differs from the source over the namespaces the filters select (empty
   * when equal). `midSync`: expect indexes and options in their temporary form (a sync not committed).
   */
  differences(include: NamespaceFilter[], exclude?: NamespaceFilter[], midSync?: boolean): Promise<ClusterDifference[]>;
  /**
   * Drops every database of the destination but the reserved ones (admin, local, config, Ferry's
   * metadata): like mongosync, Ferry starts only into a destination holding no namespace. Called
   * before each start of a sync.
   */
  emptyDestination(): Promise<void>;
}

/**
 * Writes `marker` into `db.<collection>` on the source and waits until change-event application has
 * put it on the destination: everything written before it is applied. `check` runs on every round
 * of the wait (to fail at once on, say, a paused sync).
 */
export async function waitForMarker(
  clusters: TestClusters,
  db: string,
  marker: Document,
  options: { collection?: string; timeoutMs?: number; check?: () => Promise<void> } = {},
): Promise<void> {
  const collection = options.collection ?? 'markers';
  await clusters.source
    .db(db)
    .collection(collection)
    .insertOne({ ...marker });
  const deadline = Date.now() + (options.timeoutMs ?? 60_000);
  for (;;) {
    await options.check?.();
    if ((await clusters.destination.db(db).collection(collection).countDocuments(marker)) === 1) return;
    if (Date.now() > deadline)
      throw new Error(`change-event application did not reach the marker ${JSON.stringify(marker)} in ${db}.${collection}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/**
 * Operations on a metadata collection of the destination (`ops` as mongod's profiler names them)
 * in 4 s windows, until one has at most `bound` (three windows at most: a sync may still be busy
 * with its last work). Read through the destination's database profiler.
 */
export async function quietWindows(destination: MongoClient, collection: string, ops: string[], bound: number): Promise<number[]> {
  const metadata = destination.db(METADATA_DATABASE);
  const filter = { ns: `${METADATA_DATABASE}.${collection}`, op: { $in: ops } };
  await metadata.command({ profile: 2, filter });
  try {
    const seen = () => metadata.collection('system.profile').countDocuments(filter);
    const windows: number[] = [];
    while (windows.length < 3 && !windows.some((count) => count <= bound)) {
      const first = await seen();
      await new Promise((resolve) => setTimeout(resolve, 4000));
      windows.push((await seen()) - first);
    }
    return windows;
  } finally {
    await metadata.command({ profile: 0 });
  }
}

/**
 * Registers the file's before/after hooks: a source/destination pair with a client on each, and
 * at the end this run's data and metadata dropped from both. The fields are set once `before` ran.
 * `options` are the test clusters' (fail points are always enabled; real deployments ignore them).
 * Each test empties the destination before it starts a sync (`emptyDestination`).
 */
export function useClusterPair(options: ClusterOptions = {}): TestClusters {
  const clusters = {} as TestClusters;
  clusters.differences = (include, exclude, midSync = false) =>
    compareClusters(clusters.pair.cluster0, clusters.pair.cluster1, {
      selector: createNamespaceSelector(include, exclude),
      ...(midSync ? { expectedIndex: temporaryIndexForm, expectedOptions: temporaryCollectionOptions } : {}),
    });
  before(async () => {
    clusters.pair = await startClusterPair({ enableTestCommands: true, ...options });
    clusters.source = await MongoClient.connect(clusters.pair.cluster0);
    clusters.destination = await MongoClient.connect(clusters.pair.cluster1);
  });
  clusters.emptyDestination = () => emptyDestination(clusters.pair.cluster1);
  after(async () => {
    const { pair, source, destination } = clusters;
    await Promise.allSettled([cleanUpRun(source, METADATA_DATABASE), cleanUpRun(destination, METADATA_DATABASE)]);
    await Promise.allSettled([source.close(), destination.close()]);
    await pair.stop();
  });
  return clusters;
}
