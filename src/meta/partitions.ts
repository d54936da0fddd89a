/**
 * The partition table of the initial copy: one document per `_id` range of a collection. It is
 * written before copying starts; a partition is marked `in progress` (and its attempt counted)
 * before a worker starts on it, checkpointed with the last `_id` written (every batch before it
 * fully written) at a bounded interval, and marked `done` when its range is copied. After a crash
 * the copy resumes each unfinished partition after its checkpoint and skips finished ones.
 *
 * Bounds and checkpoints are packed strings (`packValue`, see store.ts): exact for every BSON
 * value, MinKey and MaxKey included, and cheap to hand to a worker thread.
 */
import type { Binary } from 'bson';
import { InstanceCollection, storedNumber, TYPE_FAITHFUL_READ, type MetadataStore } from './store.js';
import { GroupedWrites } from './grouped-writes.js';

export type PartitionStatus = 'not started' | 'in progress' | 'done';

export interface PartitionKey {
  instance: string;
  /** `db.coll` */
  ns: string;
  /** Position of the range in its collection, from 0. */
  index: number;
}

/** One start of work on a partition. */
export interface PartitionAttempt {
  startedAt: Date;
  /** The checkpoint it resumed after (packed); absent when it started at `min`. */
  resumedAfter?: string;
  /** Documents already copied by earlier attempts when it started. */
  copiedDocsBefore: number;
}

/** What a partition's stored document and its in-memory row both hold. */
interface PartitionFields {
  db: string;
  coll: string;
  /** `id`: read through the `_id` index from `min` to `max`; `natural`: the whole collection in natural order (capped). */
  order: 'id' | 'natural';
  /** Inclusive lower `_id` bound (MinKey for the first range), packed. */
  min: string;
  /** Exclusive upper `_id` bound (MaxKey for the last range, read as unbounded), packed. */
  max: string;
  /**
   * A chunk of a sharded collection read on its shard (several instances, src/coordination/): the
   * packed document `{hint, min, max}` of its shard-key index bounds; `order` is then `natural` (no
   * `_id` checkpoint: an interrupted chunk is read again, documents already written tolerated).
   */
  range?: string;
  estimatedBytes: number;
  status: PartitionStatus;
  /** `_id` of the last document written with every earlier one, packed (absent before the first checkpoint). */
  lastId?: string;
  copiedDocs: number;
  copiedBytes: number;
  attempts: number;
}

export interface PartitionDocument extends PartitionFields {
  _id: PartitionKey;
  instance: string;
  /** The source collection's UUID when planned. */
  uuid?: Binary;
  estimatedCount: number;
  attemptLog: PartitionAttempt[];
  updatedAt: Date;
  finishedAt?: Date;
}

/** A partition as the scheduler and workers use it. */
export interface PartitionRow extends PartitionFields {
  key: PartitionKey;
}

/** A range as planned, before it is stored. */
export interface PlannedPartition {
  order: 'id' | 'natural';
  min: string;
  max: string;
  /** See PartitionFields.range. */
  range?: string;
  estimatedCount: number;
  estimatedBytes: number;
}

/** Totals over the partition table. */
export interface PartitionSummary {
  total: number;
  done: number;
  inProgress: number;
  copiedBytes: number;
  copiedDocs: number;
}

/** A stored partition as a row; numbers read type-faithfully become plain numbers again. */
function toRow(doc: PartitionDocument): PartitionRow {
  const { _id, instance, uuid, estimatedCount, attemptLog, updatedAt, finishedAt, ...fields } = doc;
  return {
    ...fields,
    key: { instance: _id.instance, ns: _id.ns, index: storedNumber(_id.index) },
    estimatedBytes: storedNumber(fields.estimatedBytes),
    copiedDocs: storedNumber(fields.copiedDocs),
    copiedBytes: storedNumber(fields.copiedBytes),
    attempts: storedNumber(fields.attempts),
  };
}

export class PartitionTable extends InstanceCollection<PartitionDocument> {
  /** `start` and `finish` of partitions copied at once share round trips (grouped-writes.ts). */
  readonly #grouped: GroupedWrites<PartitionDocument>;

  constructor(store: MetadataStore) {
    super(store, 'partitions');
    this.#grouped = new GroupedWrites(this.collection);
  }

