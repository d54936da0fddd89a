/**
 * Buffers for large replies (cursor batches), used again once their reply has been written.
 * A fresh multi-megabyte buffer for every `find`/`getMore` reply cost the node a page fault
 * per 4 KiB the first time each page was written (the kernel zeroes it): copying a 16 MB batch
 * into fresh memory took 2–5 times as long as into memory written before (bench/RESULTS.md,
 * 2026-11-29). mongod likewise builds replies in buffers it keeps.
 */

/** Replies at least this large are built in a kept buffer; smaller ones are not worth it. */
export const KEPT_REPLY_MIN_BYTES = 256 * 1024;

/** Buffers are allocated in whole units of this, so that one serves replies of nearby sizes. */
const UNIT_BYTES = 1024 * 1024;

/** Idle buffers kept for later replies; more are left to the garbage collector. */
const MAX_IDLE = 3;

export class ReplyBuffers {
  /** Idle buffers, each whole (its own ArrayBuffer, from offset 0). */
  readonly #idle: Buffer[] = [];

  /** A buffer of exactly `size` bytes, to give back with `give` once nothing reads it any more. */
  take(size: number): Buffer {
    let best = -1;
    for (let i = 0; i < this.#idle.length; i++) {
      const length = this.#idle[i]!.length;
      if (length >= size && (best < 0 || length < this.#idle[best]!.length)) best = i;
    }
    const whole = best < 0 ? Buffer.allocUnsafeSlow(Math.ceil(size / UNIT_BYTES) * UNIT_BYTES) : this.#idle.splice(best, 1)[0]!;
    return whole.subarray(0, size);
  }

  /** Takes back a buffer `take` gave (its reply is written); the smallest idle one goes when too many are kept. */
  give(taken: Buffer): void {
    this.#idle.push(Buffer.from(taken.buffer, 0, taken.buffer.byteLength));
    if (this.#idle.length > MAX_IDLE) {
      const smallest = this.#idle.reduce((at, buffer, i, all) => (buffer.length < all[at]!.length ? i : at), 0);
      this.#idle.splice(smallest, 1);
    }
  }
}
