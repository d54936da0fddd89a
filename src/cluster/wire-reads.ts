/**
 * The copy's range reads on Ferry's own wire connections to a replica set's primary (the `wire`
 * read path, src/copy/partition-copier.ts): `find` and `getMore` go out as OP_MSG and each reply
 * is received whole into a buffer the caller lends (src/cluster/wire-connection.ts: on plain TCP
 * the kernel writes into it directly), where the driver allocates a buffer per socket chunk and
 * concatenates them into a reply of its own. The reply is read where it lies: its top level and
 * `cursor` are walked as bytes (src/bson/scan.ts), the documents never leave the buffer.
 *
 * It reads as the driver path does (src/cluster/raw-cursor.ts): from the primary, with no read
 * concern, the same `find` (hint, sort, min/max, batchSize). A cursor needs no session: it is not
 * opened in one, so any connection of the pool may continue it. A refusal is the server's own
 * MongoServerError (CursorNotFound, QueryPlanKilled, NotWritablePrimary... as the driver throws
 * them, read by the same predicates), a broken connection a MongoNetworkError; a reply Ferry cannot
 * read is MalformedCursorReply. A reply saying the server is no longer primary, or a broken
 * connection, makes the pool ask the driver for the primary again.
 */
import { deserialize, Long, type Document, type Timestamp } from 'bson';
import { MongoServerError } from 'mongodb';
import { findElement, decodeValue, BsonType } from '../bson/index.js';
import { readInt32LE } from '../bson/scan.js';
import type { Namespace } from '../domain/namespaces.js';
import { MalformedCursorReply } from '../errors/errors.js';
import { OP_MSG } from './op-msg.js';
import { batchDocumentStarts, readCursor, type RawFindOptions, type ReplyDocuments } from './raw-cursor.js';
import type { WirePool } from './wire-connection.js';
import type { BatchBuffers } from './batch-buffers.js';

/** Offset of the body document in an OP_MSG whose first section is the body (kind 0). */
const BODY_OFFSET = 21;
const CHECKSUM_PRESENT = 1;
const MORE_TO_COME = 2;

/** One reply of a wire cursor: its documents, as views of `message`, and the id it leaves. */
export interface WireCursorReply extends ReplyDocuments {
  /** The whole reply: `into`, or a buffer of its own when the reply was larger. */
  message: Buffer;
  /** The `cursor` sub-document (`buffer` is a view of it in `message`). */
  buffer: Buffer;
  id: Long;
  collection?: string;
  /** The reply's `operationTime`, when it has one (a replica set's member reports it). */
  operationTime?: Timestamp;
}

/**
 * Reads a `find`/`getMore` reply in place: the body's `ok` (0: the server's error is thrown, as
 * the driver throws it), then `cursor`'s id, namespace and the start of each batch document.
 */
export function parseCursorReply(message: Buffer): WireCursorReply {
  if (message.length < BODY_OFFSET + 5 || message.readInt32LE(0) !== message.length) {
    throw new MalformedCursorReply(`a reply of ${message.length} bytes does not hold one message`);
  }
  if (message.readInt32LE(12) !== OP_MSG) throw new MalformedCursorReply(`expected OP_MSG (2013), got opCode ${message.readInt32LE(12)}`);
  const flags = message.readUInt32LE(16);
  if ((flags & MORE_TO_COME) !== 0 || message[20] !== 0) throw new MalformedCursorReply('the reply does not start with its body');
  const end = (flags & CHECKSUM_PRESENT) !== 0 ? message.length - 4 : message.length;
  const bodyEnd = BODY_OFFSET + readInt32LE(message, BODY_OFFSET);
  if (bodyEnd > end) throw new MalformedCursorReply('the reply body does not fit the message');
  const body = message.subarray(BODY_OFFSET, bodyEnd);
  const ok = findElement(body, 'ok');
  if (ok === undefined || Number(decodeValue(body, ok)) !== 1) {
    throw new MongoServerError(deserialize(body) as MongoServerError['errorResponse']);
  }
  const cursorElement = findElement(body, 'cursor');
  if (cursorElement === undefined || cursorElement.type !== BsonType.document) throw new MalformedCursorReply('the reply has no cursor');
  const cursor = body.subarray(cursorElement.valueOffset, cursorElement.valueEnd);
  const state = readCursor(cursor);
  const reply: WireCursorReply = {
    message,
    buffer: cursor,
    starts: batchDocumentStarts(cursor, state.batch.valueOffset, state.batch.valueEnd),
    id: state.id,
  };
  if (state.collection !== undefined) reply.collection = state.collection;
  const time = findElement(body, 'operationTime');
  if (time?.type === BsonType.timestamp) reply.operationTime = decodeValue(body, time) as Timestamp;
  return reply;
}

