/**
 * The oplog: every write in commit order, with strictly increasing timestamps. Change streams
 * read it; it is capped at a configurable size and drops its oldest entries beyond that, so a
 * change stream resuming from before the oldest entry fails with ChangeStreamHistoryLost.
 */
import { type Binary, type Long, Timestamp, type UUID } from 'bson';
import { compareTimestamps } from './clock.js';
import { DocEntry } from './storage/collection.js';
import { StoredBytes } from './storage/memory.js';

/** One oplog entry (the fields mongod's oplog has that change streams need). */
export interface OplogEntry {
  ts: Timestamp;
  wall: Date;
  /** i insert, u update, d delete, c command (DDL), n no-op. */
  op: 'i' | 'u' | 'd' | 'c' | 'n';
  /** `db.collection` (for commands: `db.$cmd`). */
  ns: string;
  /** Collection UUID. */
  ui?: UUID;
  /**
   * i: the inserted document (raw); u: `{ updatedFields, removedFields, truncatedArrays }` or a
   * replacement document (raw, with `replace: true` below); d: `{ _id }`; c: the command; n: a message.
   */
  o: unknown;
  /** u/d/i: the document key `{ _id }`. */
  o2?: Record<string, unknown>;
  /** u: the operation replaced the whole document (o is the raw replacement). */
  replace?: boolean;
  /** Session and transaction fields, present for writes made in a session/transaction. */
  lsid?: { id: Binary; uid?: Binary };
  txnNumber?: Long;
  /** Position of the operation inside its transaction (resume tokens carry it). */
  txnOpIndex?: number;
  /**
   * u/d on a collection with `changeStreamPreAndPostImages` enabled: the document before the
   * write (u, d) and after it (u), for `fullDocumentBeforeChange` / `fullDocument: whenAvailable`.
   */
  preImage?: Buffer;
  postImage?: Buffer;
  /**
   * Written by a chunk migration or by a DDL participant that is not the database's primary
   * shard (mongod's `fromMigrate`): change streams leave it out unless `showMigrationEvents`.
   */
  fromMigrate?: boolean;
  /** Approximate bytes this entry holds, counted against the oplog size. */
  size: number;
}

/**
 * What a run of plain inserts shares: the seconds of their timestamps, the wall time, the
 * namespace and the session fields. One serves every insert of one command within one
 * millisecond (instance.ts makes a new one when any of them changes), so that each entry holds
 * only what is its own.
 */
export class InsertShared {
  constructor(
    readonly seconds: number,
    readonly wall: Date,
    readonly ns: string,
    readonly ui: UUID | undefined,
    readonly fromMigrate: boolean | undefined,
    readonly lsid: { id: Binary; uid?: Binary } | undefined,
    readonly txnNumber: Long | undefined,
  ) {}

  /** Whether an insert with these fields can share this (same objects, not equal ones: a command's own). */
  serves(
    seconds: number,
    wall: Date,
    ns: string,
    ui: UUID | undefined,
    fromMigrate: boolean | undefined,
    lsid: { id: Binary; uid?: Binary } | undefined,
    txnNumber: Long | undefined,
  ): boolean {
    return (
      this.seconds === seconds &&
      this.wall === wall &&
      this.ns === ns &&
      this.ui === ui &&
      this.fromMigrate === fromMigrate &&
      this.lsid === lsid &&
      this.txnNumber === txnNumber
    );
  }
}

/**
 * A plain insert's oplog entry (outside a transaction), which is also the document's record in its
 * collection: the commonest entry by far, one per inserted document. One object serves both, as
 * the document's bytes, record id and `_id` are the same, and the entry adds only its increment and
 * what its run of inserts shares (`InsertShared`), making `ts` and `o2` when they are read. A bulk
 * load's garbage collections mark and copy these over and over, and every byte of them is a fresh
 * page the kernel zeroes (bench/RESULTS.md, 2026-11-29 and -30). When an update replaces the
 * record's bytes, the entry keeps the inserted ones (`inserted`).
 */
export class InsertedDocument extends DocEntry implements OplogEntry {
  private shared: InsertShared | undefined = undefined;
  private increment = 0;
  /** The document key when it is more than `{ _id }` (a shard's, with the shard key's fields). */
  private documentKey: Record<string, unknown> | undefined = undefined;
  /** The bytes as inserted, once an update has replaced the record's. */
  private inserted: StoredBytes | undefined = undefined;

  /** Makes the stored record an oplog entry: its timestamp's increment and what its run shares. */
  stamp(shared: InsertShared, increment: number, documentKey: Record<string, unknown> | undefined): this {
    this.shared = shared;
    this.increment = increment;
    this.documentKey = documentKey;
    return this;
  }

  // Overriding the setter alone would leave this class's `raw` without a getter.
  override get raw(): Buffer {
    return super.raw;
  }

  override set raw(raw: Buffer) {
    this.inserted ??= new StoredBytes(super.raw);
    super.raw = raw;
  }

  get o(): Buffer {
    return (this.inserted ?? this).raw;
  }

  get size(): number {
    return (this.inserted ?? this).length;
  }

  get op(): 'i' {
    return 'i';
  }

  get ts(): Timestamp {
    return new Timestamp({ t: this.shared!.seconds, i: this.increment });
  }

  get wall(): Date {
    return this.shared!.wall;
  }

  get ns(): string {
    return this.shared!.ns;
  }

  get ui(): UUID | undefined {
    return this.shared!.ui;
  }

  get fromMigrate(): boolean | undefined {
    return this.shared!.fromMigrate;
  }

