/**
 * A collection: raw BSON documents ordered by `_id` (canonical BSON order, as the `_id` index
 * orders them) and by record id (insertion order, the natural order a collection scan sees),
 * plus its secondary indexes and options. Capped collections evict their oldest documents.
 */
import { BSON, UUID } from 'bson';
import { Collation, comparatorOf } from '../collation/collation.js';
import { ServerError } from '../errors.js';
import { describeKey } from './keys.js';
import { Index, type IndexSpec } from './indexes.js';
import { RecordTree } from './record-tree.js';
import { fieldDecoder, promoted } from '../raw.js';
import { StoredBytes } from './memory.js';

/** One stored document: its bytes (replaced on update), its record id (never changes) and `_id`. */
export class DocEntry extends StoredBytes {
  constructor(
    readonly rid: number,
    readonly id: unknown,
    raw: Buffer,
  ) {
    super(raw);
  }
}

/** Options a collection was created with, as `listCollections` reports them. */
export interface CollectionOptions {
  capped?: boolean;
  size?: number;
  max?: number;
  validator?: Record<string, unknown>;
  validationLevel?: string;
  validationAction?: string;
  collation?: Record<string, unknown>;
  [option: string]: unknown;
}

/**
 * Told of every document a collection stores (inserts and rewrites) or removes, after the change:
 * the data directory's journal (persistence/). Transaction forks inherit it from their collection.
 */
export interface DocumentObserver {
  stored(collection: Collection, entry: DocEntry): void;
  removed(collection: Collection, entry: DocEntry): void;
}

/** The secondary indexes of a collection with only its `_id` index (shared: nothing, not a new array per write). */
const NO_INDEXES: readonly Index[] = [];

/** What a non-capped insert evicts (shared: nothing). */
const NONE_EVICTED: readonly DocEntry[] = [];

/** A plain record. */
function newRecord(rid: number, id: unknown, raw: Buffer): DocEntry {
  return new DocEntry(rid, id, raw);
}

/** Record ids are integers: compared by subtraction. */
function compareRecordIds(a: number, b: number): number {
  return a - b;
}

export class Collection {
  readonly kind = 'collection' as const;
  /**
   * Documents by `_id`, in the order of the `_id` index: its collation is the collection's default,
   * so with one, `_id` strings equal under it are one key (as mongod's unique `_id` index has it).
   */
  readonly byId: RecordTree<unknown, DocEntry>;
  /** How this collection's `_id`s compare (the simple order, or the default collation's). */
  readonly compareIds: (a: unknown, b: unknown) => number;
  readonly byRid = new RecordTree<number, DocEntry>(compareRecordIds);
  readonly indexes: Index[] = [];
  private nextRid = 1;
  /** Sum of stored document sizes in bytes. */
  dataSize = 0;
  /**
   * Counts the entries put into or taken out of the trees: a scan holding entries it read ahead
   * reads them again when this moved (query/scan.ts).
   */
  changes = 0;
  /**
   * Set once the catalog lets go of this collection (drop, dropDatabase, the target of a rename
   * with dropTarget, the source of a cross-database rename): the open cursors reading it then
   * fail their next getMore, as mongod's do when they no longer find its UUID.
   */
  dropped = false;
  /** Told of this collection's document changes (undefined: nobody; see DocumentObserver). */
  observer: DocumentObserver | undefined = undefined;

  constructor(
    public db: string,
    public name: string,
    public options: CollectionOptions,
    readonly uuid: UUID = new UUID(),
  ) {
    this.compareIds = comparatorOf(Collation.of(options.collation));
    this.byId = new RecordTree<unknown, DocEntry>(this.compareIds);
    // The _id index carries the collection's default collation, as listIndexes shows it.
    const idSpec: IndexSpec = { v: 2, key: { _id: 1 }, name: '_id_' };
    if (options.collation) idSpec.collation = options.collation;
    this.indexes.push(new Index(idSpec, this));
  }

  private nsCache = { db: '', name: '', ns: '' };

  /** `db.name`, built once per name (every oplog entry of a write carries it). */
  get ns(): string {
    const cache = this.nsCache;
    if (cache.db !== this.db || cache.name !== this.name) this.nsCache = { db: this.db, name: this.name, ns: `${this.db}.${this.name}` };
    return this.nsCache.ns;
  }

  get count(): number {
    return this.byId.size;
  }

  get capped(): boolean {
    return this.options.capped === true;
  }

  get(id: unknown): DocEntry | undefined {
    return this.byId.get(id);
  }

  /** Secondary indexes that need each document decoded (unique, or key rules that can refuse it). */
  private enforcing(): readonly Index[] {
    return this.indexes.length === 1 ? NO_INDEXES : this.indexes.filter((i) => i.name !== '_id_' && i.checksDocuments());
  }

