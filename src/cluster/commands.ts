/**
 * The commands Ferry issues to a cluster, each with its reply checked and typed: the time of an
 * oplog note, write blocking and the privileges it needs, `hello`, the catalog (databases,
 * collections, indexes), and the DDL Ferry applies to the destination (create, indexes, `collMod`,
 * drop, rename). Every write waits for a majority (concerns.ts); every catalog read is
 * type-faithful (an Int32 in a validator or key pattern stays an Int32).
 *
 * The commands a running sync issues (oplog notes, write blocking, catalog reads, the DDL Ferry
 * applies) are each idempotent, and are sent again after a passing failure (a failover, a
 * dropped connection) under the one retry policy (retry.ts): a command that did run before its
 * reply was lost finds its work done (NamespaceExists, NamespaceNotFound, IndexNotFound, an index
 * that exists are all taken as done). The driver retries none of the commands, and a catalog
 * read at most once. Preflight's (`hello`, `listDatabases`, `connectionStatus`) are not retried:
 * a start request answers at once with what the cluster said; planning retries `listDatabases`.
 */
import type { Binary, Document, Timestamp } from 'bson';
import type { Db, MongoClient } from 'mongodb';
import { TYPE_FAITHFUL } from '../bson/index.js';
import { nameCluster } from '../domain/clusters.js';
import { namespaceOf, type Namespace } from '../domain/namespaces.js';
import { WRITE_BLOCKING_PRIVILEGES } from '../domain/start-request.js';
import { OperationTimeMissing } from '../errors/errors.js';
import { MAJORITY } from './concerns.js';
import type { Cluster } from './connect.js';
import { isHistoryLost, isIndexNotFound, isNamespaceNotFound } from './errors.js';
import { retryTransient } from './retry.js';

/** Runs a command of a running sync on `db`, again after a passing failure (see the module comment). */
function runIdempotent(db: Db, command: Document): Promise<Document> {
  return retryTransient(() => db.command(command));
}

/**
 * Writes a no-op entry in the source's oplog (`appendOplogNote`) and returns its time, the reply's
 * `operationTime`: every write acknowledged before it is before that time. `purpose` says which
 * point it is (`the start time`, `the commit point`...); it is written into the note. A reply
 * without the time (a standalone server) is OperationTimeMissing.
 */
export async function appendOplogNote(cluster: Cluster, purpose: string, instance: string): Promise<Timestamp> {
  const reply = await runIdempotent(cluster.client.db('admin'), { appendOplogNote: 1, data: { ferry: purpose, instance } });
  const time = reply.operationTime as Timestamp | undefined;
  if (reply.ok !== 1 || time?._bsontype !== 'Timestamp') {
    throw new OperationTimeMissing({ cluster: nameCluster(cluster.endpoint), purpose });
  }
  return time;
}

/** Turns user write blocking on or off on a whole cluster (`setUserWriteBlockMode`, MongoDB 6.0+). Idempotent. */
export async function setUserWriteBlocking(client: MongoClient, on: boolean): Promise<void> {
  await runIdempotent(client.db('admin'), { setUserWriteBlockMode: 1, global: on, writeConcern: MAJORITY });
}

interface Privilege {
  resource?: { cluster?: boolean };
  actions?: string[];
}

/**
 * The privileges write blocking needs that the connection's user lacks (none when the cluster
 * runs without access control, where every client bypasses). Needs `connectionStatus`, which
 * every authenticated user may run.
 */
export async function missingWriteBlockingPrivileges(client: MongoClient): Promise<string[]> {
  const status = await client.db('admin').command({ connectionStatus: 1, showPrivileges: true });
  const info = (status.authInfo ?? {}) as { authenticatedUsers?: unknown[]; authenticatedUserPrivileges?: Privilege[] };
  if ((info.authenticatedUsers ?? []).length === 0) return [];
  const clusterActions = new Set(
    (info.authenticatedUserPrivileges ?? []).filter((p) => p.resource?.cluster === true).flatMap((p) => p.actions ?? []),
  );
  return WRITE_BLOCKING_PRIVILEGES.filter((action) => !clusterActions.has(action));
}

