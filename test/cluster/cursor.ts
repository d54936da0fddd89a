/**
 * Server-side cursors (`find`, `aggregate`, change streams) and the batching rules mongod
 * applies: a first batch of 101 documents unless `batchSize` says otherwise, later batches
 * unlimited in count, every batch at most 16 MiB of documents (but at least one document).
 *
 * A cursor reading a collection dies with it: when the collection was dropped (also by
 * dropDatabase, by a rename with dropTarget onto it, or as the source of a cross-database rename)
 * or renamed since the last batch, the next getMore fails with QueryPlanKilled (175) and the
 * cursor is gone, as on mongod since 4.1.7 (SERVER-37451: a query's restore after a yield looks
 * its collection up by UUID; RequiresCollectionStage::doRestoreState). Change streams are not
 * reading a collection and live on to report the drop or rename.
 */
import { Long } from 'bson';
import { ServerError } from './errors.js';
import type { Collection } from './storage/collection.js';
import type { BatchDocument } from './storage/memory.js';

/** mongod's default number of documents in a first batch. */
export const DEFAULT_FIRST_BATCH = 101;
/** Bytes of documents a batch may carry (mongod's BSONObjMaxUserSize). */
export const MAX_BATCH_BYTES = 16 * 1024 * 1024;

export interface BatchRequest {
  /** Documents wanted at most; undefined = unlimited (bounded by bytes); 0 = none. */
  batchSize?: number;
  /** For awaitData cursors (change streams): how long a getMore may wait for data. */
  maxTimeMS?: number;
}

export interface Batch {
  docs: BatchDocument[];
  /** True when the cursor has nothing more and is closed. */
  exhausted: boolean;
  /** Extra fields of the `cursor` sub-document (e.g. `postBatchResumeToken`). */
  extra?: Record<string, unknown>;
}

/** Anything a cursor id can stand for. */
export interface ServerCursor {
  readonly ns: string;
  /** The next batch; may wait (awaitData) up to `maxTimeMS`. */
  nextBatch(request: BatchRequest): Batch | Promise<Batch>;
  /** Releases resources (on kill, exhaustion, or server stop). */
  close(): void;
}

/** Fills batches from a pull function returning one document or undefined at the end. */
export class PullCursor implements ServerCursor {
  private pending: BatchDocument | undefined;
  private done = false;
  private returned = 0;

  constructor(
    readonly ns: string,
    private readonly pull: () => BatchDocument | undefined,
    /** Total documents the cursor may return (`limit`), 0 = unlimited. */
    private readonly limit = 0,
    /** Checked before every batch after the first: throws when the cursor's plan was killed. */
    private readonly restore?: () => void,
  ) {}

  private started = false;

  nextBatch(request: BatchRequest): Batch {
    if (this.started && !this.done) this.restore?.();
    this.started = true;
    const docs: BatchDocument[] = [];
    let bytes = 0;
    const max = request.batchSize ?? Number.POSITIVE_INFINITY;
    while (docs.length < max && !this.done) {
      if (this.limit > 0 && this.returned >= this.limit) {
        this.done = true;
        break;
      }
      const doc = this.pending ?? this.pull();
      this.pending = undefined;
      if (doc === undefined) {
        this.done = true;
        break;
      }
      if (docs.length > 0 && bytes + doc.length > MAX_BATCH_BYTES) {
        this.pending = doc;
        break;
      }
      docs.push(doc);
      bytes += doc.length;
      this.returned++;
    }
    if (!this.done && this.pending === undefined && this.limit > 0 && this.returned >= this.limit) this.done = true;
    return { docs, exhausted: this.done };
  }

  close(): void {
    this.done = true;
    this.pending = undefined;
  }
}

/**
 * The restore check of a cursor reading `collection` (mongod's RequiresCollectionStage): fails
 * with QueryPlanKilled and mongod's messages when the collection was dropped or renamed since the
 * cursor opened. `reading` says whether the plan still reads the collection (an aggregation whose
 * blocking stage has consumed it all, like mongod's exhausted DocumentSourceCursor, does not).
 */
export function collectionRestore(collection: Collection | undefined, reading: () => boolean = () => true): (() => void) | undefined {
  if (!collection) return undefined;
  const openedAs = collection.ns;
  return () => {
    if (!reading()) return;
    const uuid = collection.uuid.toHexString(true);
    if (collection.dropped) throw new ServerError('QueryPlanKilled', `collection dropped. UUID ${uuid}`);
    if (collection.ns !== openedAs) {
      throw new ServerError('QueryPlanKilled', `collection renamed from '${openedAs}' to '${collection.ns}'. UUID ${uuid}`);
    }
  };
}

/** The open cursors of one server, by id. */
export class CursorRegistry {
  private readonly cursors = new Map<string, ServerCursor>();

  /** Registers a cursor and returns its new id (a random positive 63-bit number). */
  register(cursor: ServerCursor): Long {
    let id: Long;
    do {
      id = Long.fromBits((Math.random() * 0x100000000) >>> 0, (Math.random() * 0x7fffffff) >>> 0 || 1);
    } while (this.cursors.has(id.toString()));
    this.cursors.set(id.toString(), cursor);
    return id;
  }

  get(id: Long, ns: string): ServerCursor {
    const cursor = this.cursors.get(id.toString());
    if (!cursor) throw new ServerError('CursorNotFound', `cursor id ${id.toString()} not found`);
    if (cursor.ns !== ns) {
      throw new ServerError(
        'Unauthorized',
        `Requested getMore on namespace '${ns}', but cursor belongs to a different namespace ${cursor.ns}`,
      );
    }
    return cursor;
  }

  has(id: Long): boolean {
    return this.cursors.has(id.toString());
  }

  kill(id: Long): boolean {
    const cursor = this.cursors.get(id.toString());
    if (!cursor) return false;
    cursor.close();
    this.cursors.delete(id.toString());
    return true;
  }

  closeAll(): void {
    for (const cursor of this.cursors.values()) cursor.close();
    this.cursors.clear();
  }
}
