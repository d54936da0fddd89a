/**
 * The write-batch buffers of one copy worker, reused from batch to batch. A partition holds at
 * most `batchesInFlight` batches being written plus the one being filled, so a worker needs that
 * many buffers for its whole life instead of a fresh one per batch: fresh multi-megabyte buffers
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
