/**
 * One test-cluster node: a single-member replica set primary. It owns the catalog, the oplog,
 * the clock and the open cursors, and every write goes through it so that each one is recorded
 * in the oplog with the next cluster time.
 */
import { setMaxListeners } from 'node:events';
import { type Binary, type Long, ObjectId, Timestamp, type UUID } from 'bson';
import { Catalog } from './storage/catalog.js';
import type { Collection, CollectionOptions, DocEntry } from './storage/collection.js';
import { ClusterClock, writeTime } from './clock.js';
import { InsertedDocument, InsertShared, Oplog, type OplogEntry } from './oplog.js';
import { CursorRegistry } from './cursor.js';
import { ServerError } from './errors.js';
import type { CommandHook, ConnectionInfo } from './commands/registry.js';
import { recordReplicaSetConfig, seedSystemCollections } from './storage/system-collections.js';
import { ServerCounters } from './counters.js';
import { DataDirectory } from './persistence/data-directory.js';

/** Options of a test-cluster node; every field has a default. */
export interface InstanceOptions {
  /** Replica set name reported by `hello` (default `rs0`). */
  replSetName?: string;
  /** Oplog capacity in megabytes; older entries are dropped beyond it (default 256). */
  oplogSizeMB?: number;
  /**
   * Period of the no-op writes that advance cluster time while idle, in ms (default 10000, as
   * mongod's periodic no-op writer); 0 disables them.
   */
  noopIntervalMs?: number;
  /** Period of the TTL monitor in ms (default 60000, mongod's `ttlMonitorSleepSecs`); 0 disables. */
  ttlIntervalMs?: number;
  /**
   * Serves the test-only commands (`configureFailPoint`, `waitForFailPoint`), as mongod's
   * `--setParameter enableTestCommands=1` (default false: they are CommandNotFound, as on mongod).
   */
  enableTestCommands?: boolean;
  /**
   * Directory where the node keeps its data across restarts (mongod's `--dbpath`; see
   * persistence/data-directory.ts). Default none: the node's data lives in memory only.
   */
  dbPath?: string;
  /** With `dbPath`: journal size in MB after which a checkpoint is written (default 64). */
  journalCheckpointMB?: number;
}

/** Who is writing: session fields recorded with the write (transactions stage their writes). */
export interface OpContext {
  lsid?: { id: Binary };
  txnNumber?: Long;
  /** Set while a multi-document transaction runs: oplog entries are staged, not appended. */
  stage?: (entry: Omit<OplogEntry, 'ts' | 'wall'>) => void;
  /** The writer holds `bypassWriteBlockingMode` (see README: how the privilege is modelled). */
  bypassWriteBlocking?: boolean;
  /** The UUID a collection this operation creates gets (`applyOps` replaying a create with `ui`). */
  collectionUuid?: UUID;
  /** The write belongs to a chunk migration (or a non-primary shard's DDL): `fromMigrate` in the oplog. */
  fromMigrate?: boolean;
}

/** Databases whose writes are never user writes (they bypass write blocking). */
const INTERNAL_DATABASES = new Set(['admin', 'local', 'config']);

