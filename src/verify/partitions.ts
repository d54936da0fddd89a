/**
 * The verifier's `_id` ranges (`verificationPartitions`): one document per range of a collection,
 * planned as the copy plans its own (src/plan/copy-plan.ts: `$collStats`, a `$sample` of `_id`s,
 * `--partitionSizeMB`), but the verifier's own, so that it checks what the source holds rather
 * than what the copy planned (and works for a sync that never copied, such as a reversed one).
 *
 * A range is `not started`, `in progress` with the last `_id` compared (`after`: a restart
 * continues after it) and the counts so far, or `done`. A namespace scanned again after a DDL event
 * gets a new plan (its old ranges are replaced).
 */
import { namespaceOf, type Namespace } from '../domain/namespaces.js';
import type { PlannedPartition } from '../meta/partitions.js';
import { GroupedWrites } from '../meta/grouped-writes.js';
import { InstanceCollection, storedNumber, TYPE_FAITHFUL_READ, type MetadataStore } from '../meta/store.js';
import type { SideCount } from './compare-range.js';

export type RangeStatus = 'not started' | 'in progress' | 'done';

export interface RangeKey {
  instance: string;
  /** `db.coll` */
  ns: string;
  index: number;
}

export interface RangeRow extends Namespace {
  key: RangeKey;
  /** Packed bounds (`packValue`). */
  min: string;
  max: string;
  status: RangeStatus;
  /** Everything up to this `_id` (packed) is compared. */
  after?: string;
  source: SideCount;
  destination: SideCount;
  /** Candidate differences found (each queued for a re-check). */
  differences: number;
  /** Source documents and bytes in the range when planned. */
  estimatedCount: number;
  estimatedBytes: number;
}

interface RangeDocument extends Omit<RangeRow, 'key'> {
  _id: RangeKey;
  instance: string;
  updatedAt: Date;
  finishedAt?: Date;
}

const count = (value: Partial<SideCount> | undefined): SideCount => ({
  documents: storedNumber(value?.documents),
  bytes: storedNumber(value?.bytes),
});

function toRow(doc: RangeDocument): RangeRow {
  const { _id, instance: _instance, updatedAt: _updatedAt, finishedAt: _finishedAt, ...fields } = doc;
  return {
    ...fields,
    key: { instance: _id.instance, ns: _id.ns, index: storedNumber(_id.index) },
    source: count(fields.source),
    destination: count(fields.destination),
    differences: storedNumber(fields.differences),
    estimatedCount: storedNumber(fields.estimatedCount),
    estimatedBytes: storedNumber(fields.estimatedBytes),
  };
}

/** Totals of the table, per collection and overall. */
export interface RangeSummary {
  total: number;
  done: number;
  /** Namespaces with ranges, and those whose every range is done. */
  collections: number;
  scannedCollections: number;
  source: SideCount;
  destination: SideCount;
}

export class VerificationPartitions extends InstanceCollection<RangeDocument> {
  /** Progress of ranges compared at once shares round trips (grouped-writes.ts). */
  readonly #grouped: GroupedWrites<RangeDocument>;

  constructor(store: MetadataStore) {
    super(store, 'verificationPartitions');
    this.#grouped = new GroupedWrites(this.collection);
  }

  /** Replaces the ranges of one collection with a fresh plan (a delete that scans the table: one collection's replan). */
  async writePlan(ns: Namespace, planned: readonly PlannedPartition[]): Promise<void> {
    await this.forget(ns);
    await this.addPlan(ns, planned);
  }

  /**
   * Writes the ranges of a collection that has none recorded: the initial plan clears the table
   * once (`deleteAll`) and then only adds, since a delete per collection, each scanning the whole
   * table, made planning grow with the square of the collections.
   */
  async addPlan(ns: Namespace, planned: readonly PlannedPartition[]): Promise<void> {
    await this.addPlans([{ ns, partitions: planned }]);
  }

  /** `addPlan` of several collections in one insert. */
  async addPlans(plans: readonly { ns: Namespace; partitions: readonly PlannedPartition[] }[]): Promise<void> {
    const instance = this.instance;
    const now = new Date();
    const docs = plans.flatMap(({ ns, partitions }) =>
      partitions.map((range, index): RangeDocument => ({
        _id: { instance, ns: namespaceOf(ns), index },
        instance,
        db: ns.db,
        coll: ns.coll,
        min: range.min,
        max: range.max,
        status: 'not started',
        source: { documents: 0, bytes: 0 },
        destination: { documents: 0, bytes: 0 },
        differences: 0,
        estimatedCount: range.estimatedCount,
        estimatedBytes: range.estimatedBytes,
        updatedAt: now,
      })),
    );
    if (docs.length > 0) await this.counted(this.collection.insertMany(docs, { ordered: false }));
  }

