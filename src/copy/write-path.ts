/**
 * Writing one batch of raw documents to a destination collection: an unordered `insert` with
 * document validation bypassed and majority write concern. Duplicate-key errors are tolerated:
 * they come from a range copied again after a restart, whose documents are already there. Any
 * other write error fails the batch with `CopyWriteRefused`.
 *
 * Two ways to send the batch (see bench/RESULTS.md, "Copy: write path", for the measurements):
 * - `raw`: the bytes read from the source go out as they are, as the document sequence
 *   of an OP_MSG `insert` (src/cluster/raw-writes.ts), framed in the room the batcher left before
 *   them; when the installed driver cannot send pre-serialized documents, `decode` is used instead.
 * - `wire` (default where it can serve): like `raw`, but on Ferry's own connections to the destination's primary
 *   (src/cluster/wire-writes.ts): the message is framed once and written as [header, batch] in one
 *   vectored write, skipping the driver's two copies of the batch. Authentication (SCRAM), TLS,
 *   the primary's address (from the driver), retryable writes and write concern errors are kept;
 *   where it cannot keep them (not a replica set, another mechanism, unknown TLS options) the
 *   `raw` path serves. It also takes batches that are slices of a read reply (`shared`, from the
 *   `wire` read path): their section header goes out as a buffer of its own.
 * - `decode`: each document is deserialized type-faithfully (`promoteValues: false`,
 *   `bsonRegExp: true`, UTF-8 unchecked) and re-serialized by `insertMany`. It costs CPU per
 *   byte, and BSON that has no JavaScript value (the deprecated `undefined`, DBPointer,
 *   duplicate field names) cannot survive it.
 */
import { deserialize } from 'bson';
import type { Db } from 'mongodb';
import { readId, TYPE_FAITHFUL } from '../bson/index.js';
import { isDuplicateKey } from '../cluster/errors.js';
import { insertDecoded, rawWritesAvailable, writeRaw, type WriteReply } from '../cluster/raw-writes.js';
import { WireUnsupported, wireWriterOf } from '../cluster/wire-writes.js';
import type { WritePath } from '../config/settings.js';
import { CopyWriteRefused } from '../errors/errors.js';
import { documentStarts, SECTION_ROOM_BYTES, type RawBatch } from './batcher.js';

/** What one batch write did. */
export interface WriteOutcome {
  /** Documents inserted. */
  inserted: number;
  /** Documents already present (duplicate `_id` from a re-copied range). */
  duplicates: number;
}

/**
 * Counts tolerated duplicates; throws for the first other error, naming the document by its
 * position and size only (its contents are user data). A batch whose write concern failed may not
 * survive a failover of the destination: it fails, never passes as tolerated duplicates.
 */
function checkReply(namespace: string, batch: RawBatch, reply: WriteReply): WriteOutcome {
  let duplicates = 0;
  for (const error of reply.writeErrors) {
    if (isDuplicateKey(error)) {
      duplicates++;
      continue;
    }
    const start = documentStarts(batch)[error.index];
    const size = start === undefined ? undefined : new DataView(batch.bytes.buffer, batch.bytes.byteOffset + start, 4).getInt32(0, true);
    throw new CopyWriteRefused(
      `insert into ${namespace} refused document #${error.index} of a batch of ${batch.count}` +
        `${size === undefined ? '' : ` (${size} bytes)`}: code ${error.code}: ${error.errmsg ?? 'no message'}`,
      { serverCode: error.code },
    );
  }
  const concern = reply.writeConcernError;
  if (concern !== undefined) {
    throw new CopyWriteRefused(`insert into ${namespace}: write concern not satisfied: code ${concern.code}: ${concern.errmsg ?? ''}`, {
      serverCode: concern.code,
    });
  }
  return { inserted: reply.n, duplicates };
}

/** The write path actually available for a wanted one (`raw` needs the driver to send bytes as they are). */
export function availableWritePath(wanted: WritePath): WritePath {
  return wanted !== 'decode' && !rawWritesAvailable() ? 'decode' : wanted;
}

export interface BatchWriter {
  readonly path: WritePath;
  write(batch: RawBatch): Promise<WriteOutcome>;
  /**
   * Whether batches that are slices of a shared buffer (`RawBatch.shared`) go out as they are:
   * the `wire` path serves this destination. (Any path takes them; the others copy them first.)
   */
  takesSharedBatches(): Promise<boolean>;
}

/** `deserialize` options keeping every type the decode path can keep. */
const DECODE_OPTIONS = Object.freeze({ ...TYPE_FAITHFUL, validation: { utf8: false as const }, allowObjectSmallerThanBufferSize: true });

/** A writer for one destination collection on the wanted path (see `availableWritePath`). */
export function createBatchWriter(db: Db, collection: string, wanted: WritePath): BatchWriter {
  let path = availableWritePath(wanted);
  const namespace = `${db.databaseName}.${collection}`;
  const wire = path === 'wire' ? wireWriterOf(db.client) : undefined;
  return {
    get path() {
      return path;
    },
    async takesSharedBatches() {
      if (path !== 'wire') return false;
      if ((await wire!.unsupported()) === undefined) return true;
      path = 'raw';
      return false;
    },
    async write(batch) {
      if (path === 'wire') {
        try {
          if ((await wire!.unsupported()) === undefined) {
            return checkReply(namespace, batch, await wire!.insert(db.databaseName, collection, batch));
          }
        } catch (error) {
          if (!(error instanceof WireUnsupported)) throw error;
        }
        path = 'raw'; // the driver serves this client from now on
      }
      if (path === 'raw') {
        // The batch's documents are already back to back, as a document sequence holds them (a
        // shared slice gets the room for its header in a copy).
        const framed = batch.shared === true ? framedCopy(batch) : batch;
        return checkReply(namespace, batch, await writeRaw(db, 'insert', collection, framed, { bypassDocumentValidation: true }));
      }
      const decoded = documentStarts(batch).map((start) => deserialize(batch.bytes.subarray(start), DECODE_OPTIONS));
      return checkReply(namespace, batch, await insertDecoded(db.collection(collection), decoded));
    },
  };
}

/** A shared batch's documents in a buffer of their own, with room before them to frame them. */
function framedCopy(batch: RawBatch): RawBatch {
  const buffer = Buffer.allocUnsafe(SECTION_ROOM_BYTES + batch.bytes.byteLength);
  buffer.set(batch.bytes, SECTION_ROOM_BYTES);
  return { ...batch, buffer, bytes: buffer.subarray(SECTION_ROOM_BYTES), shared: false };
}

/** The `_id` of the last document of a batch (a cheap scan of its bytes). */
export function lastIdOf(batch: RawBatch): unknown {
  return readId(batch.bytes, batch.lastStart);
}
