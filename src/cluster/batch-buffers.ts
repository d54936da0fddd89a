/**
 * Buffers lent to reads and write batches, reused: a copy worker's write batches (or the replies
 * its wire reads receive and write from), and the replies the verifier's range reads receive
 * (src/verify/compare-range.ts). A partition holds at most `batchesInFlight` batches being
 * written plus the one being filled, so a worker needs that many buffers for its whole life
 * instead of a fresh one per batch: fresh multi-megabyte buffers
 * cost page faults on first touch, drive V8's external-memory garbage collections, and once freed
 * stay in glibc's arenas (the process's RSS grew with every buffer ever allocated).
 *
 * A buffer goes back with `release` only once nothing reads it any more (its write has settled);
 * `acquire` hands out only released buffers, so a buffer still being written is never refilled.
 * Should more be asked for than the pool holds, or more bytes than one buffer has (a document
 * larger than `batchBytes`), the extra buffer is allocated for that batch and dropped after it.
 */

export class BatchBuffers {
  /** Size of each pooled buffer. */
  readonly bufferBytes: number;
  /** Most buffers kept for reuse. */
  readonly capacity: number;
  readonly #free: Buffer[] = [];
  /** Pooled buffers handed out and not yet released (never handed out again until they are). */
  readonly #lent = new Map<Buffer, number>();
  #allocated = 0;

  constructor(bufferBytes: number, capacity: number) {
    if (!(bufferBytes > 0) || !(capacity >= 1)) {
      throw new RangeError(`batch buffers need a positive size and capacity, got ${bufferBytes} × ${capacity}`);
    }
    this.bufferBytes = bufferBytes;
    this.capacity = Math.floor(capacity);
  }

  /** Buffers allocated so far (pooled ones once each, plus every one-off). */
  get allocated(): number {
    return this.#allocated;
  }

  /** Pooled buffers handed out and not released. */
  get lent(): number {
    return this.#lent.size;
  }

  /** A buffer of at least `bytes` that nothing else holds. */
  acquire(bytes = this.bufferBytes): Buffer {
    if (bytes <= this.bufferBytes) {
      let buffer = this.#free.pop();
      if (buffer === undefined && this.#lent.size < this.capacity) buffer = this.#allocate(this.bufferBytes);
      if (buffer !== undefined) {
        this.#lent.set(buffer, 1);
        return buffer;
      }
    }
    return this.#allocate(Math.max(bytes, this.bufferBytes));
  }

  /**
   * One more holder of a lent buffer (a read reply whose slices are written as several batches):
   * it comes back once each holder has released it.
   */
  share(buffer: Buffer): void {
    const holders = this.#lent.get(buffer);
    if (holders !== undefined) this.#lent.set(buffer, holders + 1);
  }

  /** Takes back a buffer nothing reads any more; one-off buffers are left to the garbage collector. */
  release(buffer: Buffer): void {
    const holders = this.#lent.get(buffer);
    if (holders === undefined) return;
    if (holders > 1) this.#lent.set(buffer, holders - 1);
    else {
      this.#lent.delete(buffer);
      this.#free.push(buffer);
    }
  }

  #allocate(bytes: number): Buffer {
    this.#allocated++;
    // Outside Node's shared pool: a batch buffer is large and long-lived.
    return Buffer.allocUnsafeSlow(bytes);
  }
}

/**
 * A worker thread's sets of batch buffers between partitions (or the verifier's range tasks).
 * Each partition takes a set for its life (`take`) and gives it back once every batch has
 * settled (`put`), so partition after partition fills the same buffers. A set serves any partition whose buffers are no larger and
 * no more: partitions size their buffers from their collection's average document, so an exact
 * match would rarely reuse across collections, and every miss costs a fresh set's page faults
 * and V8's external-memory collections.
 *
 * Idle sets are kept only up to the most this thread has had in use at once (what it has
 * already needed), the smallest dropped first: the larger ones serve more partitions.
 */
export class IdleBatchBuffers {
  readonly #idle: BatchBuffers[] = [];
  #inUse = 0;
  #mostInUse = 0;
  #created = 0;

  /** Idle sets kept. */
  get size(): number {
    return this.#idle.length;
  }

  /** Sets created so far (each allocates its buffers as they are first lent). */
  get created(): number {
    return this.#created;
  }

  /** The smallest idle set of at least `capacity` buffers of at least `bufferBytes`, else a new one of exactly that. */
  take(bufferBytes: number, capacity: number): BatchBuffers {
    let best = -1;
    for (let i = 0; i < this.#idle.length; i++) {
      const set = this.#idle[i]!;
      if (set.bufferBytes < bufferBytes || set.capacity < capacity) continue;
      if (best < 0 || set.bufferBytes < this.#idle[best]!.bufferBytes) best = i;
    }
    this.#inUse++;
    this.#mostInUse = Math.max(this.#mostInUse, this.#inUse);
    if (best >= 0) return this.#idle.splice(best, 1)[0]!;
    this.#created++;
    return new BatchBuffers(bufferBytes, capacity);
  }

  /** A partition is done with `buffers` (nothing reads them any more). */
  put(buffers: BatchBuffers): void {
    this.#inUse--;
    this.#idle.push(buffers);
    this.#idle.sort((a, b) => b.bufferBytes - a.bufferBytes);
    this.#idle.length = Math.min(this.#idle.length, this.#mostInUse);
  }
}