export class Instance {
  readonly replSetName: string;
  readonly catalog = new Catalog();
  readonly clock = new ClusterClock();
  readonly oplog: Oplog;
  readonly cursors = new CursorRegistry();
  /** Connections and operation counts for serverStatus. */
  readonly counters = new ServerCounters();
  /** Identifies this process in `topologyVersion`. */
  readonly processId = new ObjectId();
  readonly electionId = new ObjectId('7fffffff0000000000000001');
  readonly startedAt = new Date();
  readonly options: Required<InstanceOptions>;
  /** host:port clients reach this node at (set once listening). */
  host = '127.0.0.1:0';
  /** `setUserWriteBlockMode` state. */
  userWritesBlocked = false;
  /**
   * Access control, when the cluster runs with users: throws Unauthorized if the connection may
   * not run `command` on `db`. Undefined = no access control (every client may do everything).
   */
  authorize?: (
    connection: ConnectionInfo,
    command: string,
    db: string,
    body: Record<string, unknown>,
    sequences: Map<string, Buffer[]>,
  ) => void;
  /**
   * Whether a connection holds `bypassWriteBlockingMode`. Undefined = no access control, where
   * mongod lets every client bypass write blocking (SERVER-67545).
   */
  bypassesWriteBlocking?: (connection: ConnectionInfo) => boolean;
  /**
   * Document validation (collection `validator`): throws DocumentValidationFailure for a
   * document that fails it, unless bypassed. Updates pass the document as it was before the
   * change (`previous`), which `validationLevel: 'moderate'` needs. Undefined = no validation.
   */
  validateForWrite?: (collection: Collection, doc: Buffer, bypass: boolean, previous?: Buffer) => void;
  /** With users: the SASL mechanisms for `db.user` in a hello's `saslSupportedMechs`. */
  saslMechanismsFor?: (dbUser: string) => string[] | undefined;
  /**
   * Called just before a stored document's bytes are replaced in place, so that open
   * transactions can keep the version their snapshot saw (txn/). Undefined = nobody needs it.
   */
  beforeReplace?: (collection: Collection, entry: DocEntry) => void;
  /** Where the node keeps its data, when it has a `dbPath`. */
  readonly dataDirectory: DataDirectory | undefined;
  /** Run around every command, in order (fail points, the data directory's journal). */
  readonly commandHooks: CommandHook[] = [];
  /**
   * The document key written to the oplog for a stored document: `{_id}` unless set (a shard
   * puts the shard key fields first, as mongod does for sharded collections; sharding/).
   */
  documentKeyOf?: (collection: Collection, raw: Buffer, id: unknown) => Record<string, unknown>;
  private timers: NodeJS.Timeout[] = [];
  /** Aborted when the node stops: waits (awaitable hello, change-stream getMore) end early. */
  readonly stopping = new AbortController();

  constructor(options: InstanceOptions = {}) {
    // Every monitoring connection waits on this signal in an awaitable hello: many at once is normal.
    setMaxListeners(0, this.stopping.signal);
    this.options = {
      replSetName: options.replSetName ?? 'rs0',
      oplogSizeMB: options.oplogSizeMB ?? 256,
      noopIntervalMs: options.noopIntervalMs ?? 10_000,
      ttlIntervalMs: options.ttlIntervalMs ?? 60_000,
      enableTestCommands: options.enableTestCommands ?? false,
      dbPath: options.dbPath ?? '',
      journalCheckpointMB: options.journalCheckpointMB ?? 64,
    };
    this.replSetName = this.options.replSetName;
    this.oplog = new Oplog(this.options.oplogSizeMB * 1024 * 1024);
    const initiate = () => {
      seedSystemCollections(this.catalog, {
        replSetName: this.replSetName,
        oplogSizeBytes: this.options.oplogSizeMB * 1024 * 1024,
        startedAt: this.startedAt,
      });
      // mongod writes an initial no-op when a replica set is initiated.
      this.noop({ msg: 'initiating set' });
    };
    // A node on a data directory starts from what it holds (and initiates only a new one).
    if (this.options.dbPath) this.dataDirectory = DataDirectory.open(this, this.options.dbPath, initiate);
    else initiate();
  }

  /** Starts the periodic background tasks (no-op writer; others register via `every`). */
  startBackgroundTasks(): void {
    recordReplicaSetConfig(this.catalog, this.replSetName, this.host);
    if (this.options.noopIntervalMs > 0) {
      this.every(this.options.noopIntervalMs, () => this.noop({ msg: 'periodic noop' }));
    }
  }

  /** Runs `task` every `ms` until the instance stops. */
  every(ms: number, task: () => void): void {
    const timer = setInterval(task, ms);
    timer.unref();
    this.timers.push(timer);
  }

