/**
 * Reads the source's change stream as raw BSON: one stream over the whole cluster
 * (`allChangesForCluster`), with expanded events (create, createIndexes, dropIndexes, modify and
 * the rest of DDL) and `fullDocument: 'updateLookup'`, opened and continued with the documented
 * commands themselves (`aggregate: 1` on `admin`, then `getMore` with `maxTimeMS`) through
 * `db.command(..., {raw: true})`, so a reply's events stay bytes: each event is a view into the
 * reply, found by a scan of its `nextBatch` array. The driver's `ChangeStream` would decode
 * every event into objects.
 *
 * Resumable failures (the network, a primary stepping down, a killed cursor: the Retryable
 * Writes list in src/copy/transient.ts plus `ResumableChangeStreamError`) reopen the stream
 * after the last batch handed out, with `startAfter` its `postBatchResumeToken`: nothing is
 * read twice and nothing skipped. `ChangeStreamHistoryLost` (286) is not resumable: it becomes
 * `ChangeStreamHistoryLost` for the applier to report.
 */
import type { Document, Timestamp } from 'bson';
import { Long } from 'bson';
import { MongoError, type ClientSession, type MongoClient } from 'mongodb';
import { BsonType, decodeValue, findElement, forEachElement } from '../bson/index.js';
import type { Logger } from '../log/logger.js';
import { tokenTime } from './resume-token.js';
import { laterTime } from '../domain/time.js';
import { ChangeStreamHistoryLost } from '../errors/errors.js';
import { isTransient } from '../cluster/errors.js';

/** Where a stream starts: after a resume token, or at a source time (T0). */
export type StreamStart = { startAfter: Document } | { startAtOperationTime: Timestamp };

export interface ReaderOptions {
  /** The source cluster. */
  source: MongoClient;
  start: StreamStart;
  /** Events per reply at most (the server also caps a reply at 16 MiB). */
  batchSize: number;
  /** How long a `getMore` waits for events before answering with none. */
  maxAwaitMs: number;
  logger: Logger;
}

/** One reply's events. */
export interface ReaderBatch {
  /** Each event's bytes (views into `reply`). */
  events: Uint8Array[];
  /** Resume here to continue after every event of this batch. */
  postBatchResumeToken: Document;
  /** The cluster time of `postBatchResumeToken`, when it can be read. */
  resumeTime?: Timestamp;
  /** The newest time the source reported in this reply (its operation or cluster time). */
  sourceTime?: Timestamp;
}

const HISTORY_LOST = 286;
const RESUME_ATTEMPTS = 10;
const FIRST_BACKOFF_MS = 200;

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

function isResumable(error: unknown): boolean {
  if (error instanceof MongoError && error.hasErrorLabel('ResumableChangeStreamError')) return true;
  return isTransient(error);
}

function isHistoryLost(error: unknown): boolean {
  return (
    (error as { code?: unknown } | null)?.code === HISTORY_LOST ||
    (error as { codeName?: unknown } | null)?.codeName === 'ChangeStreamHistoryLost'
  );
}

/** The newest of a reply's `operationTime` and `$clusterTime.clusterTime`. */
function replyTime(reply: Document): Timestamp | undefined {
  const operationTime = reply.operationTime as Timestamp | undefined;
  const clusterTime = (reply.$clusterTime as { clusterTime?: Timestamp } | undefined)?.clusterTime;
  return laterTime(
    operationTime?._bsontype === 'Timestamp' ? operationTime : undefined,
    clusterTime?._bsontype === 'Timestamp' ? clusterTime : undefined,
  );
}

export class ChangeStreamReader {
  readonly #options: ReaderOptions;
  #start: StreamStart;
  #session: ClientSession | undefined;
  #cursorId: Long | undefined;
  #cursorCollection = '$cmd.aggregate';
  #closed = false;

  constructor(options: ReaderOptions) {
    this.#options = options;
    this.#start = options.start;
  }

