/**
 * What the state machine (src/state/) asks of the sync (src/sync/, which sequences the phases).
 * The state machine is the one owner of state: the sync never changes it, it only carries out
 * what it is asked and reports what happened by itself through `attach`.
 *
 * Every method may throw a FerryError (reported to the API caller as is); anything else is
 * reported as InternalError. The state machine serializes calls: no two run at once.
 */
import type { StartRequest } from './start-request.js';
import type { RecoverableState } from './states.js';
import type { VerificationProgress, VerificationReport } from './verification.js';

export interface RecoveredState {
  state: RecoverableState;
  /** The start request of that run, `source`/`destination` in the current direction. */
  request: StartRequest;
}

/** What happened in the background, reported by the sync. */
export type SyncEvent =
  /** Commit finished: destination complete, characteristics restored. COMMITTING → COMMITTED. */
  | { type: 'commitCompleted' }
  /** Reverse finished setting up the other direction. REVERSING → RUNNING. */
  | { type: 'reverseCompleted' }
  /** The sync stopped on an error it cannot get past by itself. RUNNING → PAUSED. */
  | { type: 'failed'; error: Error };

/** How the initial copy of one collection stands (the status page's per-namespace progress). */
export interface NamespaceProgress {
  /** `db.coll` */
  namespace: string;
  /** The source collection's size when planned (raised to the bytes copied if the copy overtakes it). */
  estimatedTotalBytes: number;
  /** Bytes copied: recorded by finished and checkpointed partitions, plus what running ones wrote since. */
  estimatedCopiedBytes: number;
  partitions: { total: number; done: number; inProgress: number };
}

/** In-memory figures for progress. Must be cheap: progress calls it on every request. */
export interface SyncSnapshot {
  /** What the sync is doing (`collection copy`, `change event application`, ...); null when nothing. */
  info: string | null;
  /** Estimated bytes to copy; undefined until the copy phase has an estimate. */
  estimatedTotalBytes?: number;
  /** Bytes this instance has copied. */
  estimatedCopiedBytes?: number;
  /** Change events applied since this process started (not persisted). */
  eventsApplied: number;
  /** Lag of change-event application, seconds; undefined until it is measured. */
  lag?: { overallSeconds: number; crudSeconds: number; ddlSeconds: number };
  indexBuilding?: { indexesBuilt: number; totalIndexesToBuild: number; collectionsFinished: number; collectionsTotal: number };
  /** The embedded verifier's progress; undefined when the sync does not verify. */
  verification?: VerificationProgress;
  /** The copy is done, events are being applied and lag is small enough (mongosync: ≤ 30 s). */
  readyToCommit: boolean;
  /** Conditions an operator should know about (they do not stop the sync). */
  warnings: string[];
  /** The initial copy, collection by collection; undefined before planning recorded them. */
  namespaces?: NamespaceProgress[];
  /**
   * Seconds of source oplog left before the oldest change event still needed rolls off, while
   * change-event application runs: `seconds` undefined until first read (Infinity: no end in sight).
   */
  oplogTimeRemaining?: { seconds?: number };
  /** Last `ping` round trip to each cluster in ms, -1 when the last ping failed; absent before the first. */
  pingLatencyMs?: { source?: number; destination?: number };
  /** Several instances: the instance that coordinates them (src/coordination/); absent: this one. */
  coordinatorID?: string;
  /** The live-tunable figures in force. */
  tuning?: { loadLevel: number; copyWorkers: number; batchesInFlight: number; applyLanes: number; batchBytes: number };
}

export interface SyncControl {
  /** Called once, before anything else, with the state machine's receiver of background events. */
  attach(report: (event: SyncEvent) => void): void;
  /** On process start: the recorded state of an earlier run with this `--id`, continued in the background; undefined when none. */
  recover(): Promise<RecoveredState | undefined>;
  /** Checks the clusters for this request (reachable, topology, change streams, empty destination namespaces). Changes nothing. */
  preflight(request: StartRequest): Promise<void>;
  /** Persists the request and begins copy and change-event application in the background. */
  start(request: StartRequest): Promise<void>;
  /** Stops copying and applying, after recording where it stands. */
  pause(): Promise<void>;
  /** Continues from the recorded position. */
  resume(): Promise<void>;
  /**
   * Blocks source writes if asked, applies up to the commit point and restores characteristics in
   * the background; reports `commitCompleted`.
   */
  commit(): Promise<void>;
  /** Begins syncing in the other direction; reports `reverseCompleted`. */
  reverse(): Promise<void>;
  /** In-memory figures only; never awaits a cluster. */
  snapshot(): SyncSnapshot;
  /**
   * The verifier's report (`GET /api/v1/verification`), read from the metadata: differences after
   * `skip`, at most `limit`. Null when no sync is known.
   */
  verificationReport(skip: number, limit: number): Promise<VerificationReport | null>;
  /** Stops cleanly after recording state (SIGINT/SIGTERM). */
  close(): Promise<void>;
}
