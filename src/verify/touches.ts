/**
 * Following one cluster's change stream for the verifier ("stream hashing"): every document a
 * change event reports changed in a verified namespace, on the source or on the destination, is
 * queued to be checked again (recheck-queue.ts), so that a document touched after its range was
 * compared is re-checked once the change is applied, not the whole range. On the source, the
 * check waits until change-event application has applied through the event's time; a change on
 * the destination (Ferry's own writes, or anyone else's) is checked at once.
 *
 * The stream is read without `updateLookup` (only which document changed matters) and starts where
 * the verifier's record says (state.ts). DDL events on verified namespaces are handed on
 * (`onDdl`): their namespaces are checked again, and scanned again when they were created, dropped
 * or renamed. On the destination, commit's record of "events applied through the commit point"
 * (src/meta/commit.ts, written after change-event application stopped and before write blocking is
 * lifted) marks the commit boundary: later changes there are the application's, and the documents
 * they touch are not verifiable (`onAfterCommit`).
 */
import type { Document, Timestamp } from 'bson';
import type { MongoClient } from 'mongodb';
import { decodeDocument, findElement, readChangeEvent, type ChangeEventFields } from '../bson/index.js';
import { ChangeStreamReader } from '../cluster/change-stream.js';
import { METADATA_DATABASE } from '../domain/namespaces.js';
import { laterTime } from '../domain/time.js';
import type { Logger } from '../log/logger.js';
import { METADATA_COLLECTIONS } from '../meta/names.js';
import { packElement } from '../meta/store.js';
import type { NamespaceSelector } from '../plan/namespaces.js';
import type { RecheckQueue, StreamBatch } from './recheck-queue.js';
import type { Side, StreamPoint } from './state.js';

const CRUD = new Set(['insert', 'update', 'replace', 'delete']);
/** DDL after which a namespace is scanned again (its documents may have come or gone whole). */
const RESCAN = new Set(['create', 'drop', 'rename', 'dropDatabase']);
const DDL = new Set([
  ...RESCAN,
  'createIndexes',
  'dropIndexes',
  'modify',
  'shardCollection',
  'reshardCollection',
  'refineCollectionShardKey',
]);

/** A DDL event on a verified namespace. */
export interface DdlTouch {
  side: Side;
  operationType: string;
  /** The namespaces it concerns (a rename: both names; dropDatabase: the database, `coll` absent). */
  namespaces: { db: string; coll?: string }[];
  rescan: boolean;
  time?: Timestamp;
  /** Pinned until the namespaces are handled (`batch.outstanding`). */
  batch: StreamBatch;
}

export interface TouchFollowerOptions {
  side: Side;
  client: MongoClient;
  start: StreamPoint;
  selector: NamespaceSelector;
  queue: RecheckQueue;
  /** This instance's id (its commit record's `_id`). */
  instance: string;
  batchSize: number;
  maxAwaitMs: number;
  logger: Logger;
  onDdl(ddl: DdlTouch): void;
  /**
   * Documents changed after commit: on the destination after the commit boundary (the
   * application's writes), on the source after `stopAfter` (never applied). They are not checked.
   */
  onAfterCommit(documents: { ns: string; id: string }[]): Promise<void>;
  /** Destination only: the commit boundary was read (its destination time). */
  onCommitBoundary?(time: Timestamp | undefined): void;
  /** Destination only: the commit boundary's time, when an earlier run recorded it (later events are the application's). */
  boundary?: Timestamp;
  /** Source only: the time after which source changes are not verified (the commit point), once known. */
  stopAfter?(): Timestamp | undefined;
}

/** Whether an event is later than `limit` (false without a limit). */
function isAfter(limit: Timestamp | undefined, event: ChangeEventFields): boolean {
  return limit !== undefined && event.clusterTime?.greaterThan(limit) === true;
}

export class TouchFollower {
  readonly #options: TouchFollowerOptions;
  readonly #reader: ChangeStreamReader;
  #stopping = false;
  /** Every event up to this time has been read. */
  position: Timestamp | undefined;
  /** The newest time this cluster reported. */
  latest: Timestamp | undefined;
  /** Documents touched since this process started. */
  touched = 0;
  /** The destination's commit boundary has been read: later writes are the application's. */
  afterBoundary = false;

