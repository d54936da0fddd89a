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
