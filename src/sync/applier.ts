/**
 * The seam where change-event application (src/cea/) plugs into the engine.
 *
 * The engine gives a factory everything the applier needs and calls `start` once the sync's
 * resume document (with T0) exists, so application runs alongside the copy (as mongosync's does:
 * the source's oplog never rolls past T0 during a long copy), tells it each phase the copy
 * enters (`copyPhase`: application waits for the copy's planning, and checks the copy's deletes
 * again once it is complete), and calls `stop` before the engine stops (pause, close, failure).
 * Commit calls `applyThrough` with the commit point. The engine reports `change event
 * application` once the copy is complete, and `canCommit` only once the applier says it has
 * caught up.
 */
import type { Timestamp } from 'bson';
import type { MongoClient } from 'mongodb';
import type { Logger } from '../log/logger.js';
import type { ResumeDocument } from '../meta/resume.js';
import type { MetadataStore } from '../meta/store.js';
import type { HistogramSet } from '../metrics/index.js';
import type { NamespaceSelector } from '../plan/namespaces.js';
import type { StartRequest } from '../domain/start-request.js';
import type { SyncPhase } from '../domain/states.js';
import type { SyncSnapshot } from '../domain/sync-control.js';
import type { ClusterEndpoint } from '../domain/clusters.js';

export interface ApplierContext {
  source: MongoClient;
  destination: MongoClient;
  /** Connection strings, for the apply workers' own clients (never logged). */
  sourceUri: string;
  /** The source cluster, for errors. */
  sourceEndpoint: ClusterEndpoint;
  destinationUri: string;
  /** The metadata database on the destination (where the resume token belongs). */
  store: MetadataStore;
  /** The resume document as the engine read or created it (T0: `startAtOperationTime`). */
  resume: ResumeDocument;
  request: StartRequest;
  selector: NamespaceSelector;
  /** Where apply latency and lag are recorded (`applyLatencyMs`, `lagMs`). */
  histograms: HistogramSet;
  logger: Logger;
  /** Reports an error the applier cannot get past: the engine pauses the sync with it. */
  fail(error: Error): void;
}

/** In-memory figures of the applier. */
export interface ApplierSnapshot {
  /** Change events applied by this process. */
  eventsApplied: number;
  lag?: SyncSnapshot['lag'];
  /** The copy is complete (and checked) and lag is small enough for commit (mongosync: ≤ 30 s). */
  caughtUp: boolean;
  /** Why application stopped for good, with what the operator must do (e.g. history lost). */
  problem?: string;
}

export interface ChangeApplier {
  /** Starts applying in the background from the persisted resume point (T0 at first). */
  start(): Promise<void>;
  /** Stops after applying what it read and persisting its resume point. */
  stop(): Promise<void>;
  /** The initial copy entered `phase` (also called with the recorded phase on launch). */
  copyPhase(phase: SyncPhase): void;
  /** Applies every event up to source time `time`, then stops, its resume point persisted (commit). */
  applyThrough(time: Timestamp): Promise<void>;
  /** In-memory figures; must not wait on a cluster. */
  snapshot(): ApplierSnapshot;
}

export type ChangeApplierFactory = (context: ApplierContext) => ChangeApplier;