/**
 * Whether the cluster's change stream can still start at `time` (its oplog holds it): opens a
 * cluster-wide change stream there with an empty first batch, then closes it (ending its session
 * kills the cursor). False on ChangeStreamHistoryLost; any other failure is thrown.
 */
export async function changeStreamReaches(client: MongoClient, time: Timestamp): Promise<boolean> {
  const session = client.startSession();
  try {
    const reply = await client.db('admin').command(
      {
        aggregate: 1,
        pipeline: [{ $changeStream: { startAtOperationTime: time, allChangesForCluster: true } }],
        cursor: { batchSize: 0 },
      },
      { session },
    );
    const id = (reply.cursor as { id?: { isZero?: () => boolean } } | undefined)?.id;
    if (id?.isZero?.() === false) await client.db('admin').command({ killCursors: '$cmd.aggregate', cursors: [id] }, { session });
    return true;
  } catch (error) {
    if (isHistoryLost(error)) return false;
    throw error;
  } finally {
    await session.endSession().catch(() => undefined);
  }
}

/** The cluster's MongoDB version as `buildInfo` gives it (`versionArray`: major, minor, patch). */
export async function serverVersion(client: MongoClient): Promise<number[]> {
  const reply = await client.db('admin').command({ buildInfo: 1 });
  const parts = Array.isArray(reply.versionArray) ? reply.versionArray : String(reply.version ?? '').split('.');
  return parts.map(Number);
}

/** How many shards a sharded cluster has (`listShards`, run on a mongos). */
export async function shardCount(client: MongoClient): Promise<number> {
  const reply = await client.db('admin').command({ listShards: 1 });
  return Array.isArray(reply.shards) ? reply.shards.length : 0;
}

/** What Ferry reads of a `hello` reply. */
export interface HelloReply {
  /** `isdbgrid` from a mongos. */
  msg?: string;
  /** The replica set's name, from a member. */
  setName?: string;
  /** The replica set's members as its configuration names them (the same through any member or any name of it). */
  hosts?: string[];
  /** The answering server process (`topologyVersion.processId`, hex): the same only for the same process. */
  processId?: string;
  maxMessageSizeBytes?: number;
  maxWriteBatchSize?: number;
  /** The largest document the server stores. */
  maxBsonObjectSize?: number;
}

export type Topology = 'replicaSet' | 'sharded' | 'standalone';

export async function hello(client: MongoClient): Promise<HelloReply> {
  const reply = await client.db('admin').command({ hello: 1 });
  const typed: HelloReply = {};
  if (typeof reply.msg === 'string') typed.msg = reply.msg;
  if (typeof reply.setName === 'string') typed.setName = reply.setName;
  if (Array.isArray(reply.hosts)) typed.hosts = reply.hosts.map(String);
  const processId = (reply.topologyVersion as { processId?: { toHexString?: () => string } } | undefined)?.processId;
  if (typeof processId?.toHexString === 'function') typed.processId = processId.toHexString();
  if (typeof reply.maxMessageSizeBytes === 'number') typed.maxMessageSizeBytes = reply.maxMessageSizeBytes;
  if (typeof reply.maxWriteBatchSize === 'number') typed.maxWriteBatchSize = reply.maxWriteBatchSize;
  if (typeof reply.maxBsonObjectSize === 'number') typed.maxBsonObjectSize = reply.maxBsonObjectSize;
  return typed;
}

/** The kind of cluster a `hello` reply comes from: `msg: "isdbgrid"` is a mongos, `setName` a replica set member. */
export function topologyOf(reply: HelloReply): Topology {
  if (reply.msg === 'isdbgrid') return 'sharded';
  if (typeof reply.setName === 'string') return 'replicaSet';
  return 'standalone';
}

/**
 * Whether two `hello` replies come from the same cluster, by what the cluster says of itself (never
 * by the connection strings, which can name one cluster in many ways): the same server process,
 * or the same replica set (same name, and members in common: two sets may share a name, not a
 * member). Two mongos routers of one sharded cluster answer neither: `clusterId` tells them apart.
 */
export function sameCluster(a: HelloReply, b: HelloReply): boolean {
  if (a.processId !== undefined && a.processId === b.processId) return true;
  if (a.setName === undefined || a.setName !== b.setName) return false;
  const members = new Set(a.hosts ?? []);
  return (b.hosts ?? []).some((host) => members.has(host));
}

