/**
 * Writing one batch of raw documents to a destination collection: an unordered `insert` with
 * document validation bypassed and majority write concern. Duplicate-key errors (11000) are
 * tolerated: they come from a range copied again after a restart, whose documents are already
 * there. Any other write error fails the batch with `CopyWriteRefused`.
 *
 * Two ways to send the batch (see bench/RESULTS.md, "Copy: write path", for the measurements):
 * - `raw` (default): the bytes read from the source go out as they are, as the `documents`
 *   document sequence of an OP_MSG `insert`, through the driver's own `db.command` (so its
 *   server selection, authentication, TLS and sessions apply). The driver has no public way to
 *   send pre-serialized documents; it carries them internally with its `DocumentSequence` class
 *   (lib/cmap/commands.js), which `db.command` passes through to the wire. This path uses that
 *   class when the installed driver has it, and falls back to `decode` otherwise.
 * - `decode`: each document is deserialized type-faithfully (`promoteValues: false`,
 *   `bsonRegExp: true`, UTF-8 unchecked) and re-serialized by `insertMany`. It costs CPU per
 *   byte, and BSON that has no JavaScript value (the deprecated `undefined`, DBPointer,
 *   duplicate field names) cannot survive it.
 */
import { createRequire } from 'node:module';
import { deserialize } from 'bson';
import { MongoBulkWriteError, type Collection, type Db, type Document } from 'mongodb';
import { readId, TYPE_FAITHFUL } from '../bson/index.js';
import { documentStarts, type RawBatch } from './batcher.js';
import { CopyWriteRefused } from '../errors/errors.js';

export type WritePath = 'raw' | 'decode';

/** What one batch write did. */
export interface WriteOutcome {
  /** Documents inserted. */
  inserted: number;
  /** Documents already present (duplicate `_id` from a re-copied range). */
  duplicates: number;
}

const DUPLICATE_KEY = 11000;
/** A checkpoint must never cover a write that a failover of the destination could roll back. */
const WRITE_CONCERN = { w: 'majority' } as const;

interface ServerWriteError {
  index: number;
  code: number;
  errmsg?: string;
}

/**
 * Counts tolerated duplicates; throws for the first other error, naming the document by its
 * position and size only (its contents are user data).
 */
function checkWriteErrors(
  namespace: string,
  batch: RawBatch,
  errors: readonly ServerWriteError[],
  writeConcernError: { code?: number; errmsg?: string } | undefined,
): number {
  let duplicates = 0;
  for (const error of errors) {
    if (error.code === DUPLICATE_KEY) {
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
  if (writeConcernError !== undefined) {
    throw new CopyWriteRefused(
      `insert into ${namespace}: write concern not satisfied: code ${writeConcernError.code}: ${writeConcernError.errmsg ?? ''}`,
      { serverCode: writeConcernError.code },
    );
  }
  return duplicates;
}

/** The driver's internal document-sequence class, as far as this module uses it. */
interface DocumentSequence {
  push(document: unknown, serialized: Uint8Array): number;
  /** The whole section (kind byte, size, identifier, documents), as the message will carry it. */
  toBin(): Uint8Array;
}
type DocumentSequenceClass = new (field: string) => DocumentSequence;

let documentSequenceClass: DocumentSequenceClass | null | undefined;

/** The driver's `DocumentSequence`, or null when this driver version does not have it. */
export function driverDocumentSequence(): DocumentSequenceClass | null {
  if (documentSequenceClass === undefined) {
    try {
      // The same module instance the driver uses (one require cache), so its `instanceof` check holds.
      const commands = createRequire(import.meta.url)('mongodb/lib/cmap/commands.js') as { DocumentSequence?: unknown };
      const candidate = commands.DocumentSequence;
      const prototype = (candidate as { prototype?: Partial<DocumentSequence> } | undefined)?.prototype;
      documentSequenceClass =
        typeof candidate === 'function' && typeof prototype?.push === 'function' && typeof prototype.toBin === 'function'
          ? (candidate as DocumentSequenceClass)
          : null;
    } catch {
      documentSequenceClass = null;
    }
  }
  return documentSequenceClass;
}

/** The `documents` section's header: kind 1, int32 size, the identifier as a C string. */
const SECTION_IDENTIFIER = Buffer.from('documents\0', 'latin1');
const SECTION_HEADER_BYTES = 1 + 4 + SECTION_IDENTIFIER.length;

/**
 * A `DocumentSequence` whose section is already laid out: the batch's documents with the section
 * header written into the room the batcher left before them. The driver asks a sequence for its
 * section (`toBin`) and copies it into the message; the class's own `toBin` would first copy the
 * batch into a section of its own (one more copy of every byte, into fresh memory).
 */
type FramedSequenceClass = new (batch: RawBatch) => DocumentSequence;

let framedSequence: FramedSequenceClass | undefined;

function framedSequenceClass(Base: DocumentSequenceClass): FramedSequenceClass {
  framedSequence ??= class FramedDocumentSequence extends Base {
    readonly #section: Uint8Array;

    constructor(batch: RawBatch) {
      super('documents');
      const room = batch.bytes.byteOffset - batch.buffer.byteOffset;
      if (room < SECTION_HEADER_BYTES || batch.bytes.buffer !== batch.buffer.buffer) {
        throw new RangeError(`a raw batch needs ${SECTION_HEADER_BYTES} bytes of room before its documents, it has ${room}`);
      }
      const start = room - SECTION_HEADER_BYTES;
      const section = batch.buffer.subarray(start, room + batch.bytes.byteLength);
      section[0] = 1;
      section.writeInt32LE(section.length - 1, 1);
      SECTION_IDENTIFIER.copy(section, 5);
      this.#section = section;
    }

    override toBin(): Uint8Array {
      return this.#section;
    }
  };
  return framedSequence;
}

/** The write path actually available for a wanted one (`raw` needs the driver's class). */
export function availableWritePath(wanted: WritePath): WritePath {
  return wanted === 'raw' && driverDocumentSequence() === null ? 'decode' : wanted;
}

export interface BatchWriter {
  readonly path: WritePath;
  write(batch: RawBatch): Promise<WriteOutcome>;
}

class RawBatchWriter implements BatchWriter {
  readonly path = 'raw';
  readonly #db: Db;
  readonly #collection: string;
  readonly #namespace: string;
  readonly #Sequence: FramedSequenceClass;

  constructor(db: Db, collection: string, Sequence: DocumentSequenceClass) {
    this.#db = db;
    this.#collection = collection;
    this.#namespace = `${db.databaseName}.${collection}`;
    this.#Sequence = framedSequenceClass(Sequence);
  }

  async write(batch: RawBatch): Promise<WriteOutcome> {
    // The batch's documents are already back to back, as a document sequence holds them.
    const sequence = new this.#Sequence(batch);
    const reply = await this.#db.command({
      insert: this.#collection,
      documents: sequence as unknown as Document[],
      ordered: false,
      bypassDocumentValidation: true,
      writeConcern: WRITE_CONCERN,
    });
    const duplicates = checkWriteErrors(
      this.#namespace,
      batch,
      (reply.writeErrors ?? []) as ServerWriteError[],
      reply.writeConcernError as { code?: number; errmsg?: string } | undefined,
    );
    return { inserted: Number(reply.n ?? 0), duplicates };
  }
}