  /** Removes every range of this instance (before a plan from scratch). */
  async deleteAll(): Promise<void> {
    await this.counted(this.collection.deleteMany({ instance: this.instance }));
  }

  /** Removes the ranges of one collection (dropped on the source). */
  async forget(ns: Namespace): Promise<void> {
    await this.counted(this.collection.deleteMany({ instance: this.instance, db: ns.db, coll: ns.coll }));
  }

  async unfinished(): Promise<RangeRow[]> {
    const docs = await this.collection.find({ instance: this.instance, status: { $ne: 'done' } }, TYPE_FAITHFUL_READ).toArray();
    return docs.map((doc) => toRow(doc as RangeDocument)).sort(byRange);
  }

  async list(): Promise<RangeRow[]> {
    const docs = await this.collection.find({ instance: this.instance }, TYPE_FAITHFUL_READ).toArray();
    return docs.map((doc) => toRow(doc as RangeDocument)).sort(byRange);
  }

  /**
   * Reads only the fields it adds up (progress asks for it often, and tables of many collections
   * are long), and only after a write: an idle verifier asked every second for the same figures.
   * Callers do not modify the summary (it is the one kept).
   */
  async summary(): Promise<RangeSummary> {
    return this.keptUntilWrite('summary', () => this.#readSummary());
  }

  async #readSummary(): Promise<RangeSummary> {
    const docs = await this.collection
      .find({ instance: this.instance }, { projection: { _id: 1, status: 1, source: 1, destination: 1 }, ...TYPE_FAITHFUL_READ })
      .toArray();
    const summary: RangeSummary = {
      total: docs.length,
      done: 0,
      collections: 0,
      scannedCollections: 0,
      source: { documents: 0, bytes: 0 },
      destination: { documents: 0, bytes: 0 },
    };
    const byNamespace = new Map<string, boolean>();
    for (const doc of docs) {
      const done = doc.status === 'done';
      if (done) summary.done++;
      byNamespace.set(doc._id.ns, (byNamespace.get(doc._id.ns) ?? true) && done);
      for (const side of ['source', 'destination'] as const) {
        const counted = count(doc[side]);
        summary[side].documents += counted.documents;
        summary[side].bytes += counted.bytes;
      }
    }
    summary.collections = byNamespace.size;
    for (const scanned of byNamespace.values()) if (scanned) summary.scannedCollections++;
    return summary;
  }

  /** Records how far a range is compared: `after` and the counts so far, and whether it is done. */
  async record(
    key: RangeKey,
    progress: Pick<RangeRow, 'source' | 'destination' | 'differences'> & { after?: string; done: boolean },
  ): Promise<void> {
    const now = new Date();
    const set: Partial<RangeDocument> = {
      status: progress.done ? 'done' : 'in progress',
      source: progress.source,
      destination: progress.destination,
      differences: progress.differences,
      updatedAt: now,
    };
    if (progress.after !== undefined) set.after = progress.after;
    if (progress.done) set.finishedAt = now;
    await this.counted(this.#grouped.write({ updateOne: { filter: { _id: key }, update: { $set: set } } }));
  }

  /** Marks every range of a namespace done without reading it (the namespace is reported whole, e.g. missing). */
  async skipNamespace(ns: Namespace): Promise<void> {
    const now = new Date();
    await this.counted(
      this.collection.updateMany(
        { instance: this.instance, db: ns.db, coll: ns.coll },
        { $set: { status: 'done', updatedAt: now, finishedAt: now } },
      ),
    );
  }
}

function byRange(a: RangeRow, b: RangeRow): number {
  if (a.key.ns !== b.key.ns) return a.key.ns < b.key.ns ? -1 : 1;
  return a.key.index - b.key.index;
}

/** Ranges with more of their estimated source bytes left to compare first (the order the first pass takes them in). */
export function byRemainingBytes(a: RangeRow, b: RangeRow): number {
  return remainingBytes(b) - remainingBytes(a);
}

function remainingBytes(row: RangeRow): number {
  return Math.max(0, row.estimatedBytes - row.source.bytes);
}
