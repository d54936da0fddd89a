/**
 * The way back (`wayBack`, one document per instance): what reversing a committed reversible sync
 * needs, written by its commit on both clusters before the destination's user writes are allowed
 * (src/commit/commit.ts), read by `reverse` (src/reverse/):
 *
 * - `writableAt`: the destination's own time taken while its user writes were still blocked, just
 *   before they were allowed. Every write an application made there after the cut-over is after
 *   it: the reversed sync applies the destination's change events from this time.
 * - `userWritesBlocked`: each cluster's write blocking once the commit completes (the source
 *   blocked, the destination writable), so that either cluster says why it refuses writes.
 * - `reversals` and the direction: which sync of the instance it belongs to (a record left by an
 *   earlier direction is never taken for the current one).
 *
 * Written on the destination first (the sync's own metadata), then on the source, so that the way
 * back survives the loss of either copy. A commit interrupted between the two writes, or after
 * them, takes the recorded `writableAt` again: a later time could miss writes already made.
 */
import type { Timestamp } from 'bson';
import type { ClusterName } from '../domain/clusters.js';
import { MAJORITY } from '../cluster/concerns.js';
import { InstanceCollection, storedNumber, type MetadataStore } from './store.js';

export interface WayBackDocument {
  _id: string;
  /** `ResumeDocument.reversals` of the committed sync this describes. */
  reversals: number;
  /** That sync's direction. */
  source: ClusterName;
  destination: ClusterName;
  /** The destination's time just before its user writes were allowed. */
  writableAt: Timestamp;
  /** Whether each cluster blocks user writes once the commit completes. */
  userWritesBlocked: Record<ClusterName, boolean>;
  recordedAt: Date;
}

export class WayBackRecord extends InstanceCollection<WayBackDocument> {
  constructor(store: MetadataStore) {
    super(store, 'wayBack');
  }

  /** This instance's record for the sync reversed `reversals` times, or null. */
  async read(reversals: number): Promise<WayBackDocument | null> {
    const doc = await this.collection.findOne({ _id: this.instance });
    return doc === null || storedNumber(doc.reversals) !== reversals ? null : doc;
  }

  /** Writes (or writes again) the record. */
  async write(record: Omit<WayBackDocument, '_id' | 'recordedAt'>): Promise<void> {
    const doc: WayBackDocument = { _id: this.instance, ...record, recordedAt: new Date() };
    await this.collection.replaceOne({ _id: this.instance }, doc, { upsert: true, writeConcern: MAJORITY });
  }
}
