/**
 * Writes whose documents are already BSON: an `insert`, `update` or `delete` whose documents or
 * statements travel as an OP_MSG document sequence of the bytes Ferry holds (read from the source,
 * or built by the change-event write plan), through the driver's own `db.command`, so its server
 * selection, authentication, TLS and sessions apply (bench/RESULTS.md, "Copy: write path", has
 * the measurements). The driver has no public way to send pre-serialized documents; it carries
 * them internally with its `DocumentSequence` class (lib/cmap/commands.js), which `db.command`
 * passes through to the wire. This is the one place Ferry reaches for it; without it (another
 * driver version), statements are decoded type-faithfully and sent as an array, and the copy
 * decodes its batches and uses `insertMany` (`insertDecoded`).
 *
 * Every reply is read the same way (`WriteReply`): the count written, each statement's write
 * error, and the write concern error. The callers decide which errors they tolerate.
 */
import { deserialize } from 'bson';
import { MongoBulkWriteError, type Collection, type Db, type Document } from 'mongodb';
// The module the driver itself requires (Node's one module cache; in a bundled worker, the
// bundle's one copy of the driver), so the driver's `instanceof DocumentSequence` holds.
import * as driverCommands from 'mongodb/lib/cmap/commands.js';
import { TYPE_FAITHFUL } from '../bson/index.js';
import { MAJORITY } from './concerns.js';
import { isWriteConcernFailed } from './errors.js';

/** One statement the server refused. */
export interface ServerWriteError {
  /** Position of the statement in the command. */
  index: number;
  code: number;
  errmsg?: string;
}

/** What a write command's reply says. */
export interface WriteReply {
  /** Documents inserted, or statements matched/deleted. */
  n: number;
  writeErrors: ServerWriteError[];
  writeConcernError?: { code?: number; errmsg?: string };
}

export type WriteKind = 'insert' | 'update' | 'delete';

const SEQUENCE_FIELD: Record<WriteKind, string> = { insert: 'documents', update: 'updates', delete: 'deletes' };

/** The driver's internal document-sequence class, as far as Ferry uses it. */
interface DocumentSequence {
  push(document: unknown, serialized: Uint8Array): number;
  /** The whole section (kind byte, size, identifier, documents), as the message will carry it. */
  toBin(): Uint8Array;
}
type DocumentSequenceClass = new (field: string) => DocumentSequence;

/** The driver's `DocumentSequence`, or null when this driver version does not have it. */
export function driverDocumentSequence(): DocumentSequenceClass | null {
  const candidate: unknown = driverCommands.DocumentSequence;
  const prototype = (candidate as { prototype?: Partial<DocumentSequence> } | undefined)?.prototype;
  return typeof candidate === 'function' && typeof prototype?.push === 'function' && typeof prototype.toBin === 'function'
    ? (candidate as DocumentSequenceClass)
    : null;
}

/** Whether documents can travel as the bytes Ferry holds (else they are decoded first). */
export function rawWritesAvailable(): boolean {
  return driverDocumentSequence() !== null;
}

/**
 * Documents laid out back to back in `bytes`, with free room before them in the same `buffer`
 * (the copy's batches, src/copy/batcher.ts): the section header is written into that room, so the
 * driver copies the documents into the message once, and never into a section of their own first.
 */
export interface FramedDocuments {
  bytes: Uint8Array;
  buffer: Buffer;
}

const SECTION_IDENTIFIER = Buffer.from('documents\0', 'latin1');

/** Bytes of room a FramedDocuments needs before its documents: kind 1, int32 size, the identifier as a C string. */
export const SECTION_HEADER_BYTES = 1 + 4 + SECTION_IDENTIFIER.length;

type FramedSequenceClass = new (documents: FramedDocuments) => DocumentSequence;

let framedSequence: FramedSequenceClass | undefined;

