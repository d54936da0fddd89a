/**
 * Read cursors whose replies stay bytes: the opening command (`find`, or `aggregate` for a change
 * stream) and its `getMore`s run through the driver's `db.command` with `raw: true` (the driver
 * decodes the reply's top level and leaves `cursor` as bytes), in one explicit session (a cursor
 * must be continued in the session that opened it). The copy walks each reply's batch with
 * `batchDocumentStarts`, without one JavaScript object per document; the change-stream reader
 * reads each event's bytes and the reply's resume token.
 *
 * Compared with the driver's raw `FindCursor` (a view and an on-demand document object per
 * document), this keeps the copy's garbage per reply, not per document, and lets the batcher copy
 * documents out so that no reply outlives its turn (src/copy/batcher.ts).
 */
import { Long } from 'bson';
import type { AggregateOptions, ClientSession, Collection, Db, Document, FindOptions, MongoClient } from 'mongodb';
import { BsonType, decodeValue, findElement, type RawElement } from '../bson/index.js';
import { readInt32LE } from '../bson/scan.js';
import type { Namespace } from '../domain/namespaces.js';
import { MalformedCursorReply } from '../errors/errors.js';

/** The documents of one reply: document `i` starts at `starts[i]` in `buffer` (its size is its first 4 bytes). */
export interface ReplyDocuments {
  buffer: Uint8Array;
  starts: number[];
}

/** One reply of a cursor. */
export interface RawReply {
  /** The reply's top level (`operationTime`, `$clusterTime`...), `cursor` left as bytes. */
  reply: Document;
  /** The `cursor` sub-document's bytes. */
  cursor: Uint8Array;
  /** Its `firstBatch` or `nextBatch` array. */
  batch: RawElement;
}

/** What a `find` reads: everything after `filter` in the command (`hint`, `min`, `max`...). */
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

export interface GetMoreOptions {
  /** Documents per reply. */
  batchSize: number;
  /** How long a `getMore` of a tailable cursor (a change stream) waits for documents. */
  maxTimeMS?: number;
}

const ZERO = Long.fromNumber(0);

export class RawCursor {
  readonly #db: Db;
  readonly #open: Document;
  readonly #getMore: GetMoreOptions;
  readonly #session: ClientSession;
  #collection: string;
  #id: Long | undefined;

  /** A cursor on `db` opened by the command `open` (sent on the first `next`). */
  constructor(client: MongoClient, db: string, open: Document, getMore: GetMoreOptions) {
    this.#db = client.db(db);
    this.#open = open;
    this.#getMore = getMore;
    this.#collection = typeof open.find === 'string' ? open.find : '$cmd.aggregate';
    this.#session = client.startSession();
  }

  /** A `find` of every document of `ns` within `options`' bounds. */
  static find(client: MongoClient, ns: Namespace, options: RawFindOptions): RawCursor {
    return new RawCursor(client, ns.db, { find: ns.coll, filter: {}, ...options }, { batchSize: options.batchSize });
  }

  /** Whether the server has closed the cursor (every document read, or the stream ended). */
  get exhausted(): boolean {
    return this.#id !== undefined && this.#id.isZero();
  }

  /** The next reply; undefined once the cursor is exhausted. A `getMore` waits `maxTimeMS` if given, else the cursor's own. */
  async nextReply(maxTimeMS = this.#getMore.maxTimeMS): Promise<RawReply | undefined> {
    if (this.exhausted) return undefined;
    const command =
      this.#id === undefined
        ? this.#open
        : {
            getMore: this.#id,
            collection: this.#collection,
            batchSize: this.#getMore.batchSize,
            ...(maxTimeMS === undefined ? {} : { maxTimeMS }),
          };
    const reply = await this.#db.command(command, { raw: true, session: this.#session });
    const cursor = reply.cursor as Uint8Array | undefined;
    if (!(cursor instanceof Uint8Array)) throw new MalformedCursorReply(`${Object.keys(command)[0]} replied without a cursor`);
    const state = readCursor(cursor);
    this.#id = state.id;
    this.#collection = state.collection ?? this.#collection;
    return { reply, cursor, batch: state.batch };
  }

  /** The next reply's documents; undefined once the cursor is exhausted. */
  async next(): Promise<ReplyDocuments | undefined> {
    const reply = await this.nextReply();
    if (reply === undefined) return undefined;
    return { buffer: reply.cursor, starts: batchDocumentStarts(reply.cursor, reply.batch.valueOffset, reply.batch.valueEnd) };
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
      await this.abandon();
    }
  }

  /** Ends the session without waiting on the server (after a failure: the cursor times out there). */
  async abandon(): Promise<void> {
    this.#id = ZERO;
    await this.#session.endSession().catch(() => undefined);
  }
}

/** What a cursor reply's `cursor` sub-document says: its id (0: exhausted), collection and batch. */
export interface CursorState {
  id: Long;
  /** The collection named by `ns` (a `getMore` names it), when the reply has one. */
  collection?: string;
  /** Its `firstBatch` or `nextBatch` array. */
  batch: RawElement;
}

/** Reads a reply's `cursor` sub-document (its bytes). */
export function readCursor(cursor: Uint8Array): CursorState {
  const id = findElement(cursor, 'id');
  const idValue = id === undefined ? 0 : decodeValue(cursor, id);
  const state: CursorState = {
    id: Long.isLong(idValue) ? idValue : Long.fromNumber(Number(idValue)),
    batch: findElement(cursor, 'firstBatch') ?? findElement(cursor, 'nextBatch')!,
  };
  if (state.batch === undefined || state.batch.type !== BsonType.array) throw new MalformedCursorReply('cursor reply has no batch array');
  const ns = findElement(cursor, 'ns');
  if (ns !== undefined && ns.type === BsonType.string) {
    const name = decodeValue(cursor, ns) as string;
    state.collection = name.slice(name.indexOf('.') + 1);
  }
  return state;
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

/**
 * The documents `find` returns, each as its BSON bytes (the driver's `raw` mode, where a document
 * is a view of the reply, not a decoded object).
 */
export function findRaw(client: MongoClient, ns: Namespace, filter: Document, options: FindOptions = {}): AsyncIterable<Uint8Array> {
  return client
    .db(ns.db)
    .collection(ns.coll)
    .find(filter, { ...options, raw: true }) as unknown as AsyncIterable<Uint8Array>;
}

/** The documents an aggregation returns, each as its BSON bytes. */
export function aggregateRaw(collection: Collection, pipeline: Document[], options: AggregateOptions = {}): AsyncIterable<Uint8Array> {
  return collection.aggregate(pipeline, { ...options, raw: true }) as unknown as AsyncIterable<Uint8Array>;
}
