/**
 * Groups raw documents, in the order they are read, into write batches bounded by bytes and by
 * count. A batch never exceeds its byte limit unless it holds a single document larger than the
 * limit (a document near 16 MiB with a small `batchBytes`): that document travels alone.
 *
 * Documents are copied out of the read replies into one contiguous buffer per batch, back to back
 * as an OP_MSG document sequence carries them: a batch holds exactly its own bytes (never a whole
 * reply), a reply is garbage as soon as it is consumed, and no object is made per document. The
 * buffers are lent by a `BatchBuffers` pool and given back once their batch is written, so a
 * worker fills the same few buffers all along.
 */
import { MAX_BSON_OBJECT_BYTES, MAX_MESSAGE_BYTES, MAX_WRITE_BATCH_SIZE } from '../domain/constants.js';
import { readInt32LE } from '../bson/scan.js';
import { checkDocument } from '../cluster/op-msg.js';
import { BatchBuffers } from '../cluster/batch-buffers.js';

/** Limits of one write batch. */
export interface BatchLimits {
  /** Largest sum of document sizes in one batch, in bytes. Required, positive. */
  maxBytes: number;
  /** Most documents in one batch (mongod's maxWriteBatchSize is 100,000). Required, positive. */
  maxDocuments: number;
  /**
   * Largest document the destination stores (its `maxBsonObjectSize`). Default 16 MiB. A larger
   * one fails the batch before it is sent (WireMessageTooLarge).
   */
  maxDocumentBytes?: number;
}

/** Bytes kept free before each batch's documents, for the header that frames them on the wire (write-path.ts). */
export const SECTION_ROOM_BYTES = 32;

/** One write batch: documents in read order, back to back. */
export interface RawBatch {
  bytes: Uint8Array;
  /** Number of documents. */
  count: number;
  /** Offset in `bytes` of the last document (whose `_id` a checkpoint records). */
  lastStart: number;
  /**
   * The memory `bytes` lives in: `SECTION_ROOM_BYTES` free bytes, then `bytes` (so a writer can
   * put a header before the documents without copying them). Given back to the batcher's
   * `BatchBuffers` once the batch is written.
   */
  buffer: Buffer;
  /**
   * `bytes` is a slice of a read reply (`buffer`) that other batches share: no room is free
   * before it (the writer frames it with a header of its own, src/cluster/op-msg.ts).
   */
  shared?: boolean;
  /**
   * Every document's length was checked as it joined the batch (at least 5, within the bytes,
   * at most `maxDocumentBytes`): the writer need not walk the batch again (op-msg.ts).
   */
  checked: true;
}

/** Room the command document and OP_MSG framing take besides the documents (generous). */
export const MESSAGE_OVERHEAD_BYTES = 64 * 1024;

/**
 * The batch limits for a `batchBytes` setting on a server with the given limits: never more than
 * one message can carry, never more documents than one write command accepts.
 */
export function batchLimits(
  batchBytes: number,
  server: { maxMessageSizeBytes?: number; maxWriteBatchSize?: number; maxBsonObjectSize?: number } = {},
): BatchLimits {
  const messageBytes = (server.maxMessageSizeBytes ?? MAX_MESSAGE_BYTES) - MESSAGE_OVERHEAD_BYTES;
  return {
    maxBytes: Math.max(1, Math.min(batchBytes, messageBytes)),
    maxDocuments: Math.max(1, server.maxWriteBatchSize ?? MAX_WRITE_BATCH_SIZE),
    maxDocumentBytes: server.maxBsonObjectSize ?? MAX_BSON_OBJECT_BYTES,
  };
}

export class Batcher {
  readonly #limits: BatchLimits;
  readonly #buffers: BatchBuffers;
  #buffer: Buffer | undefined;
  #used = 0;
  #count = 0;
  #lastStart = 0;

  /**
   * `buffers` lends the batch buffers (a worker's pool, shared by its partitions); by default
   * the batcher has a pool of its own holding one buffer.
   */
  constructor(limits: BatchLimits, buffers = new BatchBuffers(SECTION_ROOM_BYTES + limits.maxBytes, 1)) {
    if (!(limits.maxBytes > 0) || !(limits.maxDocuments > 0)) {
      throw new RangeError(`batch limits must be positive, got ${JSON.stringify(limits)}`);
    }
    this.#limits = limits;
    this.#buffers = buffers;
  }

  /** Documents waiting in the batch being filled. */
  get pendingDocuments(): number {
    return this.#count;
  }

  /** Whether a document of `size` bytes can join the batch being filled (an empty one takes any). */
  fits(size: number): boolean {
    return this.#count === 0 || (this.#used + size <= this.#limits.maxBytes && this.#count < this.#limits.maxDocuments);
  }

