/**
 * How stored documents hold their bytes. Node's `Buffer.from`/`allocUnsafe` carve small buffers
 * out of shared 8 KiB pool slabs, so one long-lived document keeps a whole slab — and whatever
 * short-lived data shared it — alive (stored data measured 2.6× its size that way), while an
 * allocation of its own per document costs an ArrayBuffer each (slow to create, and it drives
 * garbage collection). Stored documents are therefore packed into slabs that hold nothing else.
 * A slab is freed when every document in it has been deleted or rewritten; rewrites go to the
 * current slab.
 */

/** Bytes per slab. */
const SLAB_BYTES = 256 * 1024;
/** Documents larger than this get an allocation of their own. */
const LARGE_DOCUMENT = 16 * 1024;

let slab = Buffer.allocUnsafeSlow(SLAB_BYTES);
let used = 0;

/** A copy of `bytes` in memory that only stored documents share (not a pool slice, not a view of a request). */
export function ownedCopy(bytes: Buffer): Buffer {
  const length = bytes.length;
  if (length > LARGE_DOCUMENT) {
    const out = Buffer.allocUnsafeSlow(length);
    bytes.copy(out);
    return out;
  }
  if (used + length > SLAB_BYTES) {
    slab = Buffer.allocUnsafeSlow(SLAB_BYTES);
    used = 0;
  }
  const out = slab.subarray(used, used + length);
  bytes.copy(out);
  used += length;
  return out;
}

/** Request buffers at least this large may hold stored documents themselves (see `sharesRequestMemory`). */
const SHARED_REQUEST_MIN_BYTES = 64 * 1024;

/**
 * Large requests are assembled in regions of this size (`assembleRequest`). V8 starts a major
 * garbage collection, a marking of the whole heap, each time the memory held in ArrayBuffers has
 * grown by 64 MB since the last one. A request buffer of its own per bulk insert (and the socket
 * chunks it was joined from) counted towards that, so a bulk load marked its ever larger heap
 * every ~32 MB of documents; a region counts once for many requests (bench/RESULTS.md, 2026-11-29).
 */
const REQUEST_REGION_BYTES = 256 * 1024 * 1024;

let region: Buffer | undefined;
let regionUsed = 0;
/** The regions' memory: a request assembled there may keep its documents (`sharesRequestMemory`). */
const regions = new WeakSet<ArrayBufferLike>();

/**
 * One buffer holding `chunks` (`total` bytes) back to back, as `Buffer.concat` would give: for a
 * large request, a piece of a region. A region's bytes are handed out once, never again: it is
 * freed when nothing views it any more (no stored document, no request being handled), so a
 * request never shares bytes with another.
 */
export function assembleRequest(chunks: readonly Buffer[], total: number): Buffer {
  if (total < SHARED_REQUEST_MIN_BYTES || total > REQUEST_REGION_BYTES / 4) return Buffer.concat(chunks, total);
  if (region === undefined || regionUsed + total > REQUEST_REGION_BYTES) {
    region = Buffer.allocUnsafeSlow(REQUEST_REGION_BYTES);
    regions.add(region.buffer);
    regionUsed = 0;
  }
  const out = region.subarray(regionUsed, regionUsed + total);
  let at = 0;
  for (const chunk of chunks) at += chunk.copy(out, at);
  regionUsed += total;
  return out;
}

/**
 * Whether documents of one request may be stored as views of the request's own memory instead of
 * copies: when they all lie in one large ArrayBuffer that holds little besides them (a bulk insert
 * arriving as a document sequence), or in a request region (`assembleRequest`), that memory is as
 * good a slab as ours (it is freed, like a slab, once every document in it is gone) and the copy,
 * a fifth of a bulk insert's CPU, is saved. Small requests come out of Node's shared pool slabs or
 * socket reads that hold other data: those documents are copied (`ownedCopy`).
 */
export function sharesRequestMemory(docs: readonly Buffer[]): boolean {
  const memory = docs[0]?.buffer;
  if (memory === undefined || memory.byteLength < SHARED_REQUEST_MIN_BYTES) return false;
  let bytes = 0;
  for (const doc of docs) {
    if (doc.buffer !== memory) return false;
    bytes += doc.length;
  }
  // At most a quarter more than the documents: message headers and the next message's first bytes.
  return regions.has(memory) || bytes * 1.25 >= memory.byteLength;
}

/** Whether two buffers view the same bytes (the same memory, offset and length), though they may be two view objects. */
export function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  return a.buffer === b.buffer && a.byteOffset === b.byteOffset && a.length === b.length;
}

/**
 * A Buffer made straight from memory, offset and length, as Node makes its own (a Uint8Array
 * subclass with Buffer's prototype: `Buffer.isBuffer` holds); `Buffer.from(memory, offset,
 * length)` checks its arguments first and was twice as slow.
 */
class BufferView extends Uint8Array {}
Object.setPrototypeOf(BufferView.prototype, Buffer.prototype);

/**
 * A stored document's bytes, kept as where they live (their memory, offset and length) rather
 * than as a view object: a view kept per document was a third of a bulk load's heap, and a bulk
 * load's time went to marking and copying that heap and to the kernel zeroing its fresh pages
 * (bench/RESULTS.md, 2026-11-30). `raw` makes a view when asked; a reply copies the bytes
 * straight from where they are (`copyTo`).
 */
export class StoredBytes {
  private memory: ArrayBufferLike;
  private offset: number;
  /** The document's size in bytes (`raw.length`, without making a view). */
  length: number;

  constructor(raw: Buffer) {
    this.memory = raw.buffer;
    this.offset = raw.byteOffset;
    this.length = raw.length;
  }

  get raw(): Buffer {
    return new BufferView(this.memory as ArrayBuffer, this.offset, this.length) as unknown as Buffer;
  }

  set raw(raw: Buffer) {
    this.memory = raw.buffer;
    this.offset = raw.byteOffset;
    this.length = raw.length;
  }

  /** Copies the bytes into `out` at `at` (through a view that dies at once). */
  copyTo(out: Uint8Array, at: number): void {
    out.set(new Uint8Array(this.memory, this.offset, this.length), at);
  }
}

/** A document of a cursor batch: its bytes, or a stored document whose bytes are copied when the reply is written. */
export type BatchDocument = Buffer | StoredBytes;

/** A batch document's bytes (a view, for a stored document). */
export function bytesOf(doc: BatchDocument): Buffer {
  return doc instanceof StoredBytes ? doc.raw : doc;
}