/** `deserialize` options keeping every type the decode path can keep. */
const DECODE_OPTIONS = Object.freeze({ ...TYPE_FAITHFUL, validation: { utf8: false as const } });

class DecodingBatchWriter implements BatchWriter {
  readonly path = 'decode';
  readonly #collection: Collection;
  readonly #namespace: string;

  constructor(collection: Collection) {
    this.#collection = collection;
    this.#namespace = collection.namespace;
  }

  async write(batch: RawBatch): Promise<WriteOutcome> {
    const decoded = documentStarts(batch).map((start) =>
      deserialize(batch.bytes.subarray(start), { ...DECODE_OPTIONS, allowObjectSmallerThanBufferSize: true }),
    );
    try {
      const result = await this.#collection.insertMany(decoded, {
        ordered: false,
        bypassDocumentValidation: true,
        writeConcern: WRITE_CONCERN,
      });
      return { inserted: result.insertedCount, duplicates: 0 };
    } catch (error) {
      if (!(error instanceof MongoBulkWriteError)) throw error;
      const writeErrors = (Array.isArray(error.writeErrors) ? error.writeErrors : [error.writeErrors]).map((e) => ({
        index: e.index,
        code: e.code,
        errmsg: e.errmsg,
      }));
      const writeConcernError = bulkWriteConcernError(error, writeErrors.length);
      // Neither write errors nor a write concern error: the insert itself failed (e.g. the
      // network), nothing says what was written.
      if (writeErrors.length === 0 && writeConcernError === undefined) throw error;
      const duplicates = checkWriteErrors(this.#namespace, batch, writeErrors, writeConcernError);
      return { inserted: error.insertedCount, duplicates };
    }
  }
}

const WRITE_CONCERN_FAILED = 64;

/**
 * The write concern error an `insertMany` failure carries, wherever the driver put it: `err` (a
 * write concern error alone, reported after the batch), the result's `writeConcernErrors` (next to
 * write errors, which the driver reports first), or, when the server's reply failed on write
 * concern, only the error's own code and message (driver 7.9 builds the error from them, with no
 * `err` and no write errors). A batch whose write concern failed may not survive a failover of the
 * destination: it must fail, never pass as tolerated duplicates.
 */
function bulkWriteConcernError(error: MongoBulkWriteError, writeErrorCount: number): { code?: number; errmsg?: string } | undefined {
  if (error.err !== undefined) return { code: error.err.code, errmsg: error.err.errmsg };
  const result = error.result as { getWriteConcernError?: () => { code?: number; errmsg?: string } | undefined } | undefined;
  const fromResult = typeof result?.getWriteConcernError === 'function' ? result.getWriteConcernError() : undefined;
  if (fromResult !== undefined) return { code: fromResult.code, errmsg: fromResult.errmsg };
  if (writeErrorCount === 0 && error.code === WRITE_CONCERN_FAILED) return { code: error.code, errmsg: error.message };
  return undefined;
}

/** A writer for one destination collection on the wanted path (see `availableWritePath`). */
export function createBatchWriter(db: Db, collection: string, path: WritePath): BatchWriter {
  const Sequence = path === 'raw' ? driverDocumentSequence() : null;
  if (Sequence !== null) return new RawBatchWriter(db, collection, Sequence);
  return new DecodingBatchWriter(db.collection(collection));
}

/** The `_id` of the last document of a batch (a cheap scan of its bytes). */
export function lastIdOf(batch: RawBatch): unknown {
  return readId(batch.bytes, batch.lastStart);
}