  get lsid(): { id: Binary; uid?: Binary } | undefined {
    return this.shared!.lsid;
  }

  get txnNumber(): Long | undefined {
    return this.shared!.txnNumber;
  }

  get o2(): Record<string, unknown> {
    return this.documentKey ?? { _id: this.id };
  }
}

type Listener = () => void;

export class Oplog {
  private entries: OplogEntry[] = [];
  /** Index of the first live entry (entries before it were truncated; compacted lazily). */
  private head = 0;
  private bytes = 0;
  private listeners = new Set<Listener>();
  /** Timestamp of the newest entry ever truncated; resuming at or before it loses history. */
  #truncatedThrough: Timestamp | undefined;
  /**
   * The newest entry truncated since `#truncatedThrough` was last read: its `ts` is made when asked
   * for (a full oplog drops one entry per insert, and most entries make their `ts` when read).
   */
  #lastDropped: OplogEntry | undefined;

  constructor(private readonly maxBytes: number) {}

  append(entry: OplogEntry): void {
    this.entries.push(entry);
    this.bytes += entry.size;
    while (this.bytes > this.maxBytes && this.entries.length - this.head > 1) {
      const dropped = this.entries[this.head++];
      this.bytes -= dropped.size;
      this.#lastDropped = dropped;
    }
    if (this.head > 4096 && this.head * 2 > this.entries.length) {
      this.entries = this.entries.slice(this.head);
      this.head = 0;
    }
    for (const listener of this.listeners) listener();
  }

  /** Appends several entries at once (a committed transaction), notifying listeners once. */
  appendAll(entries: OplogEntry[]): void {
    const listeners = this.listeners;
    this.listeners = new Set();
    try {
      for (const e of entries) this.append(e);
    } finally {
      this.listeners = listeners;
    }
    for (const listener of this.listeners) listener();
  }

  /** The oldest timestamp still held, if any. */
  oldest(): Timestamp | undefined {
    return this.entries[this.head]?.ts;
  }

  /** The newest entry, if any. */
  newest(): OplogEntry | undefined {
    return this.entries.length > this.head ? this.entries[this.entries.length - 1] : undefined;
  }

  /** True when entries at or after `ts` may already have been dropped. */
  lostHistoryAt(ts: Timestamp): boolean {
    const truncated = this.truncatedThroughTs();
    return truncated !== undefined && compareTimestamps(ts, truncated) <= 0;
  }

  /**
   * Whether a change stream may start reading at `ts`: mongod refuses (ChangeStreamHistoryLost)
   * when the oldest entry is later than `ts`, unless nothing was ever dropped (the oldest entry
   * is then the replica set's first, and nothing earlier ever existed).
   */
  canResumeFrom(ts: Timestamp): boolean {
    const oldest = this.oldest();
    return this.truncatedThroughTs() === undefined || (oldest !== undefined && compareTimestamps(oldest, ts) <= 0);
  }

  /** True when some entry later than `ts` has been dropped (a reader positioned at `ts` fell behind). */
  droppedAfter(ts: Timestamp): boolean {
    const truncated = this.truncatedThroughTs();
    return truncated !== undefined && compareTimestamps(truncated, ts) > 0;
  }

  /** Index (into the live entries) of the first entry with timestamp ≥ `ts` (or > when `after`). */
  private seek(ts: Timestamp, after: boolean): number {
    let lo = this.head;
    let hi = this.entries.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      const c = compareTimestamps(this.entries[mid].ts, ts);
      if (c < 0 || (after && c === 0)) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  /** Entries from `ts` (inclusive, or exclusive with `after`), at most `limit`. */
  read(ts: Timestamp, after: boolean, limit: number): OplogEntry[] {
    const from = this.seek(ts, after);
    return this.entries.slice(from, Math.min(this.entries.length, from + limit));
  }

  /**
   * Entries after the position (`ts`, `txnOpIndex`), at most `limit`: a reader's next entries.
   * Entries outside transactions count as txnOpIndex 0; `txnOpIndex` -1 includes all of `ts`.
   */
  readAfter(ts: Timestamp, txnOpIndex: number, limit: number): OplogEntry[] {
    let from = this.seek(ts, false);
    while (
      from < this.entries.length &&
      compareTimestamps(this.entries[from].ts, ts) === 0 &&
      (this.entries[from].txnOpIndex ?? 0) <= txnOpIndex
    )
      from++;
    return this.entries.slice(from, Math.min(this.entries.length, from + limit));
  }

  /** The newest timestamp ever truncated (the data directory keeps it across restarts). */
  truncatedThroughTs(): Timestamp | undefined {
    if (this.#lastDropped !== undefined) {
      // Entries are appended in timestamp order: the newest dropped is the latest truncated.
      this.#truncatedThrough = this.#lastDropped.ts;
      this.#lastDropped = undefined;
    }
    return this.#truncatedThrough;
  }

  /** On restart: entries through `ts` were truncated before (resuming there stays history lost). */
  restoreTruncatedThrough(ts: Timestamp): void {
    const truncated = this.truncatedThroughTs();
    if (truncated === undefined || compareTimestamps(ts, truncated) > 0) this.#truncatedThrough = ts;
  }

  /** Number of live entries and their approximate bytes. */
  stats(): { count: number; bytes: number; maxBytes: number } {
    return { count: this.entries.length - this.head, bytes: this.bytes, maxBytes: this.maxBytes };
  }

  /** Calls `listener` after each append until the returned function is called. */
  subscribe(listener: Listener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }
}
