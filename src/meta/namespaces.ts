/**
 * Per-namespace records: one document per collection or view the sync covers, written when the
 * source catalog is read (before anything is created on the destination) and updated as each
 * step of its preparation is done, so a restart redoes only what is missing. They also carry
 * what commit must restore: each index's original specification and the temporary changes made
 * to it, a capped collection's original size and document limit, and a clustered or time-series
 * collection's original collection-level TTL.
 */
import type { Binary } from 'bson';
import { namespaceOf } from '../domain/namespaces.js';
import type { Document } from 'mongodb';
import { InstanceCollection, packDocument, storedNumber, TYPE_FAITHFUL_READ, unpackDocument, type MetadataStore } from './store.js';
import type { CappedOriginal, DestinationSharding, IndexBuildTime, IndexPlan, TemporaryChanges } from '../domain/catalog.js';

/** One index in a namespace record. Specifications are packed (`packDocument`, see store.ts). */
export interface StoredIndex {
  name: string;
  original: string;
  temporary: string;
  changes: TemporaryChanges;
}

/** A namespace record in memory. */
export interface NamespaceRecord {
  db: string;
  coll: string;
  type: 'collection' | 'view';
  /** The source collection's UUID (absent for views). */
  uuid?: Binary;
  /** `listCollections` options on the source. */
  sourceOptions: Document;
  /** The `create` options on the destination (temporary form). */
  createOptions: Document;
  /** Set for capped collections: what commit restores. */
  capped?: CappedOriginal;
  /**
   * Set for clustered and time-series collections with a collection-level TTL: the source's
   * `expireAfterSeconds`, which the destination does without until commit restores it.
   */
  expireAfterSeconds?: number;
  /** The indexes Ferry builds on the destination (never `_id`). */
  indexes: IndexPlan[];
  /** Set when the collection is sharded on the destination: its key and supporting index. */
  sharding?: DestinationSharding;
  indexBuildTime: IndexBuildTime;
  /** The source's document count and data size when planned (collections only). */
  sourceCount: number;
  sourceBytes: number;
  /** Steps done on the destination / in the metadata. */
  created: boolean;
  partitioned: boolean;
  indexesBuilt: boolean;
  /**
   * Set when reading the collection whole from the source (src/cea/resync.ts) could not finish
   * because the source renamed or dropped it meanwhile: the destination's collection may not
   * hold what the source's does until the DDL that follows in the stream settles it (a rename
   * reads it whole under the new name, a drop ends it). Commit does not complete while it is set.
   */
  incomplete?: true;
  /** Sharded on the destination, chunks laid out (only for records with `sharding`). */
  sharded?: boolean;
}

/** A namespace record as stored: options and index specifications packed (see store.ts). */
/** `DestinationSharding` as stored: the key pattern and the index specification packed. */
interface StoredSharding {
  key: string;
  supportingIndex: { origin: DestinationSharding['supportingIndex']['origin']; spec: string };
}

export interface NamespaceDocument extends Omit<NamespaceRecord, 'sourceOptions' | 'createOptions' | 'indexes' | 'sharding'> {
  _id: { instance: string; ns: string };
  instance: string;
  sourceOptions: string;
  createOptions: string;
  indexes: StoredIndex[];
  sharding?: StoredSharding;
}

function toDocument(instance: string, record: NamespaceRecord): NamespaceDocument {
  const { sourceOptions, createOptions, indexes, sharding, ...fields } = record;
  return {
    ...fields,
    ...(sharding === undefined
      ? {}
      : {
          sharding: {
            key: packDocument(sharding.key),
            supportingIndex: { origin: sharding.supportingIndex.origin, spec: packDocument(sharding.supportingIndex.spec) },
          },
        }),
    _id: { instance, ns: namespaceOf(record) },
    instance,
    sourceOptions: packDocument(sourceOptions),
    createOptions: packDocument(createOptions),
    indexes: indexes.map((index) => ({
      name: index.name,
      original: packDocument(index.original),
      temporary: packDocument(index.temporary),
      changes: index.changes,
    })),
  };
}

/** A stored record back in memory; numbers read type-faithfully become plain numbers again. */
function fromDocument(doc: NamespaceDocument): NamespaceRecord {
  const { _id, instance, sourceOptions, createOptions, indexes, capped, expireAfterSeconds, sharding, ...fields } = doc;
  const record: NamespaceRecord = {
    ...fields,
    sourceOptions: unpackDocument(sourceOptions),
    createOptions: unpackDocument(createOptions),
    indexes: indexes.map((index) => {
      const changes: TemporaryChanges = { ...index.changes };
      if (changes.expireAfterSeconds !== undefined) changes.expireAfterSeconds = storedNumber(changes.expireAfterSeconds);
      return { name: index.name, original: unpackDocument(index.original), temporary: unpackDocument(index.temporary), changes };
    }),
    sourceCount: storedNumber(fields.sourceCount),
    sourceBytes: storedNumber(fields.sourceBytes),
  };
  if (capped !== undefined) {
    record.capped = { size: storedNumber(capped.size) };
    if (capped.max !== undefined) record.capped.max = storedNumber(capped.max);
  }
  if (expireAfterSeconds !== undefined) record.expireAfterSeconds = storedNumber(expireAfterSeconds);
  if (sharding !== undefined) {
    const key = unpackDocument(sharding.key);
    record.sharding = {
      key: Object.fromEntries(Object.entries(key).map(([path, direction]) => [path, direction === 'hashed' ? 'hashed' : 1])),
      supportingIndex: { origin: sharding.supportingIndex.origin, spec: unpackDocument(sharding.supportingIndex.spec) },
    };
  }
  return record;
}