  /**
   * Copies in the document of `size` bytes at `start` of `source`; it must fit (`fits`), else
   * flush first. A new batch takes its buffer here, not at flush, so that a caller that writes
   * each flushed batch before adding more holds one buffer besides those being written.
   */
  add(source: Uint8Array, start: number, size: number): void {
    if (!this.fits(size)) throw new RangeError(`a document of ${size} bytes does not fit the batch being filled: flush it first`);
    checkDocument(size, start, source.byteLength, this.#limits.maxDocumentBytes ?? MAX_BSON_OBJECT_BYTES);
    this.#buffer ??= this.#buffers.acquire(SECTION_ROOM_BYTES + Math.max(size, this.#limits.maxBytes));
    const at = SECTION_ROOM_BYTES + this.#used;
    copyBytes(source, start, size, this.#buffer, at);
    this.#lastStart = this.#used;
    this.#used += size;
    this.#count++;
  }

  /**
   * Adds documents `starts[from]`, `starts[from + 1]`... of `source` while they fit, and returns
   * the index of the first one left out (`starts.length` when all went in: a full batch is
   * flushed, then the rest added). `source` is a read reply the caller owns and is done with once
   * this returns: the documents are first moved together inside it, over the array element
   * headers between them (`copyWithin`, no allocation), then copied into the batch in one piece,
   * instead of one allocating copy per document.
   */
  addDocuments(source: Uint8Array, starts: readonly number[], from: number): number {
    const runStart = starts[from];
    if (runStart === undefined) return from;
    const run = packDocuments(source, starts, from, this.#limits, this.#used, this.#count);
    if (run.bytes > 0) {
      // An empty batch takes any first document, however large (see `add`).
      this.#buffer ??= this.#buffers.acquire(SECTION_ROOM_BYTES + Math.max(run.bytes, this.#limits.maxBytes));
      copyBytes(source, runStart, run.bytes, this.#buffer, SECTION_ROOM_BYTES + this.#used);
      this.#lastStart = this.#used + run.lastStart;
      this.#used += run.bytes;
      this.#count += run.count;
    }
    return run.next;
  }

  /** Returns the batch being filled (undefined when empty) and starts a new one. */
  flush(): RawBatch | undefined {
    if (this.#count === 0 || this.#buffer === undefined) return undefined;
    const buffer = this.#buffer;
    const batch: RawBatch = {
      bytes: buffer.subarray(SECTION_ROOM_BYTES, SECTION_ROOM_BYTES + this.#used),
      count: this.#count,
      lastStart: this.#lastStart,
      buffer,
      checked: true,
    };
    this.#buffer = undefined;
    this.#used = 0;
    this.#count = 0;
    return batch;
  }

  /** Gives a written batch's buffer back for reuse (nothing may read the batch afterwards). */
  release(batch: RawBatch): void {
    this.#buffers.release(batch.buffer);
  }
}

/** Documents of a reply moved together by `packDocuments`. */
export interface PackedRun {
  /** Index of the first document left out (`starts.length` when all went in). */
  next: number;
  /** Their bytes, from `starts[from]` on, back to back. */
  bytes: number;
  count: number;
  /** Offset of the last one from `starts[from]`. */
  lastStart: number;
}

/**
 * Moves documents `starts[from]`, `starts[from + 1]`... of `source` together inside it, over the
 * array element headers between them (`copyWithin`, no allocation), while they fit a batch that
 * already holds `used` bytes in `count` documents (an empty batch takes any first document). Only
 * bytes from `starts[from]` on are touched: a run packed before it, still being written, is not.
 * Each document's length is checked on the way (`checkDocument`), so the batch goes out unwalked.
 */
export function packDocuments(
  source: Uint8Array,
  starts: readonly number[],
  from: number,
  limits: BatchLimits,
  used = 0,
  count = 0,
): PackedRun {
  const { maxBytes, maxDocuments } = limits;
  const largest = limits.maxDocumentBytes ?? MAX_BSON_OBJECT_BYTES;
  const runStart = starts[from];
  if (runStart === undefined) return { next: from, bytes: 0, count: 0, lastStart: 0 };
  let write = runStart;
  let lastStart = 0;
  let next = from;
  for (; next < starts.length; next++) {
    const start = starts[next]!;
    const size = readInt32LE(source, start);
    if (count > 0 && (used + size > maxBytes || count >= maxDocuments)) break;
    checkDocument(size, start, source.byteLength, largest);
    if (write !== start) source.copyWithin(write, start, start + size);
    lastStart = write - runStart;
    used += size;
    count++;
    write += size;
  }
  return { next, bytes: write - runStart, count: next - from, lastStart };
}

const bufferCopy = Buffer.prototype.copy;

/** `size` bytes of `source` from `start` into `target` at `at` (no view object per document when `source` is a Buffer). */
function copyBytes(source: Uint8Array, start: number, size: number, target: Buffer, at: number): void {
  if (Buffer.isBuffer(source)) bufferCopy.call(source, target, at, start, start + size);
  else target.set(source.subarray(start, start + size), at);
}

/** The offset of each document of a batch (a walk over their length prefixes). */
export function documentStarts(batch: RawBatch): number[] {
  const starts: number[] = [];
  const view = new DataView(batch.bytes.buffer, batch.bytes.byteOffset, batch.bytes.byteLength);
  for (let offset = 0; starts.length < batch.count; offset += view.getInt32(offset, true)) starts.push(offset);
  return starts;
}
