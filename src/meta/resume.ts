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
import type { Timestamp } from 'bson';
import type { StartRequest } from '../domain/start-request.js';
import type { RecoverableState, SyncPhase } from '../domain/states.js';
import { InstanceCollection, storedNumber, type MetadataStore } from './store.js';
import { MAJORITY } from '../cluster/concerns.js';

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
   * `copied`). Fails if this instance already has one.
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
    await this.collection.insertOne(doc, { writeConcern: MAJORITY });
    return doc;
  }

  /** Enters a new phase, noting when. */
  async enterPhase(phase: SyncPhase): Promise<void> {
    const at = new Date();
    await this.collection.updateOne({ _id: this.instance }, { $set: { phase, updatedAt: at }, $push: { transitions: { phase, at } } });
  }

  /** Records the state the API reports (and why, for a stop on an error). */
  async setState(state: RecoverableState, lastError?: string): Promise<void> {
    const update =
      lastError === undefined
        ? { $set: { state, updatedAt: new Date() }, $unset: { lastError: '' as const } }
        : { $set: { state, lastError, updatedAt: new Date() } };
    await this.collection.updateOne({ _id: this.instance }, update);
  }

  async markCatalogRecorded(): Promise<void> {
    await this.collection.updateOne({ _id: this.instance }, { $set: { catalogRecorded: true, updatedAt: new Date() } });
  }
}