/**
 * A sharded cluster's id (`config.version`'s `clusterId`, set when the cluster was created), or
 * undefined when it cannot be read (not a sharded cluster, or not allowed).
 */
export async function shardedClusterId(client: MongoClient): Promise<string | undefined> {
  try {
    const version = await client.db('config').collection('version').findOne({});
    const id = version?.clusterId as { toHexString?: () => string } | undefined;
    return typeof id?.toHexString === 'function' ? id.toHexString() : undefined;
  } catch {
    return undefined;
  }
}

/** Names of the cluster's databases. */
export async function listDatabaseNames(client: MongoClient): Promise<string[]> {
  const { databases } = await client.db('admin').command({ listDatabases: 1, nameOnly: true });
  return (databases as { name: string }[]).map((d) => d.name);
}

/** One `listCollections` entry. */
export interface CollectionEntry {
  name: string;
  /** `collection`, `view` or `timeseries`. */
  type: string;
  options: Document;
  /** The collection's UUID (`info.uuid`; absent for views). */
  uuid?: Binary;
}

/** `listCollections` of a database (all, or the one named `name`), type-faithful, in the server's order. */
export async function listCollectionEntries(db: Db, name?: string): Promise<CollectionEntry[]> {
  const entries = await retryTransient(() =>
    db.listCollections(name === undefined ? {} : { name }, { nameOnly: false, ...TYPE_FAITHFUL }).toArray(),
  );
  return entries.map(toCollectionEntry);
}

function toCollectionEntry(entry: Document): CollectionEntry {
  const raw = entry as { name: string; type?: string; options?: Document; info?: { uuid?: Binary } };
  const typed: CollectionEntry = { name: raw.name, type: raw.type ?? 'collection', options: raw.options ?? {} };
  if (raw.info?.uuid !== undefined) typed.uuid = raw.info.uuid;
  return typed;
}

/** A catalog read and the cluster's time of it: the newest `operationTime` of its replies (absent from a standalone server). */
export interface TimedRead<T> {
  value: T;
  time?: Timestamp;
}

/**
 * Runs a cursor command of the catalog (`listCollections`, `listIndexes`) to its end, in one
 * session (a cursor is continued in the session that opened it), type-faithfully, keeping the
 * newest `operationTime` of its replies. Reads only: nothing is written to get the time.
 */
async function readCatalogCursor(client: MongoClient, db: string, command: Document): Promise<TimedRead<Document[]>> {
  const session = client.startSession({ causalConsistency: false });
  const read: TimedRead<Document[]> = { value: [] };
  const take = (reply: Document, batch: 'firstBatch' | 'nextBatch') => {
    const time = reply.operationTime as Timestamp | undefined;
    if (time?._bsontype === 'Timestamp' && (read.time === undefined || time.greaterThan(read.time))) read.time = time;
    const cursor = reply.cursor as { id?: unknown; ns?: string } & Record<typeof batch, Document[] | undefined>;
    read.value.push(...(cursor[batch] ?? []));
    return cursor;
  };
  try {
    let cursor = take(await client.db(db).command(command, { session, ...TYPE_FAITHFUL }), 'firstBatch');
    while (cursor.id !== undefined && !isZeroCursorId(cursor.id)) {
      const collection = String(cursor.ns ?? '').slice(db.length + 1);
      cursor = take(await client.db(db).command({ getMore: cursor.id, collection }, { session, ...TYPE_FAITHFUL }), 'nextBatch');
    }
    return read;
  } finally {
    await session.endSession().catch(() => undefined);
  }
}

function isZeroCursorId(id: unknown): boolean {
  const long = id as { isZero?: () => boolean };
  return typeof long.isZero === 'function' ? long.isZero() : Number(id) === 0;
}

/** The `listCollections` entry of one namespace (undefined when there is none), with the time of the read. */
export async function collectionEntryAt(client: MongoClient, ns: Namespace): Promise<TimedRead<CollectionEntry | undefined>> {
  const read = await readCatalogCursor(client, ns.db, { listCollections: 1, filter: { name: ns.coll }, nameOnly: false, cursor: {} });
  const [entry] = read.value;
  return { value: entry === undefined ? undefined : toCollectionEntry(entry), ...(read.time === undefined ? {} : { time: read.time }) };
}

