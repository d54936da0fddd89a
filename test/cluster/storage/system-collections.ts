/**
 * The internal collections a replica-set member always has in `admin`, `config` and `local`, so
 * that `listDatabases`/`listCollections` look like a real node's and tools that must skip them
 * (Ferry does) meet them. They are catalog entries with mongod's options and a few of the
 * documents mongod keeps there; their contents are not maintained beyond that (`find` on
 * `local.oplog.rs` reads the oplog itself: commands/oplog-find.ts).
 */
import { ObjectId } from 'bson';
import type { Catalog } from './catalog.js';
import { Index } from './indexes.js';
import type { Collection, CollectionOptions } from './collection.js';
import { prepareForInsert, serialize } from '../raw.js';

export interface SystemCollectionFacts {
  replSetName: string;
  oplogSizeBytes: number;
  startedAt: Date;
}

/** Stores a document directly (catalog bookkeeping, not a user write: no oplog entry). */
export function storeInternal(collection: Collection, doc: Record<string, unknown>): void {
  const prepared = prepareForInsert(serialize(doc));
  collection.insert(prepared.doc, prepared.id);
}

function add(catalog: Catalog, db: string, name: string, options: CollectionOptions = {}): Collection {
  return (catalog.get(db, name) as Collection | undefined) ?? catalog.addCollection(db, name, options);
}

/** Creates the collections a freshly initiated one-member replica set has. */
export function seedSystemCollections(catalog: Catalog, facts: SystemCollectionFacts): void {
  const version = add(catalog, 'admin', 'system.version');
  storeInternal(version, { _id: 'featureCompatibilityVersion', version: '8.0' });

  const sessions = add(catalog, 'config', 'system.sessions');
  sessions.indexes.push(new Index({ v: 2, key: { lastUse: 1 }, name: 'lsidTTLIndex', expireAfterSeconds: 1800 }, sessions));
  add(catalog, 'config', 'transactions');
  add(catalog, 'config', 'image_collection');

  add(catalog, 'local', 'oplog.rs', { capped: true, size: facts.oplogSizeBytes, autoIndexId: false });
  const startupLog = add(catalog, 'local', 'startup_log', { capped: true, size: 10485760 });
  storeInternal(startupLog, {
    _id: `ferry-test-cluster-${facts.startedAt.getTime()}`,
    hostname: '127.0.0.1',
    startTime: facts.startedAt,
    startTimeLocal: facts.startedAt.toString(),
    cmdLine: { replication: { replSetName: facts.replSetName } },
    pid: process.pid,
    buildinfo: { version: '8.0.4' },
  });
  add(catalog, 'local', 'system.replset');
  add(catalog, 'local', 'replset.election');
  add(catalog, 'local', 'replset.minvalid');
  add(catalog, 'local', 'replset.oplogTruncateAfterPoint');
  add(catalog, 'local', 'system.rollback.id');
}

/** Writes the replica set configuration document once the node knows its host:port. */
export function recordReplicaSetConfig(catalog: Catalog, replSetName: string, host: string): void {
  const replset = catalog.get('local', 'system.replset') as Collection | undefined;
  if (!replset || replset.count > 0) return;
  storeInternal(replset, {
    _id: replSetName,
    version: 1,
    term: 1,
    members: [{ _id: 0, host, arbiterOnly: false, buildIndexes: true, hidden: false, priority: 1, votes: 1 }],
    protocolVersion: 1,
    settings: { replicaSetId: new ObjectId() },
  });
}
