/**
 * Definition differences waiting for confirmation (`verificationCatalogRechecks`), as document
 * differences wait in recheck.ts. The two clusters are never read at one instant and the
 * destination trails the source by change-event application, so a namespace whose options, view
 * definition or indexes differ once (DDL on the source not applied yet) proves nothing. A
 * difference found is kept here with the source's time of that check's reads (`dueAt`: the newest
 * `operationTime` of its replies, read without writing to the source). Once change events through
 * that time are applied, the namespace is checked again; a difference counts only when that check:
 * - finds it again, the same (same subject, same expected and actual definition);
 * - was made once every change event through `dueAt` was applied (before its reads);
 * - had both change streams read past its reads, with no DDL on the namespace waiting to be handled
 *   (a definition changed on the source and back between the two checks would show otherwise).
 * Otherwise what the check found waits again, due at its own reads' time; what it no longer finds
 * is forgotten. One document per namespace, written before the DDL event or plan that caused the
 * check is let go: a restart checks it again. Memory: only the batch being checked.
 */
import type { Timestamp } from 'bson';
import { InstanceCollection, type MetadataStore } from '../meta/store.js';
import type { CatalogDifference } from './catalog-check.js';
import { dueAtFilter } from './recheck-store.js';

/** A namespace's definition differences found by one check, waiting for the next. */
export interface CatalogRecheck {
  ns: string;
  /** Check again once change events through this source time are applied; absent: at once. */
  dueAt?: Timestamp;
  differences: CatalogDifference[];
}

interface CatalogRecheckDocument extends CatalogRecheck {
  _id: { instance: string; ns: string };
  instance: string;
  updatedAt: Date;
}

/** The same difference: subject, kind and description (which names the definitions compared). */
function same(a: CatalogDifference, b: CatalogDifference): boolean {
  return a.subject === b.subject && a.kind === b.kind && a.detail === b.detail;
}

/**
 * What a check decides, given what waited from the previous one (`waiting`) and whether this check
 * may confirm it (`settled`: made after change events through `waiting.dueAt` were applied, both
 * streams past its reads, no DDL on the namespace waiting). `confirmed` are recorded; `unconfirmed`
 * wait for the next check.
 */
export function settleDefinitions(
  waiting: CatalogRecheck | undefined,
  found: readonly CatalogDifference[],
  settled: boolean,
): { confirmed: CatalogDifference[]; unconfirmed: CatalogDifference[] } {
  const before = settled ? (waiting?.differences ?? []) : [];
  const confirmed = found.filter((difference) => before.some((earlier) => same(earlier, difference)));
  return { confirmed, unconfirmed: found.filter((difference) => !confirmed.includes(difference)) };
}

export class CatalogRecheckStore extends InstanceCollection<CatalogRecheckDocument> {
  constructor(store: MetadataStore) {
    super(store, 'verificationCatalogRechecks');
  }

  #key(ns: string): CatalogRecheckDocument['_id'] {
    return { instance: this.instance, ns };
  }

  /** The namespaces whose differences wait for a second check (`db.coll`). */
  async names(): Promise<Set<string>> {
    const docs = await this.collection.find({ instance: this.instance }, { projection: { ns: 1 } }).toArray();
    return new Set(docs.map((doc) => doc.ns));
  }

  async get(ns: string): Promise<CatalogRecheck | undefined> {
    const doc = await this.collection.findOne({ _id: this.#key(ns) });
    if (doc === null) return undefined;
    return { ns: doc.ns, differences: doc.differences, ...(doc.dueAt === undefined ? {} : { dueAt: doc.dueAt }) };
  }

  /** Keeps what a check found for the next one (replacing what waited); nothing found: forgets the namespace. */
  async save(recheck: CatalogRecheck): Promise<void> {
    if (recheck.differences.length === 0) {
      await this.counted(this.collection.deleteOne({ _id: this.#key(recheck.ns) }));
      return;
    }
    const doc: CatalogRecheckDocument = {
      _id: this.#key(recheck.ns),
      instance: this.instance,
      ns: recheck.ns,
      differences: recheck.differences.map(({ ns, subject, kind, detail }) => ({ ns, subject, kind, detail })),
      updatedAt: new Date(),
    };
    if (recheck.dueAt !== undefined) doc.dueAt = recheck.dueAt;
    await this.counted(this.collection.replaceOne({ _id: doc._id }, doc, { upsert: true }));
  }

  /** Namespaces due once events through `applied` are applied (`all`: every one), oldest first, at most `limit`. */
  async due(applied: Timestamp | 'all' | undefined, limit: number): Promise<string[]> {
    const docs = await this.collection
      .find({ instance: this.instance, ...dueAtFilter(applied) }, { projection: { ns: 1 } })
      .sort({ dueAt: 1 })
      .limit(limit)
      .toArray();
    return docs.map((doc) => doc.ns);
  }

  async count(): Promise<number> {
    return this.collection.countDocuments({ instance: this.instance });
  }
}
