/**
 * The change-stream cursor: reads the oplog from its position, turns entries into events, skips
 * up to the resume point, applies the later stages and fills batches. A getMore with nothing to
 * return waits for new oplog entries up to its `maxTimeMS` (1 s when unset, as mongod's awaitData
 * default). Every batch carries a `postBatchResumeToken`: the token of the last event returned,
 * or, once the scan reached the end of the oplog, a high-water mark at the newest oplog time read
 * when that is later: it advances past writes the stream filters out, and while the stream is idle.
 */
import { Timestamp } from 'bson';
import { ServerError } from '../errors.js';
import type { Batch, BatchRequest, ServerCursor } from '../cursor.js';
import { MAX_BATCH_BYTES } from '../cursor.js';
import type { Instance } from '../instance.js';
import type { OplogEntry } from '../oplog.js';
import { type ChangeEvent, type DocumentLookup, eventsFor } from './events.js';
import type { EventPipeline } from './pipeline.js';
import type { ChangeStreamSpec } from './spec.js';
import { compareTokens, compareTokensTotal, encodeToken, type ResumeTokenData } from './token.js';

/** mongod's getMore wait for awaitData cursors without `maxTimeMS`. */
const DEFAULT_AWAIT_MS = 1000;
/** Oplog entries read per step (bounds the work between checks of the batch limits). */
const READ_CHUNK = 1024;

/** mongod's error for a stream whose position fell off the oplog (resume, or a slow reader). */
export function historyLost(): ServerError {
  return new ServerError(
    'ChangeStreamHistoryLost',
    'Resume of change stream was not possible, as the resume point may no longer be in the oplog.',
    {},
    ['NonResumableChangeStreamError'],
  );
}

function highWaterMarkData(ts: Timestamp): ResumeTokenData {
  return { clusterTime: ts, event: false, txnOpIndex: 0, fromInvalidate: false };
}

export class ChangeStreamCursor implements ServerCursor {
  /** Oplog position last consumed: entries after (ts, txnOpIndex) are still to read. */
  private positionTs: Timestamp;
  private positionIndex: number;
  /** Token of the postBatchResumeToken to report. */
  private resumeToken: ResumeTokenData;
  /** A resume point still to pass: events up to it are swallowed (and an event token must be seen). */
  private resumePoint: { token: ResumeTokenData; found: boolean } | undefined;
  /** Events built but not yet returned (a batch filled up mid-entry). */
  private queue: ChangeEvent[] = [];
  private invalidated = false;
  private closed = false;
  private started = false;
  private wake: (() => void) | undefined;
  private readonly lookup: DocumentLookup;

  constructor(
    private readonly instance: Instance,
    private readonly spec: ChangeStreamSpec,
    private readonly pipeline: EventPipeline,
    readonly ns: string,
  ) {
    const oplog = instance.oplog;
    const token = spec.resumeAfter ?? spec.startAfter;
    if (token) {
      if (!oplog.canResumeFrom(token.clusterTime)) throw historyLost();
      this.positionTs = token.clusterTime;
      this.positionIndex = -1;
      this.resumeToken = token;
      this.resumePoint = { token, found: false };
    } else if (spec.startAtOperationTime) {
      if (!oplog.canResumeFrom(spec.startAtOperationTime)) throw historyLost();
      this.positionTs = spec.startAtOperationTime;
      this.positionIndex = -1;
      this.resumeToken = highWaterMarkData(spec.startAtOperationTime);
    } else {
      // A new stream starts just after the newest entry, as mongod's (last applied + 1 tick).
      const newest = oplog.newest()?.ts ?? instance.clusterTime();
      this.positionTs = newest;
      this.positionIndex = Number.MAX_SAFE_INTEGER;
      this.resumeToken = highWaterMarkData(new Timestamp({ t: newest.t, i: newest.i + 1 }));
    }
    this.lookup = (db, coll, uuid, id) => {
      const ns = instance.catalog.get(db, coll);
      if (ns?.kind !== 'collection' || (uuid && !ns.uuid.equals(uuid))) return null;
      return ns.get(id)?.raw ?? null;
    };
  }

  async nextBatch(request: BatchRequest): Promise<Batch> {
    const initial = !this.started;
    this.started = true;
    const limit = request.batchSize ?? Number.POSITIVE_INFINITY;
    const docs: Buffer[] = [];
    if (limit > 0) {
      try {
        this.fill(docs, limit);
        if (!initial && docs.length === 0 && !this.invalidated) {
          const deadline = Date.now() + (request.maxTimeMS || DEFAULT_AWAIT_MS);
          // A shard's part of a merged stream answers as soon as its resume point moves (a no-op
          // came in), so that the router learns how far this shard has nothing to report.
          const before = this.resumeToken;
          const advanced = () => this.spec.merged === true && this.resumeToken !== before;
          while (docs.length === 0 && !this.closed && !this.invalidated && Date.now() < deadline && !advanced()) {
            await this.waitForEntries(deadline - Date.now());
            this.fill(docs, limit);
          }
        }
      } catch (e) {
        this.close();
        throw e;
      }
    }
    const exhausted = this.invalidated && this.queue.length === 0;
    return { docs, exhausted, extra: { postBatchResumeToken: encodeToken(this.resumeToken) } };
  }