  /**
   * Writes the plans of several collections in one insert. None of them may have partitions
   * recorded: planning clears what a crash may have left of unfinished plans once, for every
   * collection at a time (`deleteOfNamespaces`), instead of one delete per collection, each
   * scanning the whole table.
   */
  async writePlans(
    plans: readonly { ns: { db: string; coll: string; uuid?: Binary }; partitions: readonly PlannedPartition[] }[],
  ): Promise<void> {
    const instance = this.instance;
    const now = new Date();
    const docs = plans.flatMap(({ ns, partitions }) =>
      partitions.map((partition, index): PartitionDocument => {
        const doc: PartitionDocument = {
          _id: { instance, ns: `${ns.db}.${ns.coll}`, index },
          instance,
          db: ns.db,
          coll: ns.coll,
          ...partition,
          status: 'not started',
          copiedDocs: 0,
          copiedBytes: 0,
          attempts: 0,
          attemptLog: [],
          updatedAt: now,
        };
        if (ns.uuid !== undefined) doc.uuid = ns.uuid;
        return doc;
      }),
    );
    if (docs.length > 0) await this.collection.insertMany(docs, { ordered: false });
  }

  /** Removes this instance's partitions of the namespaces named (`db.coll`), in one delete. */
  async deleteOfNamespaces(names: readonly string[]): Promise<void> {
    if (names.length > 0) await this.collection.deleteMany({ instance: this.instance, '_id.ns': { $in: [...names] } });
  }

  /** Removes every partition of this instance. */
  async deleteAll(): Promise<void> {
    await this.collection.deleteMany({ instance: this.instance });
  }

  /** Partitions not yet done, in namespace then range order. */
  async unfinished(): Promise<PartitionRow[]> {
    const docs = await this.collection.find({ instance: this.instance, status: { $ne: 'done' } }, TYPE_FAITHFUL_READ).toArray();
    return docs.map((doc) => toRow(doc as PartitionDocument)).sort(byRange);
  }

  /** Every partition of this instance, in namespace then range order. */
  async list(): Promise<PartitionRow[]> {
    const docs = await this.collection.find({ instance: this.instance }, TYPE_FAITHFUL_READ).toArray();
    return docs.map((doc) => toRow(doc as PartitionDocument)).sort(byRange);
  }

  async summary(): Promise<PartitionSummary> {
    const rows = await this.list();
    return {
      total: rows.length,
      done: rows.filter((row) => row.status === 'done').length,
      inProgress: rows.filter((row) => row.status === 'in progress').length,
      copiedBytes: rows.reduce((sum, row) => sum + row.copiedBytes, 0),
      copiedDocs: rows.reduce((sum, row) => sum + row.copiedDocs, 0),
    };
  }

  /** Marks a partition `in progress` and counts the attempt, before a worker starts on it. */
  async start(row: PartitionRow): Promise<void> {
    const attempt: PartitionAttempt = { startedAt: new Date(), copiedDocsBefore: row.copiedDocs };
    if (row.lastId !== undefined) attempt.resumedAfter = row.lastId;
    await this.#grouped.write({
      updateOne: {
        filter: { _id: row.key },
        update: { $set: { status: 'in progress', updatedAt: attempt.startedAt }, $inc: { attempts: 1 }, $push: { attemptLog: attempt } },
      },
    });
  }

  /**
   * Records the in-order position reached: every document up to `lastId` is written. Partitions
   * copied at once checkpoint while the destination is busy with their batches, so their
   * checkpoints meet in flight and go together (GroupedWrites).
   */
  async checkpoint(key: PartitionKey, position: { lastId: string; copiedDocs: number; copiedBytes: number }): Promise<void> {
    await this.#grouped.write({ updateOne: { filter: { _id: key }, update: { $set: { ...position, updatedAt: new Date() } } } });
  }

  /** Marks a partition done with its final position (no `lastId` when the range was empty). */
  async finish(key: PartitionKey, position: { lastId?: string; copiedDocs: number; copiedBytes: number }): Promise<void> {
    const now = new Date();
    await this.#grouped.write({
      updateOne: { filter: { _id: key }, update: { $set: { ...position, status: 'done', updatedAt: now, finishedAt: now } } },
    });
  }
}

function byRange(a: PartitionRow, b: PartitionRow): number {
  if (a.key.ns !== b.key.ns) return a.key.ns < b.key.ns ? -1 : 1;
  return a.key.index - b.key.index;
}