/** The steps of a namespace's preparation that are recorded as done. */
export type NamespaceStep = 'created' | 'sharded' | 'partitioned' | 'indexesBuilt';

export class NamespaceRecords extends InstanceCollection<NamespaceDocument> {
  constructor(store: MetadataStore) {
    super(store, 'namespaces');
  }

  #key(record: { db: string; coll: string }) {
    return { _id: { instance: this.instance, ns: namespaceOf(record) } };
  }

  /** Writes the records of a fresh catalog snapshot (replacing any partial earlier attempt). */
  async replaceAll(records: readonly NamespaceRecord[]): Promise<void> {
    await this.collection.deleteMany({ instance: this.instance });
    if (records.length === 0) return;
    await this.collection.insertMany(
      records.map((record) => toDocument(this.instance, record)),
      { ordered: false },
    );
  }

  /** Every record of this instance, in namespace order. */
  async list(): Promise<NamespaceRecord[]> {
    const docs = await this.collection.find({ instance: this.instance }, TYPE_FAITHFUL_READ).toArray();
    return docs
      .map((doc) => fromDocument(doc as NamespaceDocument))
      .sort((a, b) => (namespaceOf(a) < namespaceOf(b) ? -1 : namespaceOf(a) > namespaceOf(b) ? 1 : 0));
  }

  /**
   * Every instance's records (several instances, one per source shard), as name and source UUID
   * only: which collection each name holds on the destination after the DDL any of them applied.
   */
  async everyInstance(): Promise<{ db: string; coll: string; uuid?: Binary }[]> {
    const docs = await this.collection.find({}, { projection: { db: 1, coll: 1, uuid: 1 } }).toArray();
    return docs.map((doc) => ({
      db: String(doc.db),
      coll: String(doc.coll),
      ...(doc.uuid === undefined ? {} : { uuid: doc.uuid as Binary }),
    }));
  }

  /** Every instance's records (several instances: the one that applied a DDL has the current record). */
  async listEveryInstance(): Promise<NamespaceRecord[]> {
    const docs = await this.collection.find({}, TYPE_FAITHFUL_READ).toArray();
    return docs.map((doc) => fromDocument(doc as NamespaceDocument));
  }

  /** The namespaces recorded as created on the destination, and their type: a light read (the destination's check). */
  async created(): Promise<{ db: string; coll: string; type: 'collection' | 'view' }[]> {
    const docs = await this.collection
      .find({ instance: this.instance, created: true }, { projection: { db: 1, coll: 1, type: 1 } })
      .toArray();
    return docs.map((doc) => ({ db: String(doc.db), coll: String(doc.coll), type: doc.type === 'view' ? 'view' : 'collection' }));
  }

  /** This instance's record of `db.coll`, or undefined. */
  async get(ns: { db: string; coll: string }): Promise<NamespaceRecord | undefined> {
    const doc = await this.collection.findOne(this.#key(ns), TYPE_FAITHFUL_READ);
    return doc === null ? undefined : fromDocument(doc as NamespaceDocument);
  }

  /**
   * Writes one record, replacing the one of the same namespace if any: change-event
   * application keeps the records in step with the destination's catalog as DDL events change it.
   */
  async put(record: NamespaceRecord): Promise<void> {
    await this.collection.replaceOne(this.#key(record), toDocument(this.instance, record), { upsert: true });
  }

  /** Removes the record of `db.coll` (dropped, or renamed out of the sync). */
  async remove(ns: { db: string; coll: string }): Promise<void> {
    await this.collection.deleteOne(this.#key(ns));
  }

  /** Records a step as done for many namespaces in one round trip, with each one's extra fields. */
  async markManyDone(
    entries: readonly { record: { db: string; coll: string }; extra?: Partial<Pick<NamespaceDocument, 'sourceCount' | 'sourceBytes'>> }[],
    step: NamespaceStep,
  ): Promise<void> {
    if (entries.length === 0) return;
    await this.collection.bulkWrite(
      entries.map(({ record, extra }) => ({ updateOne: { filter: this.#key(record), update: { $set: { [step]: true, ...extra } } } })),
      { ordered: false },
    );
  }

  /** Records a step as done, with extra fields (e.g. sizes found when partitioning). */
  async markDone(
    record: { db: string; coll: string },
    step: NamespaceStep,
    extra: Partial<Pick<NamespaceDocument, 'sourceCount' | 'sourceBytes'>> = {},
  ): Promise<void> {
    await this.collection.updateOne(this.#key(record), { $set: { [step]: true, ...extra } });
  }
}
