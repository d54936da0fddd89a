/**
 * Commit's record in the metadata (`commit`, one document per instance): the commit point and
 * which of commit's stages are done, each written before the next stage starts, so that a Ferry
 * killed in COMMITTING finishes the commit when it starts again:
 *
 * 1. `commitPoint`: the source time taken when commit was received (after the source was
 *    write-blocked, with `sourceAndDestination`); every event up to it is applied.
 * 2. `appliedAt`: events are applied through the commit point (application has stopped).
 * 3. `restoredAt`: every temporary characteristic is restored (restore.ts recomputes what is
 *    left, so an interrupted restore needs no finer record).
 * 4. `completedAt`: destination write blocking lifted; the sync is COMMITTED.
 */
import type { Timestamp } from 'bson';
import { InstanceCollection, type MetadataStore } from './store.js';
import { MAJORITY } from '../cluster/concerns.js';

export interface CommitDocument {
  _id: string;
  commitPoint: Timestamp;
  requestedAt: Date;
  appliedAt?: Date;
  restoredAt?: Date;
  completedAt?: Date;
}

export type CommitStage = 'appliedAt' | 'restoredAt' | 'completedAt';

export class CommitRecord extends InstanceCollection<CommitDocument> {
  constructor(store: MetadataStore) {
    super(store, 'commit');
  }

  async read(): Promise<CommitDocument | null> {
    return this.collection.findOne({ _id: this.instance });
  }

  /** Records a new commit point (replacing one a commit that never reached COMMITTING left). */
  async begin(commitPoint: Timestamp): Promise<CommitDocument> {
    const doc: CommitDocument = { _id: this.instance, commitPoint, requestedAt: new Date() };
    await this.collection.replaceOne({ _id: this.instance }, doc, { upsert: true, writeConcern: MAJORITY });
    return doc;
  }

  async mark(stage: CommitStage): Promise<void> {
    await this.collection.updateOne({ _id: this.instance }, { $set: { [stage]: new Date() } }, { writeConcern: MAJORITY });
  }
}
