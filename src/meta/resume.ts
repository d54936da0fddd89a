/**
 * The resume document: one per instance, `_id` = the instance's `--id`. It says what the sync is
 * doing and is written before the work it describes, so a restarted Ferry continues from it:
 * the state the API reports, the phase of the initial copy (with the time each phase began), the
 * start request, and the source time T0 from which change events must be applied.
 *
 * Phases, in order: `planning` (catalog recorded, destination prepared, partition table written)
 * → `copying` → `buildingIndexes` (only when indexes are built after the copy) → `copied` (the
 * initial copy is complete; only change-event application remains).
 */
import { EJSON, type Timestamp } from 'bson';
import type { HotDocuments } from '../domain/hot-documents.js';
import type { StartRequest } from '../domain/start-request.js';
import type { RecoverableState, SyncPhase } from '../domain/states.js';
import { InstanceCollection, storedNumber, type MetadataStore } from './store.js';
import { MAJORITY } from '../cluster/concerns.js';
import { retryTransient } from '../cluster/retry.js';

export interface PhaseTransition {
  phase: SyncPhase;
  at: Date;
}

export interface ResumeDocument {
  /** The instance id. */
  _id: string;
  state: RecoverableState;
  phase: SyncPhase;
  transitions: PhaseTransition[];
  /** The start request, `source`/`destination` in the current direction. */
  request: StartRequest;
  /** T0: the source's operation time taken before anything was read; change events apply from it. */
  startAtOperationTime: Timestamp;
  /** True once every selected namespace has its record (the catalog snapshot is complete). */
  catalogRecorded: boolean;
  /**
   * `--hotDocIDs` of every run of this sync so far: their events were not applied, so the commit
   * must copy them even if a later run is started without the flag (added to, never removed).
   */
  hotDocuments?: HotDocuments[];
  /**
   * How many times the sync has been reversed: 0 for the sync `start` began, n + 1 for the sync
   * that reverses sync n (its metadata lives on its own destination, the other cluster). Where
   * both clusters hold a resume document of this instance, the higher count is the sync that
   * runs now (src/recovery/find-sync.ts). Absent (documents written before reverse existed): 0.
   */
  reversals?: number;
  /**
   * Set when the sync began with its initial copy already complete, as of that source time: a
   * reversed sync, whose clusters were equal when T0 was taken (src/reverse/). Change-event
   * application then neither waits for a copy nor keeps tombstones.
   */
  copyCompletedAt?: Timestamp;
  /** Why the sync last stopped on an error (cleared when it runs again). */
  lastError?: string;
  /** Set when that error is one the sync cannot continue from (its code): `resume` is refused for good. */
  cannotContinue?: string;
  ferryVersion: string;
  createdAt: Date;
  updatedAt: Date;
}

/** How many times the sync of `doc` has been reversed (see `ResumeDocument.reversals`). */
export function reversalsOf(doc: Pick<ResumeDocument, 'reversals'>): number {
  return storedNumber(doc.reversals);
}

/** What `create` needs; the rest starts empty. */
export interface NewResume {
  request: StartRequest;
  startAtOperationTime: Timestamp;
  ferryVersion: string;
  /** A reversed sync's: its state (REVERSING), reversal count and copy already complete (phase `copied`). Default: a new sync. */
  reversal?: { state: RecoverableState; reversals: number; copyCompletedAt: Timestamp };
}

export class ResumeStore extends InstanceCollection<ResumeDocument> {
  constructor(store: MetadataStore) {
    super(store, 'resume');
  }

  /** This instance's resume document, or null when it has never started a sync here. */
  async read(): Promise<ResumeDocument | null> {
    // Timestamps and Dates keep their types without type-faithful options; numbers are not stored.
    return this.collection.findOne({ _id: this.instance });
  }