/** A `find` on the primary over wire connections, its replies received into buffers the caller lends. */
export class WireCursor {
  readonly #pool: WirePool;
  readonly #db: string;
  readonly #open: Document;
  readonly #batchSize: number;
  #collection: string;
  #id: Long | undefined;

  private constructor(pool: WirePool, db: string, open: Document, batchSize: number) {
    this.#pool = pool;
    this.#db = db;
    this.#open = open;
    this.#batchSize = batchSize;
    this.#collection = open.find as string;
  }

  /** A `find` of every document of `ns` within `options`' bounds (as RawCursor.find). */
  static find(pool: WirePool, ns: Namespace, options: RawFindOptions): WireCursor {
    return new WireCursor(pool, ns.db, { find: ns.coll, filter: {}, ...options }, options.batchSize);
  }

  /** Whether the server has closed the cursor (every document read). */
  get exhausted(): boolean {
    return this.#id !== undefined && this.#id.isZero();
  }

  /** The next reply, received into `into` (or a larger buffer of its own); undefined once exhausted. */
  async next(into: Buffer): Promise<WireCursorReply | undefined> {
    if (this.exhausted) return undefined;
    const command = this.#id === undefined ? this.#open : { getMore: this.#id, collection: this.#collection, batchSize: this.#batchSize };
    const connection = await this.#pool.checkOut();
    let reply: WireCursorReply;
    try {
      reply = parseCursorReply(await connection.request(this.#db, command, [], into));
    } catch (error) {
      this.#pool.checkInAfter(connection, error);
      throw error;
    }
    this.#pool.checkIn(connection);
    this.#id = reply.id;
    if (reply.collection !== undefined) this.#collection = reply.collection;
    return reply;
  }

  /**
   * The next reply, received into a buffer `buffers` lends (undefined once exhausted). `lent` is
   * that buffer, the caller's to release once nothing reads the reply; absent when the reply was
   * larger and came in a buffer of its own (the lent one is then released here).
   */
  async nextLent(buffers: BatchBuffers): Promise<{ reply: WireCursorReply; lent?: Buffer } | undefined> {
    if (this.exhausted) return undefined;
    const into = buffers.acquire();
    let reply: WireCursorReply | undefined;
    try {
      reply = await this.next(into);
    } catch (error) {
      buffers.release(into);
      throw error;
    }
    if (reply !== undefined && reply.message.buffer === into.buffer) return { reply, lent: into };
    buffers.release(into);
    return reply === undefined ? undefined : { reply };
  }

  /** Kills the server cursor if it is still open (a failure is left to the server's cursor timeout). */
  async close(): Promise<void> {
    const id = this.#id;
    this.#id = Long.ZERO;
    if (id === undefined || id.isZero()) return;
    try {
      const connection = await this.#pool.checkOut();
      try {
        await connection.command(this.#db, { killCursors: this.#collection, cursors: [id] });
        this.#pool.checkIn(connection);
      } catch (error) {
        this.#pool.checkInAfter(connection, error);
      }
    } catch {
      // The cursor times out on the server.
    }
  }
}

/** Bounds of one read batch, in bytes: big enough to amortize round trips, small next to 16 MiB replies. */
const MIN_READ_BATCH_BYTES = 1024 * 1024;
const MAX_READ_BATCH_BYTES = 16 * 1024 * 1024;
const MAX_READ_BATCH_DOCUMENTS = 100_000;

/** Documents per `find`/`getMore` reply of a range read (the copy's partitions) whose documents average `averageDocumentBytes`. */
export function readBatchSize(averageDocumentBytes: number, batchBytes: number): number {
  const bytes = Math.min(MAX_READ_BATCH_BYTES, Math.max(MIN_READ_BATCH_BYTES, batchBytes));
  const average = averageDocumentBytes > 0 ? averageDocumentBytes : 1024;
  return Math.max(1, Math.min(MAX_READ_BATCH_DOCUMENTS, Math.ceil(bytes / average)));
}

/**
 * Bytes of a buffer that receives a whole read reply of `readBatchSize` documents: their bytes,
 * the array's element headers between them (type, index, NUL: at most 8 bytes a document) and the
 * reply's own fields. A reply larger than this (documents larger than the collection's average)
 * is received in a buffer of its own.
 */
export function replyBufferBytes(averageDocumentBytes: number, batchBytes: number): number {
  const documents = readBatchSize(averageDocumentBytes, batchBytes);
  const average = averageDocumentBytes > 0 ? averageDocumentBytes : 1024;
  return Math.ceil(documents * (average + 8) * 1.125) + 64 * 1024;
}
