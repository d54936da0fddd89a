/**
 * A read cursor that hands out each reply's documents as offsets into the reply, without one
 * JavaScript object per document: `find` and `getMore` run through the driver's `db.command`
 * with `raw: true` (the driver decodes the reply's top level and leaves `cursor` as bytes), in one
 * explicit session (a cursor must be continued in the session that opened it), and the
 * `firstBatch`/`nextBatch` array is walked with the raw BSON scanner.
 *
 * Compared with the driver's raw `FindCursor` (a view and an on-demand document object per
 * document), this keeps the copy's garbage per reply, not per document, and lets the batcher copy
 * documents out so that no reply outlives its turn (see batcher.ts).
 */
import { Long } from 'bson';
import type { ClientSession, Db, Document, MongoClient } from 'mongodb';
import { BsonType, decodeValue, findElement } from '../bson/index.js';
import { readInt32LE } from '../bson/scan.js';
import { MalformedCursorReply } from '../errors/errors.js';

/** The documents of one reply: document `i` starts at `starts[i]` in `buffer` (its size is its first 4 bytes). */
export interface ReplyDocuments {
  buffer: Uint8Array;
  starts: number[];
}

/** What `find` reads: everything after `filter` in the command (`hint`, `min`, `max`...). */
export interface RawFindOptions {
  hint: Document;
  /**
   * `{_id: 1}` for a read whose position is checkpointed by `_id`: through mongos the shards'
   * results are otherwise interleaved, whatever the hint, and a checkpoint would claim documents
   * of another shard that are still to come.
   */
  sort?: Document;
  min?: Document;
  max?: Document;
  /** Documents per reply. */
  batchSize: number;
}

const ZERO = Long.fromNumber(0);

export class RawCursor {
  readonly #db: Db;
  readonly #collection: string;
  readonly #options: RawFindOptions;
  readonly #session: ClientSession;
  #id: Long | undefined;

  constructor(client: MongoClient, db: string, collection: string, options: RawFindOptions) {
    this.#db = client.db(db);
    this.#collection = collection;
    this.#options = options;
    this.#session = client.startSession();
  }

  /** The next reply's documents; undefined once the cursor is exhausted. */
  async next(): Promise<ReplyDocuments | undefined> {
    if (this.#id !== undefined && this.#id.isZero()) return undefined;
    const command =
      this.#id === undefined
        ? { find: this.#collection, filter: {}, ...this.#options }
        : { getMore: this.#id, collection: this.#collection, batchSize: this.#options.batchSize };
    const reply = await this.#db.command(command, { raw: true, session: this.#session });
    const cursor = reply.cursor as Uint8Array | undefined;
    if (cursor === undefined) throw new MalformedCursorReply(`${Object.keys(command)[0]} replied without a cursor`);
    const id = findElement(cursor, 'id');
    const idValue = id === undefined ? 0 : decodeValue(cursor, id);
    this.#id = Long.isLong(idValue) ? idValue : Long.fromNumber(Number(idValue));
    const batch = findElement(cursor, 'firstBatch') ?? findElement(cursor, 'nextBatch');
    if (batch === undefined || batch.type !== BsonType.array) throw new MalformedCursorReply('cursor reply has no batch array');
    return { buffer: cursor, starts: batchDocumentStarts(cursor, batch.valueOffset, batch.valueEnd) };
  }

  /** Kills the server cursor if it is still open, and ends the session. */
  async close(): Promise<void> {
    try {
      if (this.#id !== undefined && !this.#id.isZero()) {
        await this.#db.command({ killCursors: this.#collection, cursors: [this.#id] }, { session: this.#session });
      }
    } catch {
      // The cursor dies with its session or times out on the server.
    } finally {
      this.#id = ZERO;
      await this.#session.endSession().catch(() => undefined);
    }
  }
}

/**
 * Where each document of a cursor batch (the BSON array at `offset`, ending at `end`) starts. A
 * walk made for this one shape, a reply's thousands of embedded documents: each element must be
 * a document whose length fits the array and whose last byte is its terminator; the documents'
 * contents are not looked at (the destination checks what it stores).
 */
export function batchDocumentStarts(buf: Uint8Array, offset: number, end: number): number[] {
  const starts: number[] = [];
  const last = end - 1;
  if (end - offset < 5 || readInt32LE(buf, offset) !== end - offset || buf[last] !== 0) {
    throw new MalformedCursorReply('the cursor batch array is malformed');
  }
  let p = offset + 4;
  while (p < last) {
    if (buf[p] !== BsonType.document) throw new MalformedCursorReply('a batch element is not a document');
    // The name is the element's index in decimal digits, then NUL.
    let start = p + 1;
    while (start < last && buf[start] !== 0) start++;
    start++;
    const size = start + 4 <= last ? readInt32LE(buf, start) : -1;
    if (size < 5 || start + size > last || buf[start + size - 1] !== 0) {
      throw new MalformedCursorReply(`a batch document at offset ${start} does not fit the reply`);
    }
    starts.push(start);
    p = start + size;
  }
  if (p !== last) throw new MalformedCursorReply('the cursor batch array ends inside a document');
  return starts;
}

/** Size of the document at `start` (its int32 length prefix). */
export function documentSize(buffer: Uint8Array, start: number): number {
  return readInt32LE(buffer, start);
}
