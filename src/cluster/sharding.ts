/**
 * What Ferry asks of a sharded cluster, through its mongos, with documented commands and the
 * documented `config` database only: the shards (`listShards`), the balancer (`balancerStatus`),
 * the sharded collections and their chunks (`config.collections`, `config.chunks`), each shard's
 * indexes of a collection (`$indexStats`), and the commands that shard a collection on the
 * destination and lay out its chunks (`enableSharding`, `shardCollection`, `split`, `moveRange`).
 * Every write waits for a majority; `config` is read at majority, type-faithfully (a chunk bound
 * is written back as a `split` or `moveRange` bound, byte for byte).
 */
import type { Binary, Document } from 'bson';
import type { MongoClient } from 'mongodb';
import { ConnectionString } from 'mongodb-connection-string-url';
import { compareBsonValues, TYPE_FAITHFUL } from '../bson/index.js';
import { namespaceOf, type Namespace } from '../domain/namespaces.js';
import { hello, topologyOf, type Topology } from './commands.js';
import { MAJORITY, MAJORITY_READ } from './concerns.js';
import { normalizeKeyPattern, type ShardKeyPattern } from './shard-key.js';

/** The kind of cluster behind a client (`hello`: a mongos, a replica set member, a standalone server). */
export async function clusterTopology(client: MongoClient): Promise<Topology> {
  return topologyOf(await hello(client));
}

/** One shard, as `listShards` gives it. */
export interface ShardDescription {
  /** The shard id (`shard01`). */
  id: string;
  /** Its replica set connection string, `shard01/host1:port,host2:port`. */
  host: string;
}

/** The cluster's shards, in `listShards` order (by id). */
export async function listShards(client: MongoClient): Promise<ShardDescription[]> {
  const reply = await client.db('admin').command({ listShards: 1 });
  return ((reply.shards ?? []) as { _id: string; host: string }[]).map((shard) => ({ id: String(shard._id), host: String(shard.host) }));
}

/** What `balancerStatus` says. */
export interface BalancerStatus {
  /** `full` (running), `off` (stopped) or, before 4.2, `autoSplitOnly`. */
  mode: string;
  /** A round (migrations) is under way right now. */
  inBalancerRound: boolean;
}

export async function balancerStatus(client: MongoClient): Promise<BalancerStatus> {
  const reply = await client.db('admin').command({ balancerStatus: 1 });
  return { mode: String(reply.mode), inBalancerRound: reply.inBalancerRound === true };
}

/** A sharded collection, from `config.collections`. */
export interface ShardedCollection {
  ns: string;
  key: ShardKeyPattern;
  /** Sharded with `unique: true`. */
  unique: boolean;
  /** The collection's UUID (5.0+; chunks name it). */
  uuid?: Binary;
  /** The balancer leaves the collection alone (`configureCollectionBalancing`/`noBalance`). */
  noBalance: boolean;
}

interface CollectionEntryDocument {
  _id: string;
  key: Document;
  unique?: boolean;
  uuid?: Binary;
  noBalance?: boolean;
}

/** The cluster's sharded collections by namespace (`config.system.sessions` and dropped ones left out). */
export async function shardedCollections(client: MongoClient): Promise<Map<string, ShardedCollection>> {
  const entries = (await client
    .db('config')
    .collection('collections')
    .find({ dropped: { $ne: true } }, { readConcern: MAJORITY_READ, ...TYPE_FAITHFUL })
    .toArray()) as unknown as CollectionEntryDocument[];
  const found = new Map<string, ShardedCollection>();
  for (const entry of entries) {
    const ns = String(entry._id);
    if (ns.startsWith('config.')) continue;
    const collection: ShardedCollection = {
      ns,
      key: normalizeKeyPattern(entry.key),
      unique: entry.unique === true,
      noBalance: entry.noBalance === true,
    };
    if (entry.uuid !== undefined) collection.uuid = entry.uuid;
    found.set(ns, collection);
  }
  return found;
}

/** The shard key of `ns` on the cluster of `client`, or undefined (unsharded, or not a sharded cluster). */
export async function shardKeyOf(client: MongoClient, ns: Namespace): Promise<ShardKeyPattern | undefined> {
  const entry = (await client
    .db('config')
    .collection('collections')
    .findOne({ _id: namespaceOf(ns), dropped: { $ne: true } } as Document, {
      readConcern: MAJORITY_READ,
      ...TYPE_FAITHFUL,
    })) as CollectionEntryDocument | null;
  return entry === null ? undefined : normalizeKeyPattern(entry.key);
}

/** One chunk: the range of shard-key values `[min, max)` and the shard that owns it. */
export interface ChunkRange {
  /** Key documents (every key field, in order; MinKey/MaxKey at the ends). */
  min: Document;
  max: Document;
  shard: string;
}