  stop(): void {
    this.stopping.abort();
    for (const timer of this.timers) clearInterval(timer);
    this.timers = [];
    this.cursors.closeAll();
    this.dataDirectory?.close();
  }

  /** The cluster time clients are told about (`$clusterTime`, `operationTime`). */
  clusterTime(): Timestamp {
    return this.clock.current();
  }

  /** Appends an oplog entry at the next cluster time (or stages it inside a transaction). */
  record(ctx: OpContext, entry: Omit<OplogEntry, 'ts' | 'wall'>): Timestamp | undefined {
    if (ctx.stage) {
      ctx.stage(entry);
      return undefined;
    }
    const ts = this.clock.tick();
    // Every entry gets the same shape (all fields, in-object): the oplog holds one per write.
    this.oplog.append({
      ts,
      wall: this.wallClock(),
      op: entry.op,
      ns: entry.ns,
      ui: entry.ui,
      o: entry.o,
      o2: entry.o2,
      replace: entry.replace,
      lsid: entry.lsid,
      txnNumber: entry.txnNumber,
      txnOpIndex: entry.txnOpIndex,
      preImage: entry.preImage,
      postImage: entry.postImage,
      size: entry.size,
      fromMigrate: ctx.fromMigrate ?? entry.fromMigrate,
    });
    return ts;
  }

  private lastWall = new Date(0);
  /** What the last plain insert's oplog entry shares with the next ones of its run (oplog.ts). */
  private lastInsert: InsertShared | undefined;

  /** The wall time of a write; writes within one millisecond share one (never mutated) Date. */
  private wallClock(): Date {
    const now = writeTime();
    if (now !== this.lastWall.getTime()) this.lastWall = new Date(now);
    return this.lastWall;
  }

  /** A no-op oplog entry (advances cluster time; `appendOplogNote` and the periodic writer). */
  noop(o: Record<string, unknown>): Timestamp {
    return this.record({}, { op: 'n', ns: '', o, size: 64 })!;
  }

  /** Refuses user writes while write blocking is on (mongod's UserWritesBlocked, code 371). */
  assertWritable(ctx: OpContext, db: string): void {
    if (this.userWritesBlocked && !ctx.bypassWriteBlocking && !INTERNAL_DATABASES.has(db)) {
      throw new ServerError('UserWritesBlocked', 'User writes blocked');
    }
  }

  /** Creates a collection (explicitly or implicitly by a write) and records it. */
  createCollection(ctx: OpContext, db: string, name: string, options: CollectionOptions = {}, uuid?: UUID): Collection {
    this.assertWritable(ctx, db);
    const collection = this.catalog.addCollection(db, name, options, uuid ?? ctx.collectionUuid);
    this.record(ctx, {
      op: 'c',
      ns: `${db}.$cmd`,
      ui: collection.uuid,
      o: {
        create: name,
        ...options,
        // A clustered collection has no _id index (its documents are stored by _id).
        ...(options.clusteredIndex === undefined
          ? { idIndex: { v: 2, key: { _id: 1 }, name: '_id_', ...(options.collation ? { collation: options.collation } : {}) } }
          : {}),
      },
      size: 128,
    });
    return collection;
  }

  /** The collection for a write, created implicitly if missing (as mongod does). */
  collectionForWrite(ctx: OpContext, db: string, name: string): Collection {
    return this.catalog.collection(db, name) ?? this.createCollection(ctx, db, name);
  }

