/**
 * The documents waiting to be checked again, in memory up to a bound (`maxPendingRechecks`), the
 * rest in the metadata database (recheck-store.ts): memory never grows with the data or with how
 * much of it changes.
 *
 * A document is queued ("touched") when a change stream reports it changed on either cluster after
 * verification began, or when a range comparison found it different. One entry per namespace and
 * `_id`: a document touched again is the same entry, due at the later time, its confirmation
 * started over.
 *
 * Crash safety. Each reply of a change stream is a batch; an entry touched by a batch pins it
 * until the entry is decided or written to the store. A stream's position is recorded only up to
 * the last batch of an unpinned prefix (`savablePoint`), so after a crash the stream is read again
 * from a point whose every later touch is either still to come or durably stored: nothing queued
 * is ever lost, whatever was only in memory. A document touched again by a later batch moves its
 * pin there (the later touch covers the earlier one). Entries that wait long (a busy document, the
 * destination far behind) are written to the store so that the stream's position moves on.
 */
import type { Timestamp } from 'bson';
import { laterTime } from '../domain/time.js';
import type { RecheckStore, StoredRecheck } from './recheck-store.js';
import type { Side, StreamPoint } from './state.js';
import { waitOrWake } from './wait-or-wake.js';

/** One reply of a cluster's change stream. */
export interface StreamBatch {
  side: Side;
  /** Where the stream stands after this reply. */
  point: StreamPoint;
  /** Entries it pins. */
  outstanding: number;
  /** When it was read (ms since the epoch). */
  readAt: number;
}

export interface Recheck extends StoredRecheck {
  key: string;
  /** Bumped by every touch: a check that sees it moved decides nothing. */
  touches: number;
  inFlight: boolean;
  /** Read back from the store: removed there once decided. */
  stored: boolean;
  pins: Partial<Record<Side, StreamBatch>>;
}

export function recheckKey(ns: string, id: string): string {
  return `${ns}\u0000${id}`;
}

export class RecheckQueue {
  readonly #store: RecheckStore;
  readonly #limit: number;
  readonly #entries = new Map<string, Recheck>();
  readonly #batches: Record<Side, StreamBatch[]> = { source: [], destination: [] };
  #wake: (() => void)[] = [];

  constructor(store: RecheckStore, limit: number) {
    this.#store = store;
    this.#limit = Math.max(1, limit);
  }

  /** Entries in memory. */
  get size(): number {
    return this.#entries.size;
  }

  /** Whether memory is full (the streams wait for `makeRoom`). */
  get full(): boolean {
    return this.#entries.size >= this.#limit;
  }

  /** Starts a batch of `side`'s stream: touches that follow pin it. */
  openBatch(side: Side, point: StreamPoint): StreamBatch {
    const batch: StreamBatch = { side, point, outstanding: 0, readAt: Date.now() };
    this.#batches[side].push(batch);
    return batch;
  }

