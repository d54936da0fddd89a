/**
 * Reads a cluster's change stream as raw BSON: one stream over the whole cluster
 * (`allChangesForCluster`), with expanded events (create, createIndexes, dropIndexes, modify and
 * the rest of DDL) and, when asked, `fullDocument: 'updateLookup'` (change-event application
 * asks; the verifier only needs which documents changed), opened and continued with the documented
 * commands themselves (`aggregate: 1` on `admin`, then `getMore` with `maxTimeMS`) through the
 * cluster layer's raw cursor (src/cluster/raw-cursor.ts), so a reply's events stay bytes: each
 * event is a view into the reply, found by a scan of its batch array. The driver's `ChangeStream`
 * would decode every event into objects.
 *
 * Resumable failures (the network, a primary stepping down, a killed cursor: src/cluster/errors.ts)
 * reopen the stream after the last batch handed out, with `startAfter` its `postBatchResumeToken`,
 * under the cluster layer's retry policy: nothing is read twice and nothing skipped.
 * `ChangeStreamHistoryLost` (286) is not resumable: it becomes `ChangeStreamHistoryLost` for the
 * applier to report.
 *
 * Change-event application reads the source with it (src/cea/applier.ts); the verifier reads both
 * clusters (src/verify/).
 */
import type { Document, Timestamp } from 'bson';
import type { MongoClient } from 'mongodb';
import { BsonType, decodeValue, findElement, forEachElement } from '../bson/index.js';
import { isHistoryLost, isResumableChangeStreamError } from './errors.js';
import { RawCursor } from './raw-cursor.js';
import { RETRY_POLICY, retryDelay, sleep } from './retry.js';
import { laterTime } from '../domain/time.js';
import { ChangeStreamHistoryLost, MalformedCursorReply } from '../errors/errors.js';
import type { Logger } from '../log/logger.js';
import { tokenTime } from './resume-token.js';

/** Where a stream starts: after a resume token, or at a source time (T0). */
export type StreamStart = { startAfter: Document } | { startAtOperationTime: Timestamp };

export interface ReaderOptions {
  /** The cluster whose changes are read. */
  client: MongoClient;
  /** Where to start; absent: now (the first reply's `postBatchResumeToken` says where that is). */
  start?: StreamStart;
  /** Events per reply at most (the server also caps a reply at 16 MiB). */
  batchSize: number;
  /** How long a `getMore` waits for events before answering with none. */
  maxAwaitMs: number;
  /** Look up the whole document of each update (`fullDocument: 'updateLookup'`). Default false. */
  updateLookup?: boolean;
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
  #start: StreamStart | undefined;
  #cursor: RawCursor | undefined;
  #closed = false;

  constructor(options: ReaderOptions) {
    this.#options = options;
    this.#start = options.start;
  }

  /** The next reply's events (possibly none, after `maxAwaitMs`, or this once `awaitMs`, without any). */
  async next(awaitMs?: number): Promise<ReaderBatch> {
    for (let retry = 0; ; retry++) {
      try {
        const batch = await this.#read(awaitMs);
        // The next (re)opening continues after this batch.
        this.#start = { startAfter: batch.postBatchResumeToken };
        return batch;
      } catch (error) {
        if (isHistoryLost(error)) throw new ChangeStreamHistoryLost({ reason: (error as Error).message }, { cause: error });
        if (this.#closed || !isResumableChangeStreamError(error) || retry >= RETRY_POLICY.retries) throw error;
        this.#options.logger.warn({ err: error, attempt: retry + 1 }, 'Change stream interrupted; reopening it after the last batch read');
        await this.#forget();
        await sleep(retryDelay(retry));
      }
    }
  }

  #open(): RawCursor {
    const { client, batchSize, maxAwaitMs, updateLookup } = this.#options;
    const stage = {
      $changeStream: {
        allChangesForCluster: true,
        showExpandedEvents: true,
        ...(updateLookup ? { fullDocument: 'updateLookup' } : {}),
        ...this.#start,
      },
    };
    return new RawCursor(client, 'admin', { aggregate: 1, pipeline: [stage], cursor: { batchSize } }, { batchSize, maxTimeMS: maxAwaitMs });
  }

  async #read(awaitMs: number | undefined): Promise<ReaderBatch> {
    // A cursor the server closed is reopened after the last batch handed out.
    if (this.#cursor?.exhausted === true) await this.#forget();
    this.#cursor ??= this.#open();
    const next = await this.#cursor.nextReply(awaitMs);
    if (next === undefined) throw new MalformedCursorReply('the change stream cursor is closed');
    const { reply, cursor, batch: array } = next;
    const events: Uint8Array[] = [];
    forEachElement(
      cursor,
      (element) => {
        if (element.type !== BsonType.document) throw new MalformedCursorReply('a change stream batch element is not a document');
        events.push(cursor.subarray(element.valueOffset, element.valueEnd));
      },
      array.valueOffset,
    );
    const tokenElement = findElement(cursor, 'postBatchResumeToken');
    if (tokenElement === undefined || tokenElement.type !== BsonType.document) {
      throw new MalformedCursorReply('change stream reply has no postBatchResumeToken');
    }
    const postBatchResumeToken = decodeValue(cursor, tokenElement) as Document;
    const batch: ReaderBatch = { events, postBatchResumeToken };
    const resumeTime = tokenTime(postBatchResumeToken);
    if (resumeTime !== undefined) batch.resumeTime = resumeTime;
    const sourceTime = laterTime(replyTime(reply), resumeTime);
    if (sourceTime !== undefined) batch.sourceTime = sourceTime;
    return batch;
  }

  /** Drops the cursor and session without waiting on the server (they time out there). */
  async #forget(): Promise<void> {
    const cursor = this.#cursor;
    this.#cursor = undefined;
    await cursor?.abandon();
  }

  /** Kills the server cursor and ends the session. */
  async close(): Promise<void> {
    this.#closed = true;
    const cursor = this.#cursor;
    this.#cursor = undefined;
    await cursor?.close();
  }
}
