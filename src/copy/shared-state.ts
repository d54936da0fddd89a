/**
 * State the main thread and the copy workers share through SharedArrayBuffers: the copied byte
 * and document counters that progress reads (never a query per progress call), and the stop flag
 * with which the main thread asks every worker to finish its in-flight writes, checkpoint and
 * return. Both live in `workerData`, so every worker thread of the pool sees the same memory.
 */

const BYTES = 0;
const DOCUMENTS = 1;
/** Slots for the partitions copied at once (`--copyWorkers` is at most 256). */
export const COUNTER_SLOTS = 256;

/**
 * Bytes and documents written by this process's copy workers (all threads summed), and the bytes
 * written by the partition running in each slot (per-namespace progress; the scheduler gives each
 * running partition a slot and clears it first).
 */
export class SharedCounters {
  readonly buffer: SharedArrayBuffer;
  readonly #values: BigInt64Array;

  constructor(buffer: SharedArrayBuffer = new SharedArrayBuffer((2 + COUNTER_SLOTS) * BigInt64Array.BYTES_PER_ELEMENT)) {
    this.buffer = buffer;
    this.#values = new BigInt64Array(buffer);
  }

  add(bytes: number, documents: number, slot?: number): void {
    Atomics.add(this.#values, BYTES, BigInt(bytes));
    Atomics.add(this.#values, DOCUMENTS, BigInt(documents));
    if (slot !== undefined && slot >= 0 && slot < this.#values.length - 2) Atomics.add(this.#values, 2 + slot, BigInt(bytes));
  }

  /** Bytes written by the partition in `slot` since it was cleared. */
  slotBytes(slot: number): number {
    return Number(Atomics.load(this.#values, 2 + slot));
  }

  resetSlot(slot: number): void {
    if (slot >= 0 && slot < this.#values.length - 2) Atomics.store(this.#values, 2 + slot, 0n);
  }

  get bytes(): number {
    return Number(Atomics.load(this.#values, BYTES));
  }

  get documents(): number {
    return Number(Atomics.load(this.#values, DOCUMENTS));
  }
}

/** A flag the main thread raises to make workers stop at their next batch boundary. */
export class StopFlag {
  readonly buffer: SharedArrayBuffer;
  readonly #flag: Int32Array;

  constructor(buffer: SharedArrayBuffer = new SharedArrayBuffer(Int32Array.BYTES_PER_ELEMENT)) {
    this.buffer = buffer;
    this.#flag = new Int32Array(buffer);
  }

  raise(): void {
    Atomics.store(this.#flag, 0, 1);
  }

  lower(): void {
    Atomics.store(this.#flag, 0, 0);
  }

  get raised(): boolean {
    return Atomics.load(this.#flag, 0) === 1;
  }
}