/** `listCollections` of a whole database, with the time of the read (one read for many namespaces' checks). */
export async function listCollectionEntriesAt(client: MongoClient, db: string): Promise<TimedRead<CollectionEntry[]>> {
  const read = await readCatalogCursor(client, db, { listCollections: 1, nameOnly: false, cursor: {} });
  return { value: read.value.map(toCollectionEntry), ...(read.time === undefined ? {} : { time: read.time }) };
}

/** `listIndexes` of a collection (undefined when it does not exist any more), with the time of the read. */
export async function indexSpecsAt(client: MongoClient, ns: Namespace): Promise<TimedRead<Document[] | undefined>> {
  try {
    return await readCatalogCursor(client, ns.db, { listIndexes: ns.coll, cursor: {} });
  } catch (error) {
    if (isNamespaceNotFound(error)) return { value: undefined };
    throw error;
  }
}

/** The `listCollections` entry of one namespace, or undefined when there is none. */
export async function collectionEntry(client: MongoClient, ns: Namespace): Promise<CollectionEntry | undefined> {
  const [entry] = await listCollectionEntries(client.db(ns.db), ns.coll);
  return entry;
}

/** Whether the namespace exists (a collection or a view). */
export async function namespaceExists(client: MongoClient, ns: Namespace): Promise<boolean> {
  const found = await retryTransient(() => client.db(ns.db).listCollections({ name: ns.coll }, { nameOnly: true }).toArray());
  return found.length > 0;
}

/** `listIndexes` of a collection, type-faithful; undefined when the collection does not exist (any more). */
export async function listIndexSpecs(client: MongoClient, ns: Namespace): Promise<Document[] | undefined> {
  try {
    return await retryTransient(() => client.db(ns.db).collection(ns.coll).listIndexes(TYPE_FAITHFUL).toArray());
  } catch (error) {
    if (isNamespaceNotFound(error)) return undefined;
    throw error;
  }
}

/** Creates a collection or view (`create` with the given options). */
export async function createNamespace(client: MongoClient, ns: Namespace, options: Document): Promise<void> {
  await runIdempotent(client.db(ns.db), { create: ns.coll, ...options, writeConcern: MAJORITY });
}

/** Builds indexes (one `createIndexes`); indexes that already exist as given are a no-op. */
export async function createIndexes(client: MongoClient, ns: Namespace, specs: readonly Document[]): Promise<void> {
  await runIdempotent(client.db(ns.db), { createIndexes: ns.coll, indexes: specs, writeConcern: MAJORITY });
}

/** Drops one index; one that is not there (or a collection that is not) is fine. */
export async function dropIndex(client: MongoClient, ns: Namespace, name: string): Promise<void> {
  try {
    await runIdempotent(client.db(ns.db), { dropIndexes: ns.coll, index: name, writeConcern: MAJORITY });
  } catch (error) {
    if (!isIndexNotFound(error) && !isNamespaceNotFound(error)) throw error;
  }
}

/** Drops a collection or view; one that is not there is fine. */
export async function dropNamespace(client: MongoClient, ns: Namespace): Promise<void> {
  try {
    await runIdempotent(client.db(ns.db), { drop: ns.coll, writeConcern: MAJORITY });
  } catch (error) {
    if (!isNamespaceNotFound(error)) throw error;
  }
}

/** Renames `from` to `to` (replacing `to`); false when `from` is not there. */
export async function renameNamespace(client: MongoClient, from: Namespace, to: Namespace): Promise<boolean> {
  try {
    await runIdempotent(client.db('admin'), {
      renameCollection: namespaceOf(from),
      to: namespaceOf(to),
      dropTarget: true,
      writeConcern: MAJORITY,
    });
    return true;
  } catch (error) {
    if (isNamespaceNotFound(error)) return false;
    throw error;
  }
}

/** Changes a collection's options or one of its indexes (`collMod` with `change`). */
export async function collMod(client: MongoClient, ns: Namespace, change: Document): Promise<void> {
  await runIdempotent(client.db(ns.db), { collMod: ns.coll, ...change, writeConcern: MAJORITY });
}
