/**
 * The contract every phase of a sync implements, and the context it is built with.
 *
 * A phase owns one part of the migration and the metadata records of that part: planning
 * (src/plan/planning.ts), the initial copy (src/copy/initial-copy.ts), change-event application
 * (src/cea/applier.ts), commit (src/commit/commit.ts), verification (src/verify/verifier.ts), reverse
 * (src/reverse/reverse.ts); later the coordination of several instances. The sync (src/sync/orchestrator.ts) only sequences phases:
 * it builds them from the factories the composition root gives it (src/cli/compose.ts), and
 *
 * - calls `recover()` on each when a run begins (after a restart, or a resume): the phase reads
 *   what its records say (position, figures) without starting anything, so `status()` is right
 *   even for a paused sync;
 * - calls `start()` to run it from its recorded position; the promise settles `done` when the
 *   phase's work is complete, `stopped` when it was asked to stop first, and rejects on a failure
 *   the phase cannot get past (the sync then pauses with that error);
 * - calls `stop()` to have it stop at its next safe point (its position recorded; a restart
 *   continues from there); it resolves once the phase has stopped;
 * - reads `status()`, in-memory figures that never wait on a cluster, for progress;
 * - tells it, through `onSyncPhase`, each part of the initial copy the sync enters.
 *
 * A new phase is a new folder whose class implements `Phase`, built with a SyncContext; it uses
 * src/plan/ and the floors below, never another phase (eslint.config.js FLOORS), and records
 * what it needs in collections of its own in the metadata database (MetadataStore).
 */
import type { Timestamp } from 'bson';
import type { Cluster } from '../cluster/connect.js';
import type { SyncSettings } from '../config/settings.js';
import type { StartRequest } from '../domain/start-request.js';
import type { SyncPhase } from '../domain/states.js';
import type { SyncSnapshot } from '../domain/sync-control.js';
import type { VerificationReport } from '../domain/verification.js';
import type { Logger } from '../log/logger.js';
import type { ResumeDocument } from '../meta/resume.js';
import type { MetadataStore } from '../meta/store.js';
import type { CounterValues } from '../metrics/counters.js';
import type { HistogramSet } from '../metrics/histograms.js';

/** How a phase's run ended: its work is complete, or it stopped at a safe point when asked. */
export type PhaseOutcome = 'done' | 'stopped';

/** What a phase says of itself, for progress (merged by status.ts). */
export interface PhaseStatus {
  /** What it is doing (`collection copy`, `change event application`...); the last phase that says something wins. */
  info?: string;
  /** Conditions an operator should know about. */
  warnings?: string[];
  /** Whether, as far as this phase goes, a commit could succeed now; absent when it has no say. */
  readyToCommit?: boolean;
  /** Progress figures it owns; a later phase's figure replaces an earlier one's. */
  figures?: Partial<
    Pick<
      SyncSnapshot,
      'estimatedTotalBytes' | 'estimatedCopiedBytes' | 'indexBuilding' | 'lag' | 'namespaces' | 'oplogTimeRemaining' | 'verification'
    >
  >;
  /** Work done by this phase instance, for `/metrics` and progress (summed over phases and runs). */
  counters?: Partial<CounterValues>;
}

export interface Phase {
  /** Who it is, in logs. */
  readonly name: string;
  /** Reads what its records say into memory; starts nothing. */
  recover(): Promise<void>;
  /** Runs from the recorded position until done, stopped, or a failure it cannot get past. */
  start(): Promise<PhaseOutcome>;
  /** Stops at the next safe point, its position recorded; resolves once stopped. Harmless when not running. */
  stop(): Promise<void>;
  /** In-memory figures; never waits on a cluster. */
  status(): PhaseStatus;
  /** The sync's initial copy entered `phase` (recorded before this is called). */
  onSyncPhase?(phase: SyncPhase): void;
  /**
   * The operator changed live settings (SIGHUP): apply them at the next safe point (partition,
   * batch). The context's `settings` keeps what the run started with; this is the only news.
   */
  onSettings?(settings: SyncSettings): void;
}

