/**
 * Re-checks that left memory (`verificationRechecks`): documents to check again, written here when
 * the verifier's queue holds more than its settings allow, when a re-check has waited long enough
 * that its stream position should move on, and for every difference a range comparison finds
 * (before the range's progress is recorded). A re-check read back from here is deleted once it is
 * decided. One document per namespace and `_id`: a document queued again is merged (the later
 * `dueAt` wins, its confirmation starts over).
 */
import type { Timestamp } from 'bson';
import type { AnyBulkWriteOperation } from 'mongodb';
import { InstanceCollection, storedNumber, type MetadataStore } from '../meta/store.js';

/** A re-check as stored. */
export interface StoredRecheck {
  ns: string;
  /** The `_id`, packed. */
  id: string;
  /** Check once change events through this source time are applied; absent: at once. */
  dueAt?: Timestamp;
  /** Checks made (0: none yet); the second with an unchanged source decides. */
  attempts: number;
  /** Hash of the source document (or of its absence) at the last check. */
  sourceHash?: string;
  /** The destination's document was written after commit (by the application): not verifiable. */
  afterCommit?: boolean;
}

interface RecheckDocument extends StoredRecheck {
  _id: { instance: string; ns: string; id: string };
  instance: string;
  updatedAt: Date;
}

/**
 * What is due once change events through `applied` are applied (`all`: everything, nothing more
 * will be), by `dueAt` (absent: at once).
 */
export function dueAtFilter(applied: Timestamp | 'all' | undefined): Record<string, unknown> {
  if (applied === 'all') return {};
  if (applied === undefined) return { dueAt: { $exists: false } };
  return { $or: [{ dueAt: { $exists: false } }, { dueAt: { $lte: applied } }] };
}

export class RecheckStore extends InstanceCollection<RecheckDocument> {
  constructor(store: MetadataStore) {
    super(store, 'verificationRechecks');
  }

  #key(ns: string, id: string): RecheckDocument['_id'] {
    return { instance: this.instance, ns, id };
  }

  /**
   * Writes re-checks (merged with any stored for the same document: the later `dueAt`; a new
   * touch starts confirmation over, a carried-over attempt keeps its state). Waits for majority.
   */
  async save(rechecks: readonly StoredRecheck[]): Promise<void> {
    if (rechecks.length === 0) return;
    const now = new Date();
    const operations: AnyBulkWriteOperation<RecheckDocument>[] = rechecks.map((recheck) => {
      const set: Partial<RecheckDocument> = {
        instance: this.instance,
        ns: recheck.ns,
        id: recheck.id,
        attempts: recheck.attempts,
        updatedAt: now,
      };
      if (recheck.sourceHash !== undefined) set.sourceHash = recheck.sourceHash;
      if (recheck.afterCommit === true) set.afterCommit = true;
      const update: Record<string, unknown> = { $set: set };
      if (recheck.sourceHash === undefined) update.$unset = { sourceHash: '' };
      if (recheck.dueAt !== undefined) update.$max = { dueAt: recheck.dueAt };
      return { updateOne: { filter: { _id: this.#key(recheck.ns, recheck.id) }, update, upsert: true } };
    });
    await this.counted(this.collection.bulkWrite(operations, { ordered: false }));
  }

  /**
   * Re-checks due once events through `applied` are applied (`all`: every one, nothing more will be
   * applied), oldest first, at most `limit`, but those in `skip` (in memory).
   */
  async due(
    applied: Timestamp | 'all' | undefined,
    limit: number,
    skip: readonly { ns: string; id: string }[] = [],
  ): Promise<StoredRecheck[]> {
    const docs = await this.collection
      .find({
        instance: this.instance,
        ...dueAtFilter(applied),
        ...(skip.length > 0 ? { _id: { $nin: skip.map((key) => this.#key(key.ns, key.id)) } } : {}),
      })
      .sort({ dueAt: 1 })
      .limit(limit)
      .toArray();
    return docs.map((doc) => {
      const recheck: StoredRecheck = { ns: doc.ns, id: doc.id, attempts: storedNumber(doc.attempts) };
      if (doc.dueAt !== undefined) recheck.dueAt = doc.dueAt;
      if (doc.sourceHash !== undefined) recheck.sourceHash = doc.sourceHash;
      if (doc.afterCommit === true) recheck.afterCommit = true;
      return recheck;
    });
  }

  async remove(keys: readonly { ns: string; id: string }[]): Promise<void> {
    if (keys.length === 0) return;
    await this.counted(this.collection.deleteMany({ _id: { $in: keys.map((key) => this.#key(key.ns, key.id)) } }));
  }

  /** Marks stored re-checks of these documents as written on the destination after commit. */
  async markAfterCommit(keys: readonly { ns: string; id: string }[]): Promise<void> {
    if (keys.length === 0) return;
    await this.counted(
      this.collection.updateMany({ _id: { $in: keys.map((key) => this.#key(key.ns, key.id)) } }, { $set: { afterCommit: true } }),
    );
  }

  /** How many are stored (read again only after a write: progress asks every second). */
  async count(): Promise<number> {
    return this.keptUntilWrite('count', () => this.collection.countDocuments({ instance: this.instance }));
  }

  /** Removes every stored re-check; returns how many there were. */
  async clear(): Promise<number> {
    const result = await this.counted(this.collection.deleteMany({ instance: this.instance }));
    return result.deletedCount;
  }
}
