/**
 * A node's data directory (`dbPath`, mongod's `--dbpath`): its documents, namespaces (options,
 * index specifications, views), users (documents of `admin.system.users`) and oplog survive a
 * restart, after SIGTERM or SIGKILL.
 *
 * Files: `checkpoint.bson` (the whole state at some moment: a header, then every namespace,
 * document and oplog entry as a record, see records.ts) and `journal-<generation>.bson` (every
 * change since, in order), `mongod.lock` (the pid of the process using the directory).
 *
 * Journal before acknowledging, as mongod: a command's changes are written (write(2)) before its
 * reply is sent, so an acknowledged write survives the process being killed in any way; a write
 * whose write concern asks for the journal (`j: true`, `w: 'majority'`, or the implicit default)
 * is also fdatasync'ed before the reply, so it survives the machine stopping. Writes of background
 * tasks (TTL deletes, no-ops) are written every 100 ms (mongod's journal commit interval).
 * Checkpoints are written to a temporary file, fdatasync'ed and renamed into place, when the
 * journal outgrows `journalCheckpointMB` and the last checkpoint, and at a clean shutdown.
 *
 * What is recorded, generically: every document a live collection stores or removes (through
 * `Collection.observer`), every oplog entry (oplog listener), and each namespace's definition
 * whenever it changed (compared after each DDL oplog entry and after each command that may
 * change the catalog), so a new kind of collection persists without code of its own as long as
 * its state lives in its options, index specifications and documents.
 */