/** Change-event application: a phase that runs alongside the others from T0 until commit. */
export interface ChangeApplication extends Phase {
  /** Applies every event through source time `time`, then stops with its position recorded (commit). */
  applyThrough(time: Timestamp): Promise<void>;
  /**
   * Resolves true once every event through source time `time` is applied, or once application
   * waits at a DDL barrier for the initial copy (every event before that DDL applied, none after
   * it until the copy is done); false when application stops or fails first. Application goes on.
   */
  caughtUpTo(time: Timestamp): Promise<boolean>;
}

/** Commit: begun while the request waits, finished in the background by `start`. */
export interface CommitPhase extends Phase {
  /** Blocks the source if asked, takes the commit point and records it; a failure leaves the sync as it was. */
  begin(): Promise<void>;
}

/**
 * Verification: a phase that runs alongside the others from the start of a run, through commit,
 * until its final pass after COMMITTED (then `start` settles `done`). It reads both clusters and
 * writes only its own metadata.
 */
export interface VerificationPhase extends Phase {
  /** The operator committed (the commit point is recorded): say loudly if differences are known. */
  onCommit(): void;
  /** The report of `GET /api/v1/verification` (reads the metadata): differences after `skip`, at most `limit`. */
  report(skip: number, limit: number): Promise<VerificationReport>;
}

/**
 * Reverse: checks and records the reversed sync while the request waits (`begin`), then prepares
 * its destination in the background (`start`, state REVERSING) until the reversed sync can run.
 */
export interface ReversePhase extends Phase {
  /** Checks that the committed sync can be reversed, then records the reversed sync (REVERSING); a refusal changes nothing. */
  begin(): Promise<void>;
}

/**
 * What reverse is built with: the reversed sync (clusters, request and metadata in its direction:
 * its destination is the committed sync's source) and the committed sync's metadata.
 */
export interface ReverseContext {
  source: Cluster;
  destination: Cluster;
  /** The reversed sync's request (src/domain/start-request.ts `reversedRequest`). */
  request: StartRequest;
  /** The reversed sync's metadata, on its destination. */
  store: MetadataStore;
  /** The committed sync's metadata, on its destination (the reversed sync's source). */
  committed: MetadataStore;
  /** `ResumeDocument.reversals` of the committed sync. */
  reversals: number;
  /**
   * Takes the reversed sync's lease on its destination (src/meta/lease.ts): `begin` calls it once
   * every check passed, before its first write there, so that a refused reverse writes nothing.
   */
  takeLease(): Promise<void>;
  /**
   * Several instances (src/coordination/): the reversed sync's coordination. The way back is the
   * coordinator's (its commit recorded it), and the coordinator alone prepares the destination.
   */
  coordination?: Coordination;
  ferryVersion: string;
  settings: SyncSettings;
  logger: Logger;
}

/** What every phase is built with: the sync it belongs to. */
export interface SyncContext {
  /** The sync's clusters, in its direction. */
  source: Cluster;
  destination: Cluster;
  request: StartRequest;
  /** The metadata database on the destination, for this instance. */
  store: MetadataStore;
  /** The sync's resume document as it was when this run began (T0: `startAtOperationTime`). */
  resume: ResumeDocument;
  settings: SyncSettings;
  histograms: HistogramSet;
  logger: Logger;
  /** The part of the initial copy the sync is in now. */
  syncPhase(): SyncPhase;
  /** Records that the initial copy enters `phase`, then tells every phase (`onSyncPhase`). */
  enterSyncPhase(phase: SyncPhase): Promise<void>;
  /** Since when the source or the destination has not answered, if one does not now (src/cluster/health.ts): lag counts it. */
  clusterOutageSince(): Date | undefined;
  /**
   * Checks that nothing but Ferry changed what it owns on the destination (src/guard/): its lease
   * and metadata, the collections and views it created. Throws DestinationChanged (final) otherwise.
   */
  checkDestination(): Promise<void>;
  /**
   * Runs `change`, a change Ferry itself makes to the destination's catalog (creating, dropping or
   * renaming the namespaces named; one without `coll` stands for its whole database), so that the
   * destination's check never takes it for someone else's.
   */
  changingCatalog<T>(namespaces: readonly CatalogName[], change: () => Promise<T>): Promise<T>;
  /**
   * Resolves true once change-event application has applied the source's changes through `time`
   * (as `ChangeApplication.caughtUpTo`); false when no application runs, or it stops first.
   */
  changeEventsCaughtUp(time: Timestamp): Promise<boolean>;
  /**
   * Set when this instance is one of several, one per source shard (`--id <shardId>`,
   * src/coordination/): the phases copy and apply this shard's share and meet the other instances
   * at the cluster-wide steps. Absent for a single instance.
   */
  coordination?: Coordination;
}