  /**
   * Stores a prepared document (`_id` first). Throws DuplicateKey (nothing changed) on an `_id` or
   * unique-index collision. Returns the entry and, for capped collections, the evicted entries.
   */
  insert<Entry extends DocEntry = DocEntry>(
    raw: Buffer,
    id: unknown,
    /** Makes the record (instance.ts makes one that is also the insert's oplog entry). */
    record: (rid: number, id: unknown, raw: Buffer) => Entry = newRecord as (rid: number, id: unknown, raw: Buffer) => Entry,
  ): { entry: Entry; evicted: readonly DocEntry[] } {
    if (this.capped && this.options.size !== undefined && raw.length > this.options.size) {
      throw new ServerError('DocTooLargeForCapped', `document is larger than capped size ${raw.length} > ${this.options.size}`);
    }
    const entry = record(this.nextRid++, id, raw);
    const enforcing = this.enforcing();
    if (enforcing.length === 0) {
      // One descent of the _id tree both checks for a duplicate and stores.
      if (!this.byId.set(id, entry, false)) throw this.duplicateIdError(id);
    } else {
      if (this.byId.has(id)) throw this.duplicateIdError(id);
      const doc = BSON.deserialize(raw, promoted);
      for (const index of enforcing) index.check(entry, doc);
      for (const index of enforcing) index.add(entry, doc);
      this.byId.set(id, entry);
    }
    this.byRid.set(entry.rid, entry);
    this.changes++;
    this.dataSize += raw.length;
    this.observer?.stored(this, entry);
    return { entry, evicted: this.capped ? this.evictOverflow(entry) : NONE_EVICTED };
  }

  private duplicateIdError(id: unknown): ServerError {
    const keyValue = { _id: id };
    return new ServerError(
      'DuplicateKey',
      `E11000 duplicate key error collection: ${this.ns} index: _id_ dup key: ${describeKey(keyValue)}`,
      { keyPattern: { _id: 1 }, keyValue },
    );
  }

  /** Replaces a document's bytes in place (same `_id`, same record id). */
  replace(entry: DocEntry, raw: Buffer): void {
    const enforcing = this.enforcing();
    if (enforcing.length > 0) {
      const before = BSON.deserialize(entry.raw, promoted);
      const after = BSON.deserialize(raw, promoted);
      for (const index of enforcing) index.remove(entry, before);
      try {
        for (const index of enforcing) index.check(entry, after);
      } catch (e) {
        for (const index of enforcing) index.add(entry, before);
        throw e;
      }
      for (const index of enforcing) index.add(entry, after);
    }
    this.dataSize += raw.length - entry.length;
    entry.raw = raw;
    this.observer?.stored(this, entry);
  }

  remove(entry: DocEntry): void {
    const enforcing = this.enforcing();
    if (enforcing.length > 0) {
      const doc = BSON.deserialize(entry.raw, promoted);
      for (const index of enforcing) index.remove(entry, doc);
    }
    this.byId.delete(entry.id);
    this.byRid.delete(entry.rid);
    this.changes++;
    this.dataSize -= entry.length;
    this.observer?.removed(this, entry);
  }

  /** Removes the oldest documents beyond the capped size/max, never the one just inserted. */
  private evictOverflow(keep: DocEntry): DocEntry[] {
    const evicted: DocEntry[] = [];
    const size = this.options.size ?? Number.POSITIVE_INFINITY;
    const max = this.options.max && this.options.max > 0 ? this.options.max : Number.POSITIVE_INFINITY;
    while ((this.dataSize > size || this.count > max) && this.count > 1) {
      const oldest = this.byRid.minKey();
      if (oldest === undefined) break;
      const entry = this.byRid.get(oldest)!;
      if (entry === keep) break;
      this.remove(entry);
      evicted.push(entry);
    }
    return evicted;
  }

  /** Evicts to the current capped limits (after they were lowered); returns what was removed. */
  enforceCappedLimits(): DocEntry[] {
    const newest = this.byRid.maxKey();
    return newest === undefined ? [] : this.evictOverflow(this.byRid.get(newest)!);
  }

  /**
   * Every document decoded, for index builds and validations. Given `fields` (top-level names),
   * only those fields are decoded: an index key reads nothing else, and decoding whole documents
   * was most of an index build's cost. Given `only`, documents whose bytes it refuses are skipped.
   */
  *decodedEntries(fields?: ReadonlySet<string>, only?: (raw: Buffer) => boolean): Iterable<[DocEntry, Record<string, unknown>]> {
    const decode = fields === undefined ? (raw: Buffer) => BSON.deserialize(raw, promoted) : fieldDecoder([...fields], promoted);
    for (const entry of this.byRid.values()) {
      if (only === undefined || only(entry.raw)) yield [entry, decode(entry.raw)];
    }
  }

  /**
   * Adds a secondary index; builds its unique map. Throws DuplicateKey if data violates it. An
   * index that holds nothing and can refuse no document (see `Index.checksDocuments`) needs no
   * pass over the data.
   */
  addIndex(spec: IndexSpec): Index {
    const index = new Index(spec, this);
    if (index.checksDocuments()) {
      // Without uniqueness only arrays along the key paths can refuse a document: only those are decoded.
      const mayRefuse = index.enforcesUniqueness() ? undefined : (raw: Buffer) => index.keyMeetsArray(raw);
      const collisions = index.rebuild(this.decodedEntries(index.topLevelFields(), mayRefuse));
      if (collisions.length > 0) throw index.duplicateKeyError(collisions[0]);
    }
    this.indexes.push(index);
    return index;
  }

  findIndex(name: string): Index | undefined {
    return this.indexes.find((i) => i.name === name);
  }
}

/** A view: a stored pipeline over another collection of the same database. */
export class View {
  readonly kind = 'view' as const;
  constructor(
    public db: string,
    public name: string,
    public viewOn: string,
    public pipeline: Record<string, unknown>[],
    public collation?: Record<string, unknown>,
  ) {}

  get ns(): string {
    return `${this.db}.${this.name}`;
  }

  /** The document mongod keeps for this view in `<db>.system.views`. */
  definition(): Record<string, unknown> {
    return { _id: this.ns, viewOn: this.viewOn, pipeline: this.pipeline, ...(this.collation ? { collation: this.collation } : {}) };
  }
}

export type Namespace = Collection | View;