  /** Moves events into `docs` until the batch is full or the oplog has nothing more. */
  private fill(docs: Buffer[], limit: number): void {
    let bytes = docs.reduce((sum, d) => sum + d.length, 0);
    for (;;) {
      while (this.queue.length > 0 && docs.length < limit) {
        const event = this.queue[0];
        if (docs.length > 0 && bytes + event.bytes.length > MAX_BATCH_BYTES) return;
        this.queue.shift();
        docs.push(event.bytes);
        bytes += event.bytes.length;
        this.resumeToken = event.token;
        if (event.invalidate) {
          this.invalidated = true;
          this.queue = [];
          return;
        }
      }
      if (docs.length >= limit || this.queue.length > 0) return;
      if (this.instance.oplog.droppedAfter(this.positionTs)) throw historyLost();
      const entries = this.instance.oplog.readAfter(this.positionTs, this.positionIndex, READ_CHUNK);
      if (entries.length === 0) {
        // The scan reached the end of the oplog with nothing left to return: as mongod's, the
        // token moves up to the newest entry read, past the writes the stream filtered out after
        // its last event (PlanExecutorPipeline: an exhausted batch reports a high-water mark at
        // the latest oplog timestamp; jstests/change_streams/report_post_batch_resume_token.js).
        this.advanceHighWaterMark(this.positionTs);
        return;
      }
      for (const entry of entries) {
        this.consume(entry);
        if (this.queue.length > 0 && docs.length + this.queue.length >= limit) break;
      }
    }
  }

  /** Turns one entry into queued events (after the resume point and the later stages). */
  private consume(entry: OplogEntry): void {
    this.positionTs = entry.ts;
    this.positionIndex = entry.txnOpIndex ?? 0;
    let produced = false;
    for (const event of eventsFor(entry, this.spec, this.lookup)) {
      if (this.resumePoint && !this.passedResumePoint(event)) continue;
      const bytes = this.pipeline ? this.pipeline(event.bytes) : event.bytes;
      if (bytes === undefined) continue;
      this.queue.push(bytes === event.bytes ? event : { ...event, bytes });
      produced = true;
    }
    // Nothing to report from this entry: the high-water mark moves past it (never backwards).
    if (!produced && this.queue.length === 0) this.advanceHighWaterMark(entry.ts);
  }

  /** Reports a high-water mark at `ts` unless the token is already later. */
  private advanceHighWaterMark(ts: Timestamp): void {
    const mark = highWaterMarkData(ts);
    if (compareTokens(mark, this.resumeToken) > 0) this.resumeToken = mark;
  }

  /** False while the event is at or before the resume point (it is swallowed). */
  private passedResumePoint(event: ChangeEvent): boolean {
    const point = this.resumePoint!;
    if (this.spec.merged) {
      // One shard of a merged stream: pass the token's own event and what follows it; the
      // router (mongos) checks that some shard had the event and swallows it.
      if (compareTokensTotal(event.token, point.token) < 0) return false;
      this.resumePoint = undefined;
      return true;
    }
    const order = compareTokens(event.token, point.token);
    if (order < 0) return false;
    if (order === 0 && sameUuid(event.token, point.token)) {
      point.found = true;
      return false;
    }
    if (point.token.event && !point.found) {
      throw new ServerError(
        'ChangeStreamFatalError',
        `cannot resume stream; the resume token was not found. ${JSON.stringify(encodeToken(event.token))}`,
        {},
        ['NonResumableChangeStreamError'],
      );
    }
    this.resumePoint = undefined;
    return true;
  }

  private waitForEntries(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        unsubscribe();
        this.instance.stopping.signal.removeEventListener('abort', done);
        this.wake = undefined;
        resolve();
      };
      const timer = setTimeout(done, Math.max(0, ms));
      const unsubscribe = this.instance.oplog.subscribe(done);
      this.instance.stopping.signal.addEventListener('abort', done);
      this.wake = done;
    });
  }

  close(): void {
    this.closed = true;
    this.queue = [];
    this.wake?.();
  }
}

function sameUuid(a: ResumeTokenData, b: ResumeTokenData): boolean {
  if (!a.uuid || !b.uuid) return a.uuid === b.uuid;
  return a.uuid.equals(b.uuid);
}