/**
 * The steps instances of one migration meet at (src/coordination/). Each instance records the
 * steps it reaches; the coordinator's are its decisions (`prepared`, `indexesBuilt`, `commitPoint`,
 * `restored`), which the others wait for.
 */
export type CoordinationStep =
  | 'started'
  | 'prepared'
  | 'copied'
  | 'indexesBuilt'
  | 'commitRequested'
  | 'commitPoint'
  | 'drained'
  | 'restored'
  | 'committed'
  | 'reverseRequested'
  | 'reversePrepared';

/** What a phase of a coordinated instance uses of its coordination (src/coordination/coordination.ts). */
export interface Coordination {
  /** This instance's id (`--id`: a shard ID of the migration's original source). */
  readonly instance: string;
  /**
   * This instance's source shard, read directly by the copy and change-event application: the
   * shard named by its id, or reversed the new source's shard at its position (src/coordination/membership.ts).
   */
  readonly shard: { id: string; cluster: Cluster };
  /** Every instance of the migration: the original source's shard IDs, `listShards` order. */
  readonly members: readonly string[];
  /** The instance that runs the cluster-wide steps. */
  readonly coordinatorId: string;
  readonly isCoordinator: boolean;
  /** Records (majority, fenced by this instance's lease) that this instance reached `step`, with a value when it decides one. */
  reach(step: CoordinationStep, value?: unknown): Promise<void>;
  /** Waits until every instance reached `step` (progress names those missing meanwhile); false when `stopped()` first. */
  awaitAll(step: CoordinationStep, stopped: () => boolean): Promise<boolean>;
  /** Waits until the coordinator reached `step`: its value (`{}` without one), or undefined when `stopped()` first. */
  awaitCoordinator(step: CoordinationStep, stopped: () => boolean): Promise<{ value?: unknown } | undefined>;
  /** The coordinator's decision at `step` if it has taken it (`{}` without a value), read once. */
  decision(step: CoordinationStep): Promise<{ value?: unknown } | undefined>;
  /** Notes that every event of this shard's stream earlier than `time` is applied (published with the next refresh). */
  noteAppliedBefore(time: Timestamp | undefined): void;
  /**
   * Waits until every other instance applied every event of its shard's stream earlier than
   * `time` (progress says `why` waits meanwhile); false when `stopped()` first.
   */
  awaitAppliedBefore(time: Timestamp, why: string, stopped: () => boolean): Promise<boolean>;
}

/** A namespace, or a whole database (no `coll`), whose catalog entry Ferry changes. */
export interface CatalogName {
  db: string;
  coll?: string;
}

/** How commit takes change-event application over from the sync (src/commit/hand-off.ts uses it). */
export interface ChangeApplicationHandoff {
  /** The change-event application running now, or a new one started from its records. */
  take(): Promise<ChangeApplication>;
  /** Stops the one running (its position recorded) and keeps its figures; the next `take` starts anew. */
  retire(): Promise<void>;
}

export interface CommitContext extends SyncContext {
  changeApplication: ChangeApplicationHandoff;
}

/** The phases a sync is made of, as the composition root builds them. */
export interface PhaseFactories {
  /** Run one after another, from planning to the end of the initial copy. */
  sequence: ((context: SyncContext) => Phase)[];
  changeApplication(context: SyncContext): ChangeApplication;
  commit(context: CommitContext): CommitPhase;
  /** Built when the sync verifies (the start request and `--disableVerification` allow it). */
  verification?(context: SyncContext): VerificationPhase;
  /** Reverse (src/reverse/): from a committed reversible sync to the sync the other way. */
  reverse(context: ReverseContext): ReversePhase;
}