function framedSequenceClass(Base: DocumentSequenceClass): FramedSequenceClass {
  framedSequence ??= class FramedDocumentSequence extends Base {
    readonly #section: Uint8Array;

    constructor(documents: FramedDocuments) {
      super('documents');
      const room = documents.bytes.byteOffset - documents.buffer.byteOffset;
      if (room < SECTION_HEADER_BYTES || documents.bytes.buffer !== documents.buffer.buffer) {
        throw new RangeError(`framed documents need ${SECTION_HEADER_BYTES} bytes of room before them, they have ${room}`);
      }
      const start = room - SECTION_HEADER_BYTES;
      const section = documents.buffer.subarray(start, room + documents.bytes.byteLength);
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

/** The sequence (or, without the driver's class, the decoded array) for a command's document field. */
function sequenceOf(field: string, statements: readonly Uint8Array[] | FramedDocuments): Document[] {
  const Sequence = driverDocumentSequence();
  if (!Array.isArray(statements)) {
    if (Sequence === null) throw new RangeError('framed documents need the driver’s DocumentSequence: check rawWritesAvailable() first');
    return new (framedSequenceClass(Sequence))(statements as FramedDocuments) as unknown as Document[];
  }
  const list = statements as readonly Uint8Array[];
  if (Sequence === null) return list.map((statement) => deserialize(statement, TYPE_FAITHFUL));
  const sequence = new Sequence(field);
  for (const statement of list) sequence.push(statement, statement);
  return sequence as unknown as Document[];
}

function readReply(reply: Document): WriteReply {
  const result: WriteReply = { n: Number(reply.n ?? 0), writeErrors: (reply.writeErrors ?? []) as ServerWriteError[] };
  if (reply.writeConcernError !== undefined) result.writeConcernError = reply.writeConcernError as WriteReply['writeConcernError'];
  return result;
}

/**
 * Sends an unordered `kind` command on `db.coll` whose documents (`insert`) or statements
 * (`update`, `delete`) are `statements`, with majority write concern.
 */
export async function writeRaw(
  db: Db,
  kind: WriteKind,
  coll: string,
  statements: readonly Uint8Array[] | FramedDocuments,
  options: { bypassDocumentValidation?: boolean } = {},
): Promise<WriteReply> {
  const field = SEQUENCE_FIELD[kind];
  const reply = await db.command({
    [kind]: coll,
    [field]: sequenceOf(field, statements),
    ordered: false,
    ...(options.bypassDocumentValidation === true ? { bypassDocumentValidation: true } : {}),
    writeConcern: MAJORITY,
  });
  return readReply(reply);
}

/**
 * Inserts decoded documents with `insertMany` (unordered, validation bypassed, majority), read as
 * a WriteReply. The write concern error of a failed `insertMany` is wherever the driver put it:
 * `err` (a write concern error alone, reported after the batch), the result's `writeConcernErrors`
 * (next to write errors, which the driver reports first), or, when the server's reply failed on
 * write concern, only the error's own code and message (driver 7.9 builds the error from them, with
 * no `err` and no write errors). Anything else (the network) is thrown: nothing says what was written.
 */
export async function insertDecoded(collection: Collection, documents: Document[]): Promise<WriteReply> {
  try {
    const result = await collection.insertMany(documents, { ordered: false, bypassDocumentValidation: true, writeConcern: MAJORITY });
    return { n: result.insertedCount, writeErrors: [] };
  } catch (error) {
    if (!(error instanceof MongoBulkWriteError)) throw error;
    const writeErrors = (Array.isArray(error.writeErrors) ? error.writeErrors : [error.writeErrors]).map((e) => ({
      index: e.index,
      code: e.code,
      errmsg: e.errmsg,
    }));
    const reply: WriteReply = { n: error.insertedCount, writeErrors };
    const concern = bulkWriteConcernError(error, writeErrors.length);
    if (concern !== undefined) reply.writeConcernError = concern;
    if (writeErrors.length === 0 && concern === undefined) throw error;
    return reply;
  }
}

function bulkWriteConcernError(error: MongoBulkWriteError, writeErrorCount: number): WriteReply['writeConcernError'] {
  if (error.err !== undefined) return { code: error.err.code, errmsg: error.err.errmsg };
  const result = error.result as { getWriteConcernError?: () => { code?: number; errmsg?: string } | undefined } | undefined;
  const fromResult = typeof result?.getWriteConcernError === 'function' ? result.getWriteConcernError() : undefined;
  if (fromResult !== undefined) return { code: fromResult.code, errmsg: fromResult.errmsg };
  if (writeErrorCount === 0 && isWriteConcernFailed(error)) return { code: error.code as number, errmsg: error.message };
  return undefined;
}