  constructor(options: TouchFollowerOptions) {
    this.#options = options;
    this.position = options.start.time;
    this.#reader = new ChangeStreamReader({
      client: options.client,
      start: { startAfter: options.start.resumeToken },
      batchSize: options.batchSize,
      maxAwaitMs: options.maxAwaitMs,
      logger: options.logger,
    });
  }

  /** Reads until stopped; throws what the stream failed with. */
  async run(): Promise<void> {
    const { queue, side } = this.#options;
    try {
      while (!this.#stopping) {
        await queue.makeRoom();
        const reply = await this.#reader.next();
        this.latest = laterTime(this.latest, reply.sourceTime);
        const batch = queue.openBatch(side, {
          resumeToken: reply.postBatchResumeToken,
          ...(reply.resumeTime === undefined ? {} : { time: reply.resumeTime }),
        });
        const afterCommit: { ns: string; id: string }[] = [];
        for (const bytes of reply.events) this.#event(bytes, readChangeEvent(bytes), batch, afterCommit);
        this.position = laterTime(this.position, reply.resumeTime);
        if (afterCommit.length > 0) await this.#options.onAfterCommit(afterCommit);
      }
    } finally {
      await this.#reader.close();
    }
  }

  stop(): void {
    this.#stopping = true;
  }

  #event(bytes: Uint8Array, event: ChangeEventFields, batch: StreamBatch, afterCommit: { ns: string; id: string }[]): void {
    const { selector, queue, side } = this.#options;
    const ns = event.ns;
    if (ns === undefined) return;
    const boundary = this.#options.boundary;
    if (side === 'destination' && !this.afterBoundary && boundary !== undefined && event.clusterTime?.greaterThan(boundary) === true) {
      this.afterBoundary = true;
    }
    if (ns.db === METADATA_DATABASE) {
      if (side === 'destination' && !this.afterBoundary && this.#isCommitBoundary(bytes, event)) {
        this.afterBoundary = true;
        this.#options.onCommitBoundary?.(event.clusterTime);
      }
      return;
    }
    const type = event.operationType;
    if (CRUD.has(type)) {
      if (ns.coll === undefined || !selector.selects(ns.db, ns.coll)) return;
      const key = event.documentKeyBytes;
      const idElement = key === undefined ? undefined : findElement(key, '_id');
      if (key === undefined || idElement === undefined) return;
      const id = packElement(key, idElement);
      const name = `${ns.db}.${ns.coll}`;
      if (side === 'destination' ? this.afterBoundary : isAfter(this.#options.stopAfter?.(), event)) {
        afterCommit.push({ ns: name, id });
        return;
      }
      // Source: check once application has applied this event; destination: at once.
      queue.touch(name, id, side === 'source' ? event.clusterTime : undefined, batch);
      this.touched++;
      return;
    }
    // After commit: on the destination, commit's restores and the application's DDL; on the source, never applied.
    if (!DDL.has(type) || (side === 'destination' ? this.afterBoundary : isAfter(this.#options.stopAfter?.(), event))) return;
    const named: { db: string; coll?: string }[] = [ns, ...(event.to === undefined ? [] : [event.to])];
    const concerned = named.filter((n) => (n.coll === undefined ? selector.selectsDatabase(n.db) : selector.selects(n.db, n.coll)));
    if (concerned.length === 0) return;
    batch.outstanding++;
    const ddl: DdlTouch = { side, operationType: type, namespaces: concerned, rescan: RESCAN.has(type), batch };
    if (event.clusterTime !== undefined) ddl.time = event.clusterTime;
    this.#options.onDdl(ddl);
  }

  /** An update of this instance's commit record that sets `appliedAt`. */
  #isCommitBoundary(bytes: Uint8Array, event: ChangeEventFields): boolean {
    if (event.ns?.coll !== METADATA_COLLECTIONS.commit || event.operationType !== 'update') return false;
    const key = event.documentKey;
    if (key?._id !== this.#options.instance) return false;
    const description = findElement(bytes, 'updateDescription');
    if (description === undefined) return false;
    const updated = decodeDocument(bytes, description.valueOffset, description.valueEnd).updatedFields as Document | undefined;
    return updated !== undefined && 'appliedAt' in updated;
  }
}
