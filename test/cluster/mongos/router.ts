/**
 * The router's state (mongos): its hybrid logical clock, its connections to the config server
 * and the shards, and its cache of the sharding catalog — shards, each database's primary shard,
 * each sharded collection's routing table — reloaded from the config server after every change
 * it makes (it is the cluster's only router, so its cache never goes stale otherwise).
 */
import { Long, ObjectId, Timestamp, UUID } from 'bson';
import { ClusterClock } from '../clock.js';
import { CursorRegistry } from '../cursor.js';
import { ServerCounters } from '../counters.js';
import { ServerError } from '../errors.js';
import { findAll, loadRoutingTables } from '../sharding/config-reads.js';
import { shardingError } from '../sharding/errors.js';
import { NodeClient } from '../sharding/node-client.js';
import type { RoutingTable } from '../sharding/routing-table.js';
import type { InternalCredentials } from '../sharding/scram-client.js';
import type { Instance } from '../instance.js';
import { RouterSessions } from './sessions.js';
import { NamespaceGates } from './gates.js';

/** Options of a router; every field has a default. */
export interface RouterOptions {
  /** TCP port (default 0: any free port). */
  port?: number;
  /** The config server replica set: `configRepl/host:port` (required). */
  configdb: string;
  /** The user the router authenticates as towards the shards and the config server. */
  internalCredentials?: InternalCredentials;
  /** Period of the balancer's rounds while it is on, in ms (default 10000, mongod's). */
  balancerIntervalMs?: number;
}

/** Per-connection facts. */
export interface RouterConnection {
  id: number;
  /** Authenticated user (`user@db`) when the cluster runs with users. */
  user?: string;
  state: Map<string, unknown>;
}

/** How routed commands name the config server (the `admin` and `config` databases live there). */
export const CONFIG_SERVER_ID = 'config';

export interface ShardEntry {
  id: string;
  /** `shard01/127.0.0.1:port`, as `listShards` shows it. */
  connectionString: string;
  /** `127.0.0.1:port`: the one member. */
  address: string;
  client: NodeClient;
}

export interface DatabaseEntry {
  name: string;
  primary: string;
  version: { uuid: UUID; timestamp: Timestamp; lastMod: number };
}

export class Router {
  readonly clock = new ClusterClock();
  readonly config: NodeClient;
  readonly counters = new ServerCounters();
  readonly cursors = new CursorRegistry();
  readonly sessions = new RouterSessions();
  readonly gates = new NamespaceGates();
  readonly processId = new ObjectId();
  readonly startedAt = new Date();
  host = '127.0.0.1:0';
  shards = new Map<string, ShardEntry>();
  databases = new Map<string, DatabaseEntry>();
  tables = new Map<string, RoutingTable>();
  clusterId: ObjectId | undefined;
  /** Aborted when the router stops: waits end early. */
  readonly stopping = new AbortController();
  /**
   * The router's private node: its user store (access control), and the scratch space where it
   * runs the merging part of aggregations over the shards' results (mongos/access.ts).
   */
  local!: Instance;
  /** Access control: throws Unauthorized when the connection may not run the command (unset: off). */
  authorize?: (
    connection: RouterConnection,
    command: string,
    db: string,
    body: Record<string, unknown>,
    sequences: Map<string, Buffer[]>,
  ) => void;
  /** With access control, whether the connection's user may bypass write blocking (passed to shards). */
  mayBypassWriteBlocking?: (connection: RouterConnection) => boolean;

  /** The config server, addressed like a shard: it holds the `admin` and `config` databases. */
  readonly configServer: ShardEntry;

  constructor(readonly options: RouterOptions) {
    const slash = options.configdb.indexOf('/');
    const address = options.configdb.slice(slash + 1).split(',')[0]!;
    this.config = this.client(address);
    this.configServer = { id: CONFIG_SERVER_ID, connectionString: options.configdb, address, client: this.config };
  }

  client(host: string): NodeClient {
    return new NodeClient(host, { clock: this.clock, credentials: this.options.internalCredentials });
  }

