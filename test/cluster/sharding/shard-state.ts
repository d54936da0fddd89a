/**
 * What a shard knows of sharding: its identity (given by `addShard`), the routing tables of the
 * sharded collections it holds (refreshed from the config server, as mongod's filtering metadata
 * is), and its range deletions: ranges whose documents it holds but does not own — moved away and
 * not yet cleaned up (`orphanCleanupDelaySecs`), or arriving by a migration not yet committed.
 * Range deletions are kept in `config.rangeDeletions`, as on mongod.
 */
import { ObjectId, type UUID } from 'bson';
import type { Instance, OpContext } from '../instance.js';
import type { Collection, DocEntry } from '../storage/collection.js';
import { serialize, prepareForInsert } from '../raw.js';
import { loadRoutingTables } from './config-reads.js';
import { NodeClient } from './node-client.js';
import type { RoutingTable } from './routing-table.js';
import type { InternalCredentials } from './scram-client.js';
import { type KeyTuple, compareTuples, inRange } from './shard-key.js';

/** mongod's default `orphanCleanupDelaySecs` (15 minutes). */
export const DEFAULT_ORPHAN_CLEANUP_DELAY_SECS = 900;

export interface ShardRoleOptions {
  /** Seconds a donor keeps a moved range's documents before deleting them (default 900, mongod's). */
  orphanCleanupDelaySecs?: number;
  /** The user this node authenticates as towards the other members (clusters with access control). */
  internalCredentials?: InternalCredentials;
}

/** One `config.rangeDeletions` task. */
export interface RangeDeletion {
  id: ObjectId;
  ns: string;
  uuid: UUID;
  min: KeyTuple;
  max: KeyTuple;
  /** Documents arriving by a migration not yet committed (the range is not ours yet). */
  pending: boolean;
  timer?: NodeJS.Timeout;
}

const STATE = Symbol('shardState');

/** The shard state of a node (views of it, as transactions make, share it); undefined off shards. */
export function shardStateOf(instance: Instance): ShardState | undefined {
  return (instance as unknown as Record<symbol, ShardState | undefined>)[STATE];
}

/** Internal writes of the sharding machinery: migration writes, bypassing write blocking. */
export const MIGRATION_OP: OpContext = { fromMigrate: true, bypassWriteBlocking: true };

export class ShardState {
  shardName: string | undefined;
  clusterId: ObjectId | undefined;
  /** The config server's connection string (`configRepl/host:port`). */
  configConnectionString: string | undefined;
  private config: NodeClient | undefined;
  /** Routing tables of the sharded collections, by namespace. */
  tables = new Map<string, RoutingTable>();
  readonly rangeDeletions: RangeDeletion[] = [];
  orphanCleanupDelaySecs: number;
  private readonly peers = new Map<string, NodeClient>();

  constructor(
    readonly instance: Instance,
    readonly options: ShardRoleOptions,
  ) {
    this.orphanCleanupDelaySecs = options.orphanCleanupDelaySecs ?? DEFAULT_ORPHAN_CLEANUP_DELAY_SECS;
    (instance as unknown as Record<symbol, ShardState>)[STATE] = this;
    // Oplog document keys of sharded collections carry the shard key, as mongod's do.
    instance.documentKeyOf = (collection, raw, id) => {
      const table = this.tables.get(collection.ns);
      return table ? table.pattern.documentKeyOfRaw(raw, id) : { _id: id };
    };
  }

  /** Sets the identity `addShard` gives a shard. */
  setIdentity(shardName: string, clusterId: ObjectId, configConnectionString: string): void {
    this.shardName = shardName;
    this.clusterId = clusterId;
    this.configConnectionString = configConnectionString;
    this.config?.close();
    const host = configConnectionString.slice(configConnectionString.indexOf('/') + 1).split(',')[0]!;
    this.config = this.client(host);
  }

  /** A client towards another member of the cluster (config server, a recipient shard). */
  client(host: string): NodeClient {
    let client = this.peers.get(host);
    if (!client) {
      client = new NodeClient(host, { clock: this.instance.clock, credentials: this.options.internalCredentials });
      this.peers.set(host, client);
    }
    return client;
  }

  /** Reloads the routing table of `ns` (or of every collection) from the config server. */
  async refresh(ns?: string): Promise<void> {
    if (!this.config) return;
    const loaded = await loadRoutingTables(this.config, ns);
    if (ns === undefined) this.tables = loaded;
    else if (loaded.has(ns)) this.tables.set(ns, loaded.get(ns)!);
    else this.tables.delete(ns);
  }

