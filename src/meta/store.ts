/**
 * The metadata database on the destination, where Ferry keeps everything it needs to continue
 * after a crash. Every write uses majority write concern (it must survive a failover of the
 * destination), every read is type-faithful (an Int32 `_id` bound stays an Int32).
 *
 * BSON values and documents that must round-trip exactly (`_id` bounds and checkpoints, collection
 * options, index specifications with `$`-operators) are kept as base64 of their BSON bytes: exact
 * for every type (Extended JSON cannot parse some values back, e.g. a UUID-subtype binary of the
 * wrong length), free of `$`-field rules, and plain strings that worker threads receive as is.
 */
import { deserialize, serialize, type Document } from 'bson';
import { decodeValue, findElement, TYPE_FAITHFUL, type RawElement } from '../bson/index.js';
import type { Db, MongoClient } from 'mongodb';
import { MAJORITY, MAJORITY_READ } from '../cluster/concerns.js';
import { FencedCollection, READ_ONLY, type Fence } from './fence.js';
import { METADATA_COLLECTIONS } from './names.js';
import { METADATA_DATABASE } from '../domain/namespaces.js';

/** Reading options that keep every value's BSON type (an Int32 stays an Int32). */
export const TYPE_FAITHFUL_READ = TYPE_FAITHFUL;

/** A BSON value (an `_id`, MinKey, MaxKey) as base64 of the BSON document `{v: value}`. */
export function packValue(value: unknown): string {
  return Buffer.from(serialize({ v: value })).toString('base64');
}

/**
 * `packValue` of the element at `element` in `buf`, straight from its bytes (no decode): the same
 * string `packValue` gives for the decoded value, since both are `{v: value}` with the value's
 * own bytes.
 */
export function packElement(buf: Uint8Array, element: RawElement): string {
  const value = buf.subarray(element.valueOffset, element.valueEnd);
  const doc = Buffer.alloc(value.length + 8);
  doc.writeInt32LE(doc.length, 0);
  doc[4] = element.type;
  doc[5] = 0x76; // 'v'
  doc[6] = 0;
  doc.set(value, 7);
  doc[doc.length - 1] = 0;
  return doc.toString('base64');
}

/**
 * The value `packValue` packed, with its exact BSON type and its documents' field order: decoded
 * as `decodeValue` does, so an embedded document with integer-like field names comes back as a
 * `Map` in stored order and packs (and serializes as a query bound) to the same bytes again.
 */
export function unpackValue(packed: string): unknown {
  const doc = Buffer.from(packed, 'base64');
  const element = findElement(doc, 'v');
  if (element === undefined) return undefined;
  return decodeValue(doc, element);
}

/** A document as base64 of its BSON bytes. */
export function packDocument(doc: Document): string {
  return Buffer.from(serialize(doc)).toString('base64');
}

/** The document `packDocument` packed, with its exact types. */
export function unpackDocument(packed: string): Document {
  return deserialize(Buffer.from(packed, 'base64'), TYPE_FAITHFUL_READ);
}

/** A number stored in metadata, whatever numeric BSON type a type-faithful read returned. */
export function storedNumber(value: unknown): number {
  return value === undefined || value === null ? 0 : Number(value);
}

/** Metadata collections that hold one instance's sync (a new sync with the same id starts without them). */
type SyncCollection = Exclude<keyof typeof METADATA_COLLECTIONS, 'leases'>;

/**
 * The metadata database of one cluster, for one instance. Its writes are fenced by the instance's
 * lease (fence.ts): a store made without one only reads.
 */
export class MetadataStore {
  readonly db: Db;

  constructor(
    client: MongoClient,
    /** This instance's `--id`: every document it writes names it. */
    readonly instance: string,
    /** The lease every write is fenced by; none: the store only reads. */
    readonly fence: Fence = READ_ONLY,
  ) {
    this.db = client.db(METADATA_DATABASE, {
      writeConcern: MAJORITY,
      readConcern: MAJORITY_READ,
    });
  }

  /** A metadata collection, its writes fenced. */
  collection<T extends Document>(name: SyncCollection): FencedCollection<T> {
    return new FencedCollection(this.db.collection<T>(METADATA_COLLECTIONS[name]), this.fence);
  }

  /**
   * Deletes every document of this instance from every metadata collection (those keyed by the
   * instance id, and those naming it in `instance`). A new sync starts from nothing: a change
   * stream position, tombstones or a commit record an earlier sync with this id left behind would
   * otherwise be taken for its own.
   */
  async forgetInstance(): Promise<void> {
    const mine: Document = { $or: [{ _id: this.instance }, { instance: this.instance }] };
    for (const name of Object.keys(METADATA_COLLECTIONS) as SyncCollection[]) {
      // The lease stays: it is what lets this instance write at all, and its epoch must only grow.
      if ((name as string) !== 'leases') await this.collection(name).deleteMany(mine);
    }
  }

  /**
   * Indexes the collections that hold many documents per instance on `instance`, the field
   * Ferry's queries of them select by (everything else is read by `_id`), and the verifier's
   * re-check queues on `instance` then `dueAt`, the order they are read in: with 10,000
   * namespaces, a million re-checks waiting, or several instances sharing the store, each read
   * stays a range of an index instead of a scan and an in-memory sort. Idempotent.
   */
  async ensureIndexes(): Promise<void> {
    for (const [name, key] of METADATA_INDEXES) await this.collection(name).createIndex(key);
  }
}

/** The metadata collections with many documents per instance, and the key each is read by. */
const METADATA_INDEXES: readonly (readonly [SyncCollection, Record<string, 1>])[] = [
  ['namespaces', { instance: 1 }],
  ['partitions', { instance: 1 }],
  ['tombstones', { instance: 1 }],
  ['verificationPartitions', { instance: 1 }],
  ['verificationMismatches', { instance: 1 }],
  ['verificationRechecks', { instance: 1, dueAt: 1 }],
  ['verificationCatalogRechecks', { instance: 1, dueAt: 1 }],
];

/** Base of the metadata stores: one metadata collection, used on behalf of one instance. */
export abstract class InstanceCollection<T extends Document> {
  protected readonly collection: FencedCollection<T>;
  /** The instance id every document names. */
  protected readonly instance: string;

  /**
   * Writes made through `counted`, each once it has landed or failed: what was read of this
   * instance's documents before is still true until this moves (while its lease holds, this
   * process is their only writer).
   */
  #changes = 0;

  constructor(store: MetadataStore, name: SyncCollection) {
    this.collection = store.collection<T>(name);
    this.instance = store.instance;
  }

  get changes(): number {
    return this.#changes;
  }

  /** Runs a write, counted in `changes` once it has landed or failed. */
  protected async counted<R>(write: Promise<R>): Promise<R> {
    try {
      return await write;
    } finally {
      this.#changes++;
    }
  }

  /** Per slot, the last answer `keptUntilWrite` read, what it was asked (`args`), and `changes` when the read began. */
  readonly #kept = new Map<string, { changes: number; args: string; value: unknown }>();

  /**
   * `read()`'s answer, read again only after a write counted since the last read began, or when
   * asked with other `args` (one answer kept per slot): progress asks for the same figures every
   * second, and an idle sync's stay the same. Callers do not modify what it returns.
   */
  protected async keptUntilWrite<R>(slot: string, read: () => Promise<R>, args = ''): Promise<R> {
    const changes = this.#changes;
    const kept = this.#kept.get(slot);
    if (kept !== undefined && kept.changes === changes && kept.args === args) return kept.value as R;
    const value = await read();
    this.#kept.set(slot, { changes, args, value });
    return value;
  }
}
