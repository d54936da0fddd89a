/**
 * The in-order watermark of overlapping writes. Batches are numbered in read order and written
 * concurrently, so they can finish out of order; a checkpoint may only cover a batch when it and
 * every batch before it are fully written. `complete` returns the newest such batch's mark (its
 * last `_id` and running totals) whenever the watermark moves.
 */

/** What a checkpoint records after a batch: the position reached and the totals up to it. */
export interface BatchMark<Id = unknown> {
  /** `_id` of the batch's last document. */
  lastId: Id;
  /** Documents written up to and including this batch. */
  documents: number;
  /** Bytes written up to and including this batch. */
  bytes: number;
}

export class Watermark<Id = unknown> {
  /** Marks of batches finished ahead of the watermark, by sequence number. */
  readonly #finishedAhead = new Map<number, BatchMark<Id>>();
  /** Sequence number of the next batch the watermark waits for. */
  #next = 0;
  #current: BatchMark<Id> | undefined;

  constructor(start?: BatchMark<Id>) {
    this.#current = start;
  }

  /** The newest mark every earlier batch is covered by; undefined before the first batch. */
  get current(): BatchMark<Id> | undefined {
    return this.#current;
  }

  /** Batches finished but waiting for an earlier one. */
  get waiting(): number {
    return this.#finishedAhead.size;
  }

  /**
   * Records that batch `sequence` (0, 1, 2... in read order) is fully written. Returns the new
   * watermark when it moved, else undefined.
   */
  complete(sequence: number, mark: BatchMark<Id>): BatchMark<Id> | undefined {
    if (!Number.isInteger(sequence) || sequence < this.#next || this.#finishedAhead.has(sequence)) {
      throw new RangeError(`batch ${sequence} is completed twice or was never issued`);
    }
    this.#finishedAhead.set(sequence, mark);
    let moved = false;
    for (let found = this.#finishedAhead.get(this.#next); found !== undefined; found = this.#finishedAhead.get(this.#next)) {
      this.#finishedAhead.delete(this.#next);
      this.#current = found;
      this.#next++;
      moved = true;
    }
    return moved ? this.#current : undefined;
  }
}