  /**
   * Records a new sync (state RUNNING, phase `planning`; a reversed sync: its own state, phase
   * `copied`). Fails if this instance already has one. A failure leaves no document of its own
   * behind: a write concern error (a majority not reached in time) comes after the insert took
   * effect on the primary, and a sync recorded there would refuse every later start with this id
   * although this one was refused.
   */
  async create(fresh: NewResume): Promise<ResumeDocument> {
    const now = new Date();
    const { reversal } = fresh;
    const phase: SyncPhase = reversal === undefined ? 'planning' : 'copied';
    const doc: ResumeDocument = {
      _id: this.instance,
      state: reversal?.state ?? 'RUNNING',
      phase,
      transitions: [{ phase, at: now }],
      request: fresh.request,
      startAtOperationTime: fresh.startAtOperationTime,
      catalogRecorded: false,
      reversals: reversal?.reversals ?? 0,
      ferryVersion: fresh.ferryVersion,
      createdAt: now,
      updatedAt: now,
    };
    if (reversal !== undefined) doc.copyCompletedAt = reversal.copyCompletedAt;
    try {
      await this.collection.insertOne(doc, { writeConcern: MAJORITY });
    } catch (error) {
      // Only this very document (its creation time): never one a racing instance wrote.
      await retryTransient(() => this.collection.deleteOne({ _id: this.instance, createdAt: now }, { writeConcern: MAJORITY })).catch(
        () => undefined,
      );
      throw error;
    }
    return doc;
  }

  /** Enters a new phase, noting when. */
  async enterPhase(phase: SyncPhase): Promise<void> {
    const at = new Date();
    await this.collection.updateOne({ _id: this.instance }, { $set: { phase, updatedAt: at }, $push: { transitions: { phase, at } } });
  }

  /**
   * Records the state the API reports (and why, for a stop on an error; `cannotContinue`: the code
   * of an error the sync cannot continue from).
   */
  async setState(state: RecoverableState, lastError?: string, cannotContinue?: string): Promise<void> {
    const update =
      lastError === undefined
        ? { $set: { state, updatedAt: new Date() }, $unset: { lastError: '' as const, cannotContinue: '' as const } }
        : { $set: { state, lastError, updatedAt: new Date(), ...(cannotContinue === undefined ? {} : { cannotContinue }) } };
    await this.collection.updateOne({ _id: this.instance }, update);
  }

  /**
   * Adds `more` to the recorded hot documents and returns them all, `_id`s with their BSON types
   * (a 64-bit integer stays one).
   */
  async addHotDocuments(more: readonly HotDocuments[]): Promise<HotDocuments[]> {
    const doc = await this.collection.findOne(
      { _id: this.instance },
      { projection: { hotDocuments: 1 }, promoteLongs: false, promoteValues: false, bsonRegExp: true },
    );
    const recorded = [...((doc?.hotDocuments ?? []) as HotDocuments[])];
    let added = false;
    for (const entry of more) {
      let target = recorded.find((known) => known.db === entry.db && known.coll === entry.coll);
      if (target === undefined) recorded.push((target = { db: entry.db, coll: entry.coll, ids: [] }));
      const known = new Set(target.ids.map((id) => EJSON.stringify(id, { relaxed: false })));
      for (const id of entry.ids) {
        if (known.has(EJSON.stringify(id, { relaxed: false }))) continue;
        target.ids.push(id);
        added = true;
      }
    }
    if (added) {
      await this.collection.updateOne(
        { _id: this.instance },
        { $set: { hotDocuments: recorded, updatedAt: new Date() } },
        { writeConcern: MAJORITY },
      );
    }
    return recorded;
  }

  /** Other instances whose syncs to this destination block its user writes and have not committed. */
  async othersBlocking(): Promise<string[]> {
    const docs = await this.collection
      .find(
        { _id: { $ne: this.instance }, state: { $ne: 'COMMITTED' }, 'request.enableUserWriteBlocking': { $ne: 'none' } },
        { projection: { _id: 1 } },
      )
      .toArray();
    return docs.map((doc) => String(doc._id));
  }

  /** Every sync recorded on this destination, whatever its instance (to find syncs that would overlap). */
  /** The hot documents (`--hotDocIDs`) every one of `instances` recorded, types kept (several instances: the commit copies them all). */
  async hotDocumentsOf(instances: readonly string[]): Promise<HotDocuments[]> {
    const docs = await this.collection
      .find(
        { _id: { $in: [...instances] } },
        { projection: { hotDocuments: 1 }, promoteLongs: false, promoteValues: false, bsonRegExp: true },
      )
      .toArray();
    return docs.flatMap((doc) => (doc.hotDocuments ?? []) as HotDocuments[]);
  }

  async all(): Promise<ResumeDocument[]> {
    return this.collection.find({}).toArray() as Promise<ResumeDocument[]>;
  }

  async markCatalogRecorded(): Promise<void> {
    await this.collection.updateOne({ _id: this.instance }, { $set: { catalogRecorded: true, updatedAt: new Date() } });
  }
}