/** Orders key documents as mongod orders chunk bounds (field by field, canonical BSON order). */
export function compareKeyDocuments(a: Document, b: Document): number {
  const left = Object.values(a);
  const right = Object.values(b);
  for (let i = 0; i < Math.min(left.length, right.length); i++) {
    const order = compareBsonValues(left[i], right[i]);
    if (order !== 0) return order;
  }
  return left.length - right.length;
}

/** A collection's chunks in key order (by UUID since 5.0, by namespace before). */
export async function chunksOf(client: MongoClient, collection: Pick<ShardedCollection, 'ns' | 'uuid'>): Promise<ChunkRange[]> {
  const filter = collection.uuid !== undefined ? { uuid: collection.uuid } : { ns: collection.ns };
  const chunks = await client
    .db('config')
    .collection('chunks')
    .find(filter, { projection: { min: 1, max: 1, shard: 1 }, readConcern: MAJORITY_READ, ...TYPE_FAITHFUL })
    .toArray();
  return chunks
    .map((chunk) => ({ min: chunk.min as Document, max: chunk.max as Document, shard: String(chunk.shard) }))
    .sort((a, b) => compareKeyDocuments(a.min, b.min));
}

/** Makes a database shardable (needed before 6.0; harmless after). */
export async function enableSharding(client: MongoClient, db: string): Promise<void> {
  await client.db('admin').command({ enableSharding: db, writeConcern: MAJORITY });
}

/** Shards a collection with `key`; sharding it again with the same key is a no-op (mongod's rule). */
export async function shardCollection(client: MongoClient, ns: Namespace, key: ShardKeyPattern, options: Document = {}): Promise<void> {
  await client.db('admin').command({ shardCollection: namespaceOf(ns), key, ...options, writeConcern: MAJORITY });
}

/** Splits the chunk holding `middle` there (a key document). */
export async function splitChunkAt(client: MongoClient, ns: Namespace, middle: Document): Promise<void> {
  await client.db('admin').command({ split: namespaceOf(ns), middle, writeConcern: MAJORITY });
}

/** Moves the chunk `[min, max)` to `toShard` (`moveRange`, 6.0+), waiting until the donor has let go of it. */
export async function moveRange(
  client: MongoClient,
  ns: Namespace,
  range: { min: Document; max: Document },
  toShard: string,
): Promise<void> {
  await client.db('admin').command({ moveRange: namespaceOf(ns), min: range.min, max: range.max, toShard, writeConcern: MAJORITY });
}

/**
 * Each shard's index specifications of a collection (`$indexStats` through mongos: one entry per
 * index per shard, with `shard` and the whole `spec`, 4.4+), by shard id. A shard that does not
 * hold the collection is absent.
 */
export async function indexSpecsByShard(client: MongoClient, ns: Namespace): Promise<Map<string, Document[]>> {
  const byShard = new Map<string, Document[]>();
  const stats = await client
    .db(ns.db)
    .collection(ns.coll)
    .aggregate([{ $indexStats: {} }], TYPE_FAITHFUL)
    .toArray();
  for (const entry of stats) {
    const shard = String(entry.shard ?? '');
    const spec = (entry.spec ?? { name: entry.name, key: entry.key }) as Document;
    byShard.set(shard, [...(byShard.get(shard) ?? []), spec]);
  }
  return byShard;
}

/**
 * The connection string of one shard, read directly: the router's string (its credentials and
 * options kept) with the shard's own hosts and `replicaSet` from `listShards` (`shard01/h1:p,h2:p`).
 * A `mongodb+srv` router string becomes a plain one (the shard's hosts are not in DNS).
 */
export function shardUri(routerUri: string, shard: ShardDescription): string {
  const slash = shard.host.indexOf('/');
  const setName = slash < 0 ? undefined : shard.host.slice(0, slash);
  const hosts = (slash < 0 ? shard.host : shard.host.slice(slash + 1)).split(',').filter((host) => host.length > 0);
  const parsed = new ConnectionString(routerUri);
  const text = parsed.toString().replace(/^mongodb\+srv:/, 'mongodb:');
  const plain = new ConnectionString(text, { looseValidation: true });
  plain.hosts = hosts;
  if (parsed.isSRV) {
    plain.searchParams.delete('srvServiceName');
    plain.searchParams.delete('srvMaxHosts');
    if (!plain.searchParams.has('tls') && !plain.searchParams.has('ssl')) plain.searchParams.set('tls', 'true');
  }
  if (setName !== undefined) plain.searchParams.set('replicaSet', setName);
  else plain.searchParams.delete('replicaSet');
  plain.searchParams.delete('directConnection');
  return plain.toString();
}

/** Each database's primary shard (`config.databases`), by database name. */
export async function databasePrimaries(client: MongoClient): Promise<Map<string, string>> {
  const entries = await client
    .db('config')
    .collection('databases')
    .find({}, { projection: { _id: 1, primary: 1 }, readConcern: MAJORITY_READ })
    .toArray();
  return new Map(entries.map((entry) => [String(entry._id), String(entry.primary)]));
}