  /** Whether this shard owns `key` of the sharded collection `table`. */
  owns(table: RoutingTable, key: KeyTuple): boolean {
    return table.shardOf(key) === this.shardName;
  }

  /** Whether reads of `ns` must leave out documents this shard holds but does not own. */
  hasOrphans(ns: string): boolean {
    return this.rangeDeletions.some((r) => r.ns === ns);
  }

  /** The stored documents of `collection` whose shard key lies in [min, max). */
  documentsInRange(collection: Collection, table: RoutingTable, min: KeyTuple, max: KeyTuple): DocEntry[] {
    const found: DocEntry[] = [];
    for (const entry of collection.byRid.values()) {
      if (inRange(table.pattern.keyOfRaw(entry.raw), min, max)) found.push(entry);
    }
    return found;
  }

  /** Records a range deletion task (in `config.rangeDeletions` too) and returns it. */
  addRangeDeletion(
    ns: string,
    uuid: UUID,
    min: KeyTuple,
    max: KeyTuple,
    pending: boolean,
    pattern: RoutingTable['pattern'],
  ): RangeDeletion {
    const task: RangeDeletion = { id: new ObjectId(), ns, uuid, min, max, pending };
    this.rangeDeletions.push(task);
    const store =
      this.instance.catalog.collection('config', 'rangeDeletions') ?? this.instance.catalog.addCollection('config', 'rangeDeletions', {});
    const doc = serialize({
      _id: task.id,
      nss: ns,
      collectionUuid: uuid,
      donorShardId: this.shardName,
      range: { min: pattern.documentOf(min), max: pattern.documentOf(max) },
      ...(pending ? { pending: true } : {}),
      whenToClean: pending ? 'now' : 'delayed',
      timestamp: this.instance.clusterTime(),
    });
    const prepared = prepareForInsert(doc);
    store.insert(prepared.doc, prepared.id);
    return task;
  }

  /** Forgets a task (its documents were deleted, or became owned). */
  removeRangeDeletion(task: RangeDeletion): void {
    clearTimeout(task.timer);
    const at = this.rangeDeletions.indexOf(task);
    if (at >= 0) this.rangeDeletions.splice(at, 1);
    const store = this.instance.catalog.collection('config', 'rangeDeletions');
    const entry = store?.get(task.id);
    if (store && entry) store.remove(entry);
  }

  /** The task for exactly [min, max) of `ns`, if any. */
  findRangeDeletion(ns: string, min: KeyTuple, max: KeyTuple): RangeDeletion | undefined {
    return this.rangeDeletions.find((r) => r.ns === ns && compareTuples(r.min, min) === 0 && compareTuples(r.max, max) === 0);
  }

  /**
   * Deletes the documents of a task's range (as mongod's range deleter: writes with
   * `fromMigrate`, bypassing write blocking) and forgets the task.
   */
  runRangeDeletion(task: RangeDeletion): number {
    this.removeRangeDeletion(task);
    const [db, name] = splitNs(task.ns);
    const collection = this.instance.catalog.get(db, name);
    if (collection?.kind !== 'collection' || !collection.uuid.equals(task.uuid)) return 0;
    const table = this.tables.get(task.ns);
    if (!table) return 0;
    let deleted = 0;
    for (const entry of this.documentsInRange(collection, table, task.min, task.max)) {
      // Documents of the range this shard owns again by now (moved back) stay.
      if (this.owns(table, table.pattern.keyOfRaw(entry.raw)) && !task.pending) continue;
      this.instance.deleteDocument(MIGRATION_OP, collection, entry);
      deleted++;
    }
    return deleted;
  }

  /** Schedules a task's deletion after `orphanCleanupDelaySecs`. */
  scheduleRangeDeletion(task: RangeDeletion): void {
    task.timer = setTimeout(() => {
      try {
        this.runRangeDeletion(task);
      } catch {
        // The collection changed under the task (dropped, recreated): nothing is left to delete.
      }
    }, this.orphanCleanupDelaySecs * 1000);
    task.timer.unref();
  }

  /** Runs every scheduled deletion of `ns` now (`cleanupOrphaned`); returns the documents deleted. */
  cleanupNow(ns: string): number {
    let deleted = 0;
    for (const task of this.rangeDeletions.filter((r) => r.ns === ns && !r.pending)) deleted += this.runRangeDeletion(task);
    return deleted;
  }

  stop(): void {
    for (const task of this.rangeDeletions) clearTimeout(task.timer);
    for (const client of this.peers.values()) client.close();
    this.config?.close();
  }
}

export function splitNs(ns: string): [string, string] {
  const dot = ns.indexOf('.');
  return [ns.slice(0, dot), ns.slice(dot + 1)];
}