  /** Queues a document to check once events through `dueAt` are applied (absent: at once). */
  touch(ns: string, id: string, dueAt: Timestamp | undefined, batch?: StreamBatch): Recheck {
    const key = recheckKey(ns, id);
    let entry = this.#entries.get(key);
    if (entry === undefined) {
      entry = { key, ns, id, attempts: 0, touches: 0, inFlight: false, stored: false, pins: {} };
      if (dueAt !== undefined) entry.dueAt = dueAt;
      this.#entries.set(key, entry);
    } else {
      entry.touches++;
      entry.attempts = 0;
      delete entry.sourceHash;
      const later = dueAt === undefined ? entry.dueAt : laterTime(entry.dueAt, dueAt);
      if (later !== undefined) entry.dueAt = later;
    }
    if (batch !== undefined) {
      const pinned = entry.pins[batch.side];
      if (pinned !== batch) {
        if (pinned !== undefined) pinned.outstanding--;
        entry.pins[batch.side] = batch;
        batch.outstanding++;
      }
    }
    for (const wake of this.#wake.splice(0)) wake();
    return entry;
  }

  /** The entry for a document, when in memory. */
  get(ns: string, id: string): Recheck | undefined {
    return this.#entries.get(recheckKey(ns, id));
  }

  /** Entries due once events through `applied` are applied, not being checked, at most `limit`. */
  due(applied: Timestamp | undefined, limit: number): Recheck[] {
    const found: Recheck[] = [];
    for (const entry of this.#entries.values()) {
      if (found.length >= limit) break;
      if (entry.inFlight) continue;
      if (entry.dueAt === undefined || (applied !== undefined && !entry.dueAt.greaterThan(applied))) found.push(entry);
    }
    return found;
  }

  /** Keys of stored entries held in memory (the store's `due` leaves them out). */
  storedInMemory(): { ns: string; id: string }[] {
    return [...this.#entries.values()].filter((entry) => entry.stored).map(({ ns, id }) => ({ ns, id }));
  }

  /** Takes stored re-checks into memory (merged into an entry already there). */
  load(stored: readonly StoredRecheck[]): Recheck[] {
    const loaded: Recheck[] = [];
    for (const recheck of stored) {
      const key = recheckKey(recheck.ns, recheck.id);
      const existing = this.#entries.get(key);
      if (existing !== undefined) {
        existing.stored = true;
        if (recheck.afterCommit === true) existing.afterCommit = true;
        continue;
      }
      const entry: Recheck = { ...recheck, key, touches: 0, inFlight: false, stored: true, pins: {} };
      this.#entries.set(key, entry);
      loaded.push(entry);
    }
    return loaded;
  }

  /** The entry is decided (equal, or recorded as a difference, or not verifiable): it leaves. */
  remove(entry: Recheck): void {
    if (this.#entries.get(entry.key) === entry) this.#entries.delete(entry.key);
    this.#unpin(entry);
  }

  #unpin(entry: Recheck): void {
    for (const side of ['source', 'destination'] as const) {
      const batch = entry.pins[side];
      if (batch !== undefined) batch.outstanding--;
      delete entry.pins[side];
    }
  }

  /**
   * Writes entries to the store and lets them leave memory: those pinning a batch read more than
   * `olderThanMs` ago, and, while memory is over `fraction` of the bound, the oldest others.
   */
  async spill(olderThanMs: number, fraction = 0.75): Promise<number> {
    const now = Date.now();
    const candidates = [...this.#entries.values()].filter((entry) => !entry.inFlight);
    const oldest = (entry: Recheck) => Math.min(entry.pins.source?.readAt ?? Infinity, entry.pins.destination?.readAt ?? Infinity);
    const chosen = new Set(candidates.filter((entry) => now - oldest(entry) > olderThanMs));
    const excess = this.#entries.size - chosen.size - Math.floor(this.#limit * fraction);
    if (excess > 0) {
      for (const entry of candidates
        .filter((e) => !chosen.has(e))
        .sort((a, b) => oldest(a) - oldest(b))
        .slice(0, excess))
        chosen.add(entry);
    }
    if (chosen.size === 0) return 0;
    const entries = [...chosen].map((entry) => ({ entry, touches: entry.touches }));
    await this.#store.save(
      entries.map(({ entry: { ns, id, dueAt, attempts, sourceHash, afterCommit } }) =>
        stored(ns, id, dueAt, attempts, sourceHash, afterCommit),
      ),
    );
    for (const { entry, touches } of entries) {
      // Touched while being written: it stays (its newer state is written next time).
      if (this.#entries.get(entry.key) === entry && !entry.inFlight && entry.touches === touches) {
        this.#entries.delete(entry.key);
        this.#unpin(entry);
      }
    }
    return entries.length;
  }

  /** Resolves once memory has room (spilling if need be). */
  async makeRoom(): Promise<void> {
    if (this.full) await this.spill(Infinity);
  }

  /**
   * Where `side`'s stream can be recorded: the last batch of its unpinned prefix (undefined: not
   * moved). A stream touches everything a batch holds before it yields (touches are synchronous),
   * so any batch seen here is complete.
   */
  savablePoint(side: Side): StreamPoint | undefined {
    const batches = this.#batches[side];
    let point: StreamPoint | undefined;
    while (batches.length > 0 && batches[0]!.outstanding === 0) point = batches.shift()!.point;
    return point;
  }

  /** Resolves on the next touch (or after `ms`). */
  wait(ms: number): Promise<void> {
    return waitOrWake(ms, this.#wake);
  }

  /** Wakes whoever waits (a stop, a new applied position). */
  wakeAll(): void {
    for (const wake of this.#wake.splice(0)) wake();
  }
}

function stored(
  ns: string,
  id: string,
  dueAt: Timestamp | undefined,
  attempts: number,
  sourceHash: string | undefined,
  afterCommit: boolean | undefined,
): StoredRecheck {
  const recheck: StoredRecheck = { ns, id, attempts };
  if (dueAt !== undefined) recheck.dueAt = dueAt;
  if (sourceHash !== undefined) recheck.sourceHash = sourceHash;
  if (afterCommit === true) recheck.afterCommit = true;
  return recheck;
}