  /** The next reply's events (possibly none, after `maxAwaitMs` without any). */
  async next(): Promise<ReaderBatch> {
    for (let attempt = 0; ; attempt++) {
      try {
        const batch = await this.#read();
        // The next (re)opening continues after this batch.
        this.#start = { startAfter: batch.postBatchResumeToken };
        return batch;
      } catch (error) {
        if (isHistoryLost(error)) {
          throw new ChangeStreamHistoryLost({ reason: (error as Error).message }, { cause: error });
        }
        if (this.#closed || !isResumable(error) || attempt >= RESUME_ATTEMPTS) throw error;
        this.#options.logger.warn(
          { err: error, attempt: attempt + 1 },
          'Change stream interrupted; reopening it after the last batch read',
        );
        await this.#forget();
        await sleep(Math.min(FIRST_BACKOFF_MS * 2 ** attempt, 10_000));
      }
    }
  }

  async #read(): Promise<ReaderBatch> {
    const admin = this.#options.source.db('admin');
    this.#session ??= this.#options.source.startSession();
    const command =
      this.#cursorId === undefined
        ? {
            aggregate: 1,
            pipeline: [
              { $changeStream: { allChangesForCluster: true, showExpandedEvents: true, fullDocument: 'updateLookup', ...this.#start } },
            ],
            cursor: { batchSize: this.#options.batchSize },
          }
        : {
            getMore: this.#cursorId,
            collection: this.#cursorCollection,
            batchSize: this.#options.batchSize,
            maxTimeMS: this.#options.maxAwaitMs,
          };
    const reply = await admin.command(command, { raw: true, session: this.#session });
    const cursor = reply.cursor as Uint8Array | undefined;
    if (!(cursor instanceof Uint8Array)) throw new Error(`${Object.keys(command)[0]} on the change stream replied without a cursor`);
    const id = findElement(cursor, 'id');
    const idValue = id === undefined ? 0 : decodeValue(cursor, id);
    this.#cursorId = Long.isLong(idValue) ? idValue : Long.fromNumber(Number(idValue));
    const ns = findElement(cursor, 'ns');
    if (ns !== undefined && ns.type === BsonType.string) {
      const name = decodeValue(cursor, ns) as string;
      this.#cursorCollection = name.slice(name.indexOf('.') + 1);
    }
    const array = findElement(cursor, 'firstBatch') ?? findElement(cursor, 'nextBatch');
    if (array === undefined || array.type !== BsonType.array) throw new Error('change stream reply has no batch array');
    const events: Uint8Array[] = [];
    forEachElement(
      cursor,
      (element) => {
        if (element.type !== BsonType.document) throw new Error('a change stream batch element is not a document');
        events.push(cursor.subarray(element.valueOffset, element.valueEnd));
      },
      array.valueOffset,
    );
    const tokenElement = findElement(cursor, 'postBatchResumeToken');
    if (tokenElement === undefined || tokenElement.type !== BsonType.document)
      throw new Error('change stream reply has no postBatchResumeToken');
    const postBatchResumeToken = decodeValue(cursor, tokenElement) as Document;
    const batch: ReaderBatch = { events, postBatchResumeToken };
    const resumeTime = tokenTime(postBatchResumeToken);
    if (resumeTime !== undefined) batch.resumeTime = resumeTime;
    const sourceTime = laterTime(replyTime(reply), resumeTime);
    if (sourceTime !== undefined) batch.sourceTime = sourceTime;
    if (this.#cursorId.isZero()) this.#cursorId = undefined; // closed by the server: reopen on the next read
    return batch;
  }

  /** Drops the cursor and session without waiting on the server (they time out there). */
  async #forget(): Promise<void> {
    const session = this.#session;
    this.#session = undefined;
    this.#cursorId = undefined;
    await session?.endSession().catch(() => undefined);
  }

  /** Kills the server cursor and ends the session. */
  async close(): Promise<void> {
    this.#closed = true;
    const id = this.#cursorId;
    if (id !== undefined && !id.isZero() && this.#session !== undefined) {
      await this.#options.source
        .db('admin')
        .command({ killCursors: this.#cursorCollection, cursors: [id] }, { session: this.#session })
        .catch(() => undefined);
    }
    await this.#forget();
  }
}
