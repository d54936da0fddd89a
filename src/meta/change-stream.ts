/**
 * What change-event application records in the metadata (`changeStream`, one document per
 * instance, `_id` = the instance id), so that a restarted Ferry continues where it stopped:
 *
 * - `resumeToken`: the stream resumes after it (`startAfter`); every event up to it is durably
 *   applied on the destination. Absent until the first checkpoint: the stream then starts at T0.
 * - `appliedThrough`: the source time of that token (for lag after a restart).
 * - `copyCompletedAt`: the source time at which the initial copy was known complete and the
 *   tombstone sweep done (tombstones.ts); absent until then. A rename whose event is older than
 *   this may have raced the copy, so its collection is read again whole (ddl.ts).
 *
 * A checkpoint is written only after the events it covers are applied (lanes' watermark), at
 * most once per interval while running, and at every DDL barrier, pause, commit and stop; never
 * when its token is the one already recorded (an idle stream's replies repeat theirs).
 */
import type { Document, Timestamp } from 'bson';
import { InstanceCollection, type MetadataStore } from './store.js';
import { MAJORITY } from '../cluster/concerns.js';

export interface ChangeStreamDocument {
  _id: string;
  resumeToken?: Document;
  appliedThrough?: Timestamp;
  copyCompletedAt?: Timestamp;
  updatedAt: Date;
}

/** A point of the stream up to which everything is applied. */
export interface StreamPosition {
  resumeToken: Document;
  /** The source time of the token, when known. */
  time?: Timestamp;
}

export class ChangeStreamCheckpoints extends InstanceCollection<ChangeStreamDocument> {
  constructor(store: MetadataStore) {
    super(store, 'changeStream');
  }

  async read(): Promise<ChangeStreamDocument | null> {
    return this.collection.findOne({ _id: this.instance });
  }

  /** Records that every event up to `position` is applied. */
  async save(position: StreamPosition): Promise<void> {
    const fields: Partial<ChangeStreamDocument> = { resumeToken: position.resumeToken, updatedAt: new Date() };
    if (position.time !== undefined) fields.appliedThrough = position.time;
    await this.collection.updateOne({ _id: this.instance }, { $set: fields }, { upsert: true, writeConcern: MAJORITY });
  }

  /** Records that the initial copy is complete and its tombstones swept, as of source time `at`. */
  async markCopyCompleted(at: Timestamp): Promise<void> {
    await this.collection.updateOne(
      { _id: this.instance },
      { $set: { copyCompletedAt: at, updatedAt: new Date() } },
      { upsert: true, writeConcern: MAJORITY },
    );
  }
}