import {
  closeSync,
  existsSync,
  fdatasyncSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { join, resolve } from 'node:path';
import { BSON, type Timestamp } from 'bson';
import type { Instance } from '../instance.js';
import type { CommandHook } from '../commands/registry.js';
import type { Collection, DocumentObserver, Namespace } from '../storage/collection.js';
import { sameBytes } from '../storage/memory.js';
import { asksForJournal, supportsWriteConcern } from '../write-concern.js';
import { JournalFile, writeParts } from './journal.js';
import { encodeRecord, RecordType, type RecordTypeCode } from './records.js';
import { documentDelete, documentPut, encodeKey, encodeNamespace, encodeOplogEntry, namespaceKey, namespaceMeta } from './codec.js';
import { CHECKPOINT_FORMAT, CHECKPOINT_VERSION, DataDirectoryError, recover } from './recovery.js';

export { DataDirectoryError } from './recovery.js';

const CHECKPOINT = 'checkpoint.bson';
const CHECKPOINT_TMP = 'checkpoint.bson.tmp';
const LOCK = 'mongod.lock';
/** Period of the write of background tasks' changes (mongod's journal commitIntervalMs). */
const JOURNAL_WRITE_INTERVAL_MS = 100;
/** Bytes gathered before a checkpoint writes them out. */
const CHECKPOINT_WRITE_BYTES = 8 * 1024 * 1024;

/** Commands that never change a namespace's definition without an oplog entry saying so. */
const CATALOG_NEUTRAL = new Set([
  'find',
  'getMore',
  'insert',
  'update',
  'delete',
  'findAndModify',
  'findandmodify',
  'aggregate',
  'count',
  'distinct',
  'killCursors',
  'hello',
  'isMaster',
  'ismaster',
  'ping',
  'buildInfo',
  'buildinfo',
  'listCollections',
  'listIndexes',
  'listDatabases',
  'serverStatus',
  'collStats',
  'dbStats',
  'connectionStatus',
  'saslStart',
  'saslContinue',
  'endSessions',
  'configureFailPoint',
  'waitForFailPoint',
]);

function journalFile(dir: string, generation: number): string {
  return join(dir, `journal-${generation}.bson`);
}

/** Data directories open in this process (a second node on one directory is refused). */
const openInProcess = new Set<string>();

/** The start time of a process (field 22 of /proc/<pid>/stat), to tell a reused pid apart. */
function processStartTime(pid: number): string | undefined {
  try {
    return readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.split(' ')[19];
  } catch {
    return undefined;
  }
}

function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Takes the directory's lock, as mongod's `mongod.lock`: refused while another live process holds it. */
function lockDirectory(dir: string): void {
  const path = join(dir, LOCK);
  const inUse = (owner: string) =>
    new DataDirectoryError(
      `DBPathInUse: Unable to lock the lock file: ${path}. Another test-cluster node (${owner}) is already running on the ${dir} directory`,
    );
  if (openInProcess.has(dir)) throw inUse('in this process');
  if (existsSync(path)) {
    const [pid, started] = readFileSync(path, 'utf8').trim().split(' ');
    const owner = Number(pid);
    if (owner > 0 && owner !== process.pid && processAlive(owner) && (started === undefined || processStartTime(owner) === started)) {
      throw inUse(`pid ${owner}`);
    }
  }
  writeFileSync(path, `${process.pid} ${processStartTime(process.pid) ?? ''}`.trim() + '\n');
  openInProcess.add(dir);
}

function syncDirectory(dir: string): void {
  const fd = openSync(dir, 'r');
  try {
    fdatasyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

/** A checkpoint file being written: records are gathered and written in large pieces. */
class CheckpointWriter {
  private pending: Buffer[] = [];
  private pendingBytes = 0;
  bytes = 0;

  constructor(private readonly fd: number) {}

  add(parts: readonly Buffer[]): void {
    for (const part of parts) {
      this.pending.push(part);
      this.pendingBytes += part.length;
    }
    if (this.pendingBytes >= CHECKPOINT_WRITE_BYTES) this.flush();
  }

  flush(): void {
    const parts = this.pending;
    this.bytes += this.pendingBytes;
    this.pending = [];
    this.pendingBytes = 0;
    writeParts(this.fd, parts);
  }
}

export class DataDirectory {
  private journal: JournalFile;
  private generation: number;
  /** Size of the last checkpoint (the journal may grow twice as large before the next one). */
  private checkpointBytes = 0;
  /** Stored definition of each persisted namespace, by key (namespaceKey). */
  private readonly persisted = new Map<string, Buffer>();
  /** The oplog is journaled through this position (ts, txnOpIndex). */
  private journaledTs: Timestamp;
  private journaledIndex = 0;
  private closed = false;
  /** A document put held back (see `append`). */
  private pendingPut: { collection: Collection; raw: Buffer } | undefined;
  private readonly unsubscribe: () => void;
  private readonly observer: DocumentObserver;
  private readonly dir: string;

  /**
   * Opens (creating it if need be) the data directory `dbPath` for `instance`, whose catalog and
   * oplog are still empty: restores what the directory holds, or, when it holds nothing yet,
   * calls `initiate` (the instance sets itself up as a new replica set) and writes a first checkpoint.
   */
  static open(instance: Instance, dbPath: string, initiate: () => void): DataDirectory {
    const dir = resolve(dbPath);
    mkdirSync(dir, { recursive: true });
    lockDirectory(dir);
    try {
      rmSync(join(dir, CHECKPOINT_TMP), { force: true });
      if (!existsSync(join(dir, CHECKPOINT))) {
        initiate();
        const directory = new DataDirectory(instance, dir, 0, 0);
        directory.checkpoint();
        return directory;
      }
      const recovered = recover(instance, join(dir, CHECKPOINT), (generation) => journalFile(dir, generation));
      const directory = new DataDirectory(instance, dir, recovered.generation, recovered.journalBytes);
      // A restarted one-member replica set elects itself; the new primary writes a no-op (as mongod's).
      instance.noop({ msg: 'new primary' });
      directory.write();
      return directory;
    } catch (e) {
      openInProcess.delete(dir);
      throw e;
    }
  }

  private constructor(
    private readonly instance: Instance,
    dir: string,
    generation: number,
    journalBytes: number,
  ) {
    this.dir = dir;
    this.generation = generation;
    for (const name of readdirSync(dir)) {
      if (/^journal-\d+\.bson$/.test(name) && name !== `journal-${generation}.bson`) rmSync(join(dir, name), { force: true });
    }
    this.journal = new JournalFile(journalFile(dir, generation), journalBytes);
    const newest = instance.oplog.newest();
    this.journaledTs = newest?.ts ?? instance.clock.current();
    this.journaledIndex = newest?.txnOpIndex ?? 0;
    this.observer = {
      stored: (collection, entry) => {
        if (!this.isLive(collection)) return;
        this.putPending();
        this.pendingPut = { collection, raw: entry.raw };
      },
      removed: (collection, entry) => {
        if (this.isLive(collection)) this.append(RecordType.documentDelete, documentDelete(collection, entry.raw));
      },
    };
    this.adoptCatalog();
    this.unsubscribe = instance.oplog.subscribe(() => this.journalOplog());
    instance.commandHooks.push(this.commandHook());
    instance.every(JOURNAL_WRITE_INTERVAL_MS, () => this.write());
  }

  /**
   * Journals a record, after the document put held back (it goes first: order is kept). A put is
   * held back because an insert's oplog entry, which usually follows at once, carries the same
   * document: the two are journaled as one record then (RecordType.oplogInsert), not twice.
   */
  private append(type: RecordTypeCode, parts: readonly Buffer[]): void {
    this.putPending();
    this.journal.append(encodeRecord(type, parts));
  }

  private putPending(): void {
    const put = this.pendingPut;
    if (!put) return;
    this.pendingPut = undefined;
    this.journal.append(encodeRecord(RecordType.documentPut, documentPut(put.collection, put.raw)));
  }

  /** Writes the journal (write(2)). */
  private write(): void {
    this.putPending();
    this.journal.write();
  }

  /**
   * Journal bytes beyond which a checkpoint is written: at least twice the last checkpoint, so
   * that checkpoints cost at most half the journal's writes, and recovery replays at most that.
   */
  private get checkpointThreshold(): number {
    return Math.max(this.instance.options.journalCheckpointMB * 1024 * 1024, 2 * this.checkpointBytes);
  }

  /** Whether `collection` is the catalog's (not a transaction's fork, not dropped). */
  private isLive(collection: Collection): boolean {
    return this.instance.catalog.get(collection.db, collection.name) === collection;
  }

  private allNamespaces(): Namespace[] {
    const catalog = this.instance.catalog;
    return catalog.databaseNames().flatMap((db) => catalog.namespaces(db));
  }

  /** Takes the catalog as it is as persisted (it was just restored, or a checkpoint follows). */
  private adoptCatalog(): void {
    for (const ns of this.allNamespaces()) {
      const key = namespaceKey(ns);
      this.persisted.set(key, encodeNamespace(key, namespaceMeta(ns)));
      if (ns.kind === 'collection') ns.observer = this.observer;
    }
  }

  /**
   * Journals the definition of every namespace that changed since last persisted, and the
   * removal of those gone; a collection persisted for the first time has its documents journaled
   * with it (it may have been filled before it was live: a transaction's new collection).
   */
  private syncCatalog(): void {
    const seen = new Set<string>();
    for (const ns of this.allNamespaces()) {
      const key = namespaceKey(ns);
      seen.add(key);
      const stored = encodeNamespace(key, namespaceMeta(ns));
      const before = this.persisted.get(key);
      if (before?.equals(stored)) continue;
      this.append(RecordType.namespace, [stored]);
      this.persisted.set(key, stored);
      if (ns.kind !== 'collection') continue;
      if (!before) for (const entry of ns.byRid.values()) this.append(RecordType.documentPut, documentPut(ns, entry.raw));
      ns.observer = this.observer;
    }
    for (const key of [...this.persisted.keys()]) {
      if (seen.has(key)) continue;
      this.append(RecordType.namespaceRemoved, [encodeKey(key)]);
      this.persisted.delete(key);
    }
  }

  /** Journals the oplog entries appended since last time; a DDL entry re-checks the catalog. */
  private journalOplog(): void {
    if (this.closed) return;
    const entries = this.instance.oplog.readAfter(this.journaledTs, this.journaledIndex, Number.POSITIVE_INFINITY);
    if (entries.length === 0) return;
    let ddl = false;
    for (const entry of entries) {
      const put = this.pendingPut;
      if (put && entry.op === 'i' && sameBytes(entry.o as Buffer, put.raw) && entry.ui?.equals(put.collection.uuid)) {
        this.pendingPut = undefined;
        this.journal.append(encodeRecord(RecordType.oplogInsert, encodeOplogEntry(entry)));
      } else this.append(RecordType.oplogEntry, encodeOplogEntry(entry));
      if (entry.op === 'c') ddl = true;
    }
    const last = entries[entries.length - 1];
    this.journaledTs = last.ts;
    this.journaledIndex = last.txnOpIndex ?? 0;
    if (ddl) this.syncCatalog();
  }

  /** Makes each command's changes durable before its reply goes out. */
  private commandHook(): CommandHook {
    return {
      after: async (ctx, name) => {
        if (this.closed) return;
        if (!CATALOG_NEUTRAL.has(name)) this.syncCatalog();
        this.write();
        if (this.journal.size > this.checkpointThreshold) this.checkpoint();
        else if (this.journal.unsynced && supportsWriteConcern(name, ctx.body) && asksForJournal(ctx.body)) await this.journal.sync();
      },
    };
  }

  /**
   * Writes the whole state as a new checkpoint and starts the journal that continues it. Runs
   * synchronously, so the state it captures is the state the new journal starts from.
   */
  checkpoint(): void {
    this.pendingPut = undefined; // the checkpoint holds the document
    const generation = this.generation + 1;
    const tmp = join(this.dir, CHECKPOINT_TMP);
    const fd = openSync(tmp, 'w');
    let bytes: number;
    try {
      const out = new CheckpointWriter(fd);
      const oplog = this.instance.oplog;
      const header = {
        format: CHECKPOINT_FORMAT,
        version: CHECKPOINT_VERSION,
        generation,
        clusterTime: this.instance.clock.current(),
        truncatedThrough: oplog.truncatedThroughTs(),
      };
      out.add(encodeRecord(RecordType.header, [Buffer.from(BSON.serialize(header, { ignoreUndefined: true }))]));
      this.persisted.clear();
      for (const ns of this.allNamespaces()) {
        const key = namespaceKey(ns);
        const stored = encodeNamespace(key, namespaceMeta(ns));
        this.persisted.set(key, stored);
        out.add(encodeRecord(RecordType.namespace, [stored]));
        if (ns.kind !== 'collection') continue;
        ns.observer = this.observer;
        for (const entry of ns.byRid.values()) out.add(encodeRecord(RecordType.documentPut, documentPut(ns, entry.raw)));
      }
      const oldest = oplog.oldest();
      if (oldest)
        for (const entry of oplog.read(oldest, false, Number.POSITIVE_INFINITY))
          out.add(encodeRecord(RecordType.oplogEntry, encodeOplogEntry(entry)));
      out.flush();
      fdatasyncSync(fd);
      bytes = out.bytes;
    } finally {
      closeSync(fd);
    }
    const previous = this.journal;
    const next = new JournalFile(journalFile(this.dir, generation), 0);
    renameSync(tmp, join(this.dir, CHECKPOINT));
    syncDirectory(this.dir);
    this.journal = next;
    this.generation = generation;
    this.checkpointBytes = bytes;
    const newest = this.instance.oplog.newest();
    if (newest) {
      this.journaledTs = newest.ts;
      this.journaledIndex = newest.txnOpIndex ?? 0;
    }
    // What the old journal still held is in the checkpoint.
    previous.closeNow();
    rmSync(previous.path, { force: true });
  }

  /** A clean shutdown: a last checkpoint, then the directory is released. */
  close(): void {
    if (this.closed) return;
    this.checkpoint();
    this.closed = true;
    this.unsubscribe();
    this.journal.closeNow();
    for (const ns of this.allNamespaces()) if (ns.kind === 'collection') ns.observer = undefined;
    writeFileSync(join(this.dir, LOCK), '');
    openInProcess.delete(this.dir);
  }
}