  /** Reloads the whole catalog cache from the config server. */
  async refresh(): Promise<void> {
    const [shards, databases, tables, version] = await Promise.all([
      findAll(this.config, 'config', 'shards', {}, { _id: 1 }),
      findAll(this.config, 'config', 'databases'),
      loadRoutingTables(this.config),
      findAll(this.config, 'config', 'version'),
    ]);
    const known = this.shards;
    this.shards = new Map();
    for (const doc of shards) {
      const id = String(doc._id);
      const connectionString = String(doc.host);
      const address = connectionString.slice(connectionString.indexOf('/') + 1).split(',')[0]!;
      const previous = known.get(id);
      this.shards.set(id, previous?.address === address ? previous : { id, connectionString, address, client: this.client(address) });
    }
    this.databases = new Map(
      databases.map((d) => [
        String(d._id),
        { name: String(d._id), primary: String(d.primary), version: d.version as DatabaseEntry['version'] },
      ]),
    );
    this.tables = tables;
    this.clusterId = version[0]?.clusterId as ObjectId | undefined;
  }

  /** Reloads one collection's routing table. */
  async refreshCollection(ns: string): Promise<void> {
    const loaded = await loadRoutingTables(this.config, ns);
    if (loaded.has(ns)) this.tables.set(ns, loaded.get(ns)!);
    else this.tables.delete(ns);
  }

  shard(id: string): ShardEntry {
    if (id === CONFIG_SERVER_ID) return this.configServer;
    const shard = this.shards.get(id);
    if (!shard) throw shardingError('ShardNotFound', `Shard ${id} not found`);
    return shard;
  }

  /** Shard ids, sorted. */
  shardIds(): string[] {
    return [...this.shards.keys()].sort();
  }

  /** The routing table of a sharded collection; undefined for an unsharded one. */
  tableOf(ns: string): RoutingTable | undefined {
    return this.tables.get(ns);
  }

  /**
   * A database's entry; with `create`, made on first use with a primary shard (mongod picks the
   * shard holding the least data; here the one primary for the fewest databases), as a write to
   * a new database makes it.
   */
  async database(name: string, create: boolean, primary?: string): Promise<DatabaseEntry | undefined> {
    if (name === 'admin' || name === 'config') return undefined;
    const existing = this.databases.get(name);
    if (existing || !create) return existing;
    if (this.shards.size === 0) throw shardingError('ShardNotFound', 'No shards found: add a shard first');
    const counts = new Map(this.shardIds().map((id) => [id, 0]));
    for (const d of this.databases.values()) counts.set(d.primary, (counts.get(d.primary) ?? 0) + 1);
    const chosen = primary ?? [...counts.entries()].sort((a, b) => a[1] - b[1] || (a[0] < b[0] ? -1 : 1))[0]![0];
    this.shard(chosen);
    const entry: DatabaseEntry = { name, primary: chosen, version: { uuid: new UUID(), timestamp: this.clock.tick(), lastMod: 1 } };
    const reply = await this.config.run('config', {
      update: 'databases',
      updates: [{ q: { _id: name }, u: { $setOnInsert: { primary: chosen, version: entry.version } }, upsert: true }],
    });
    reply.orThrow();
    const stored = await findAll(this.config, 'config', 'databases', { _id: name });
    const doc = stored[0];
    const result: DatabaseEntry = doc ? { name, primary: String(doc.primary), version: doc.version as DatabaseEntry['version'] } : entry;
    this.databases.set(name, result);
    return result;
  }

  /** The shard holding an unsharded collection of `db` (its primary shard); for admin/config the config server. */
  async primaryOf(db: string, create: boolean): Promise<ShardEntry | undefined> {
    if (db === 'admin' || db === 'config') return this.configServer;
    const entry = await this.database(db, create);
    return entry ? this.shard(entry.primary) : undefined;
  }

  /** The `shardVersion` a router attaches to versioned commands on a sharded collection. */
  shardVersion(table: RoutingTable): Record<string, unknown> {
    return { e: table.info.epoch, t: table.info.timestamp, v: table.version() };
  }

  stop(): void {
    this.stopping.abort();
    this.cursors.closeAll();
    this.config.close();
    for (const shard of this.shards.values()) shard.client.close();
  }
}

/** Throws when a namespace is not `db.collection`. */
export function checkNamespace(ns: unknown, command: string): [string, string] {
  if (typeof ns !== 'string' || !ns.includes('.') || ns.startsWith('.') || ns.endsWith('.')) {
    throw new ServerError('InvalidNamespace', `Invalid namespace specified for ${command}: '${String(ns)}'`);
  }
  const dot = ns.indexOf('.');
  return [ns.slice(0, dot), ns.slice(dot + 1)];
}

/** A Long, a number or an Int32 as a JS number. */
export function num(v: unknown): number {
  if (v === undefined || v === null) return Number.NaN;
  if (typeof v === 'number') return v;
  if (Long.isLong(v)) return v.toNumber();
  return Number(v as number);
}