  /** Stores a prepared document and records the insert (and any capped evictions). */
  insertDocument(ctx: OpContext, collection: Collection, raw: Buffer, id: unknown): DocEntry {
    this.assertWritable(ctx, collection.db);
    if (ctx.stage) {
      const { entry, evicted } = collection.insert(raw, id);
      const o2 = this.documentKeyOf?.(collection, raw, id) ?? { _id: id };
      this.record(ctx, { op: 'i', ns: collection.ns, ui: collection.uuid, o: raw, o2, size: raw.length, ...session(ctx) });
      for (const gone of evicted) this.recordDelete(ctx, collection, gone);
      return entry;
    }
    // The record is its own oplog entry (oplog.ts, InsertedDocument), stamped once it is stored.
    const { entry, evicted } = collection.insert(raw, id, newInsertedDocument);
    const documentKey = this.documentKeyOf?.(collection, raw, id);
    // A retryable insert (what copiers send) fills its session fields.
    const retryable = Boolean(ctx.lsid) && ctx.txnNumber !== undefined;
    const lsid = retryable ? ctx.lsid : undefined;
    const txnNumber = retryable ? ctx.txnNumber : undefined;
    this.clock.advance();
    const seconds = this.clock.seconds;
    const wall = this.wallClock();
    let shared = this.lastInsert;
    if (shared === undefined || !shared.serves(seconds, wall, collection.ns, collection.uuid, ctx.fromMigrate, lsid, txnNumber)) {
      shared = this.lastInsert = new InsertShared(seconds, wall, collection.ns, collection.uuid, ctx.fromMigrate, lsid, txnNumber);
    }
    this.oplog.append(entry.stamp(shared, this.clock.increment, documentKey));
    for (const gone of evicted) this.recordDelete(ctx, collection, gone);
    return entry;
  }

  /**
   * Replaces a stored document's bytes and records the update: `description` is the change
   * stream `updateDescription` for a modification, or undefined for a whole-document replacement.
   */
  updateDocument(
    ctx: OpContext,
    collection: Collection,
    entry: DocEntry,
    raw: Buffer,
    description: Record<string, unknown> | undefined,
  ): void {
    this.assertWritable(ctx, collection.db);
    const before = entry.raw;
    this.beforeReplace?.(collection, entry);
    collection.replace(entry, raw);
    this.record(ctx, {
      op: 'u',
      ns: collection.ns,
      ui: collection.uuid,
      o: description ?? raw,
      replace: description === undefined,
      o2: this.documentKeyOf?.(collection, raw, entry.id) ?? { _id: entry.id },
      size: description ? 128 : raw.length,
      ...session(ctx),
      ...changeStreamImages(collection, before, raw),
    });
  }

  /** Removes a stored document and records the delete. */
  deleteDocument(ctx: OpContext, collection: Collection, entry: DocEntry): void {
    this.assertWritable(ctx, collection.db);
    collection.remove(entry);
    this.recordDelete(ctx, collection, entry);
  }

  private recordDelete(ctx: OpContext, collection: Collection, entry: DocEntry): void {
    const key = this.documentKeyOf?.(collection, entry.raw, entry.id) ?? { _id: entry.id };
    this.record(ctx, {
      op: 'd',
      ns: collection.ns,
      ui: collection.uuid,
      o: key,
      o2: key,
      size: 64,
      ...session(ctx),
      ...changeStreamImages(collection, entry.raw),
    });
  }
}

/** A plain insert's record, which is also its oplog entry once stamped. */
function newInsertedDocument(rid: number, id: unknown, raw: Buffer): InsertedDocument {
  return new InsertedDocument(rid, id, raw);
}

function session(ctx: OpContext): Partial<OplogEntry> {
  return ctx.lsid && ctx.txnNumber !== undefined ? { lsid: ctx.lsid, txnNumber: ctx.txnNumber } : {};
}

/**
 * The document before (and after) a write, kept in the oplog entry only for collections with
 * `changeStreamPreAndPostImages` enabled, as mongod keeps pre-images only for those.
 */
function changeStreamImages(collection: Collection, before: Buffer, after?: Buffer): Partial<OplogEntry> {
  const options = collection.options.changeStreamPreAndPostImages as { enabled?: boolean } | undefined;
  return options?.enabled ? { preImage: before, postImage: after } : {};
}
