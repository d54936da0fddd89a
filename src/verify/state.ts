/**
 * The verifier's own record (`verification`, one document per instance, `_id` = the instance id):
 * where each cluster's change stream stands, and where verification's passes stand, so that a
 * restarted Ferry continues verifying instead of starting over.
 *
 * - `source` / `destination`: a resume token of each cluster's change stream such that every
 *   change before it is checked or durably queued for a check (src/verify/touches.ts); set when
 *   verification begins (before any range is read), then moved forward.
 * - `planned`: every namespace's `_id` ranges are in `verificationPartitions`, with the counts
 *   progress shows.
 * - `initialHashingDoneAt`: every range was compared once (unset while a namespace changed by DDL
 *   is scanned again).
 * - `firstPassDoneAt`: every range planned at the start was compared once; a rescan does not undo
 *   it (canCommit waits for it, not for rescans).
 * - `commitBoundary`: the destination's time of commit's "events applied" record: later writes to
 *   the destination are the application's, not Ferry's.
 * - `committedWithDifferences`, `notVerified`, `completedAt`, `outcome`: the final pass.
 */
import type { Document, Timestamp } from 'bson';
import { MAJORITY } from '../cluster/concerns.js';
import { InstanceCollection, storedNumber, type MetadataStore } from '../meta/store.js';

/** A point of a cluster's change stream. */
export interface StreamPoint {
  resumeToken: Document;
  /** The cluster time of the token, when it can be read. */
  time?: Timestamp;
}

export type Side = 'source' | 'destination';

export interface VerificationDocument {
  _id: string;
  source: StreamPoint;
  destination: StreamPoint;
  planned: boolean;
  /** Documents each cluster held when the ranges were planned (progress: `estimatedDocumentCount`). */
  estimatedDocuments: { source: number; destination: number };
  initialHashingDoneAt?: Date;
  firstPassDoneAt?: Date;
  commitBoundary?: Timestamp;
  committedWithDifferences?: boolean;
  notVerified: number;
  completedAt?: Date;
  outcome?: 'clean' | 'differences';
  startedAt: Date;
  updatedAt: Date;
}

export class VerificationState extends InstanceCollection<VerificationDocument> {
  constructor(store: MetadataStore) {
    super(store, 'verification');
  }

  async read(): Promise<VerificationDocument | null> {
    const doc = await this.collection.findOne({ _id: this.instance });
    if (doc === null) return null;
    return {
      ...doc,
      estimatedDocuments: {
        source: storedNumber(doc.estimatedDocuments?.source),
        destination: storedNumber(doc.estimatedDocuments?.destination),
      },
      notVerified: storedNumber(doc.notVerified),
      // A record written before firstPassDoneAt existed: its initial hashing was its first pass.
      ...(doc.firstPassDoneAt === undefined && doc.initialHashingDoneAt !== undefined ? { firstPassDoneAt: doc.initialHashingDoneAt } : {}),
    };
  }

  /** Records that verification begins with its streams at these points (nothing read yet). */
  async begin(source: StreamPoint, destination: StreamPoint): Promise<VerificationDocument> {
    const now = new Date();
    const doc: VerificationDocument = {
      _id: this.instance,
      source,
      destination,
      planned: false,
      estimatedDocuments: { source: 0, destination: 0 },
      notVerified: 0,
      startedAt: now,
      updatedAt: now,
    };
    await this.collection.replaceOne({ _id: this.instance }, doc, { upsert: true, writeConcern: MAJORITY });
    return doc;
  }

  async #set(fields: Partial<VerificationDocument>): Promise<void> {
    await this.collection.updateOne({ _id: this.instance }, { $set: { ...fields, updatedAt: new Date() } }, { writeConcern: MAJORITY });
  }

  saveStream(side: Side, point: StreamPoint): Promise<void> {
    return this.#set({ [side]: point });
  }

  markPlanned(estimatedDocuments: VerificationDocument['estimatedDocuments']): Promise<void> {
    return this.#set({ planned: true, estimatedDocuments });
  }

  async markInitialHashingDone(): Promise<void> {
    const now = new Date();
    // $min: the first pass's time stays the first.
    await this.collection.updateOne(
      { _id: this.instance },
      { $set: { initialHashingDoneAt: now, updatedAt: now }, $min: { firstPassDoneAt: now } },
      { writeConcern: MAJORITY },
    );
  }

  /** A namespace is scanned again (after a DDL): initial hashing is not done any more. */
  async reopenInitialHashing(): Promise<void> {
    await this.collection.updateOne({ _id: this.instance }, { $unset: { initialHashingDoneAt: '' }, $set: { updatedAt: new Date() } });
  }

  setCommitBoundary(time: Timestamp): Promise<void> {
    return this.#set({ commitBoundary: time });
  }

  markCommittedWithDifferences(): Promise<void> {
    return this.#set({ committedWithDifferences: true });
  }

  async addNotVerified(count: number): Promise<void> {
    if (count === 0) return;
    await this.collection.updateOne({ _id: this.instance }, { $inc: { notVerified: count }, $set: { updatedAt: new Date() } });
  }

  complete(outcome: 'clean' | 'differences'): Promise<void> {
    return this.#set({ completedAt: new Date(), outcome });
  }
}
