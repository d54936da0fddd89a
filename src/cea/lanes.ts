/**
 * The lanes that apply CRUD events in parallel while keeping each document's events in order.
 *
 * The router gives every event a sequence number (its place in the stream) and a lane (a hash
 * of its namespace and document key, document-key.ts), so all events of one document share a
 * lane. A lane has at most one batch in flight; while it is out, newer events queue behind it
 * and leave together as the next batch, bounded by count and bytes (so batches grow with load,
 * and a hot document's events, coalesced in the batch, cost one write each time). Lanes run
 * independently: a lane busy with a hot document does not hold the others back, until the
 * memory bound (`maxPendingBytes` of events queued or in flight) makes the reader wait.
 *
 * `appliedThrough()` is the watermark: the highest sequence number such that it and every
 * event before it are applied (lanes finish out of order). `drain()` resolves when every lane
 * is empty: the barrier before a DDL event, pause, commit and the copy-complete sweep.
 *
 * The first failed batch fails the lanes: nothing more is dispatched, and `add`/`drain` reject
 * with that error.
 */
import { concatDocuments } from './raw-document.js';

export interface LaneBatch {
  /** Raw events back to back, in stream order (a buffer of its own). */
  events: Uint8Array;
  count: number;
  firstSeq: number;
  lastSeq: number;
}

export interface LanesOptions {
  lanes: number;
  /** Most events in one batch. */
  maxBatchEvents: number;
  /** Most bytes of events in one batch (a larger single event travels alone). */
  maxBatchBytes: number;
  /** Bytes of events queued or in flight at which `add` waits. */
  maxPendingBytes: number;
  /** Applies one batch; resolves once it is durably applied. */
  apply(batch: LaneBatch, lane: number): Promise<void>;
}

interface QueuedEvent {
  bytes: Uint8Array;
  seq: number;
}

interface Lane {
  queue: QueuedEvent[];
  /** Sequence numbers of the batch in flight, its size, and since when (`Date.now()`). */
  inFlight?: { firstSeq: number; lastSeq: number; bytes: number; events: number; since: number };
}

export class Lanes {
  readonly #options: LanesOptions;
  readonly #lanes: Lane[];
  #pendingBytes = 0;
  #lastSeq = 0;
  #failure: Error | undefined;
  /** Resolved whenever a batch finishes (or the lanes fail). */
  #waiters: (() => void)[] = [];

  constructor(options: LanesOptions) {
    if (!(options.lanes >= 1)) throw new RangeError(`lanes must be at least 1, got ${options.lanes}`);
    this.#options = { ...options };
    this.#lanes = Array.from({ length: options.lanes }, () => ({ queue: [] }));
  }

  get count(): number {
    return this.#lanes.length;
  }

  /** New batch bounds (a live retune), used from the next batch on. */
  setBatchLimits(limits: Pick<LanesOptions, 'maxBatchEvents' | 'maxBatchBytes' | 'maxPendingBytes'>): void {
    Object.assign(this.#options, limits);
  }

  /** Lanes whose batch has been in flight since before `before` (ms, `Date.now()`), with since when. */
  stalled(before: number): { lane: number; since: number; events: number }[] {
    const stalled: { lane: number; since: number; events: number }[] = [];
    this.#lanes.forEach((lane, index) => {
      if (lane.inFlight !== undefined && lane.inFlight.since < before) {
        stalled.push({ lane: index, since: lane.inFlight.since, events: lane.inFlight.events });
      }
    });
    return stalled;
  }

  /** Bytes of events queued or in flight. */
  get pendingBytes(): number {
    return this.#pendingBytes;
  }

  /** The highest sequence number handed to `add`. */
  get lastSeq(): number {
    return this.#lastSeq;
  }

  /** Queues an event (`seq` above every earlier one) on `lane`; waits while memory is full. */
  async add(lane: number, bytes: Uint8Array, seq: number): Promise<void> {
    while (this.#failure === undefined && this.#pendingBytes > 0 && this.#pendingBytes + bytes.length > this.#options.maxPendingBytes) {
      await this.#nextChange();
    }
    if (this.#failure !== undefined) throw this.#failure;
    if (seq <= this.#lastSeq) throw new RangeError(`event sequence numbers must increase: ${seq} after ${this.#lastSeq}`);
    this.#lastSeq = seq;
    this.#lanes[lane]!.queue.push({ bytes, seq });
    this.#pendingBytes += bytes.length;
    this.#dispatch(lane);
  }

  /** Moves the watermark past sequence numbers that carry no CRUD event (DDL, filtered out). */
  skipTo(seq: number): void {
    if (seq > this.#lastSeq) this.#lastSeq = seq;
  }

  /** Every event up to the returned sequence number is applied. */
  appliedThrough(): number {
    let lowestPending = Number.POSITIVE_INFINITY;
    for (const lane of this.#lanes) {
      const first = lane.inFlight?.firstSeq ?? lane.queue[0]?.seq;
      if (first !== undefined && first < lowestPending) lowestPending = first;
    }
    return lowestPending === Number.POSITIVE_INFINITY ? this.#lastSeq : lowestPending - 1;
  }

  get idle(): boolean {
    return this.#lanes.every((lane) => lane.inFlight === undefined && lane.queue.length === 0);
  }

  /** Resolves when every event added so far is applied; rejects if a batch failed. */
  async drain(): Promise<void> {
    while (this.#failure === undefined && !this.idle) await this.#nextChange();
    if (this.#failure !== undefined) throw this.#failure;
  }

  /** The error that failed the lanes, if any. */
  get failure(): Error | undefined {
    return this.#failure;
  }

  #nextChange(): Promise<void> {
    return new Promise((resolve) => this.#waiters.push(resolve));
  }

  #notify(): void {
    const waiters = this.#waiters;
    this.#waiters = [];
    for (const wake of waiters) wake();
  }

  #dispatch(index: number): void {
    const lane = this.#lanes[index]!;
    if (lane.inFlight !== undefined || lane.queue.length === 0 || this.#failure !== undefined) return;
    const { maxBatchEvents, maxBatchBytes } = this.#options;
    let take = 0;
    let bytes = 0;
    while (take < lane.queue.length && take < maxBatchEvents) {
      const size = lane.queue[take]!.bytes.length;
      if (take > 0 && bytes + size > maxBatchBytes) break;
      bytes += size;
      take++;
    }
    const taken = lane.queue.splice(0, take);
    const batch: LaneBatch = {
      events: concatDocuments(taken.map((event) => event.bytes)),
      count: taken.length,
      firstSeq: taken[0]!.seq,
      lastSeq: taken[taken.length - 1]!.seq,
    };
    lane.inFlight = { firstSeq: batch.firstSeq, lastSeq: batch.lastSeq, bytes, events: batch.count, since: Date.now() };
    this.#options.apply(batch, index).then(
      () => {
        lane.inFlight = undefined;
        this.#pendingBytes -= bytes;
        this.#dispatch(index);
        this.#notify();
      },
      (error: unknown) => {
        this.#failure ??= error instanceof Error ? error : new Error(String(error));
        this.#notify();
      },
    );
  }
}
