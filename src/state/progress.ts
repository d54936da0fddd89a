import { describeCluster, type ClusterEndpoint } from '../domain/clusters.js';
import type { StartRequest } from '../domain/start-request.js';
import type { SyncSnapshot } from '../domain/sync-control.js';
import type { State } from '../domain/states.js';
import { blocksSource } from '../domain/start-request.js';
import { describeOplogTime } from '../domain/oplog-time.js';
import type { VerificationProgress } from '../domain/verification.js';
/**
 * The progress record of `GET /api/v1/progress`, built from in-memory state only, following the
 * spec's rules (§2.1): in IDLE every field but `state` and `canCommit` is null; in PAUSED
 * `lagTimeSeconds` is null; before the copy phase 0 bytes of 1 are copied; copied never exceeds
 * the total (the total is raised to the copied figure when the copy overtakes the estimate).
 */

export interface Progress {
  state: State;
  canCommit: boolean;
  /** True once writes to the destination are safe: after the commit completed. */
  canWrite: boolean | null;
  info: string | null;
  lagTimeSeconds: number | null;
  lag: { overallLagSeconds: number; crudLagSeconds: number; ddlLagSeconds: number } | null;
  totalEventsApplied: number | null;
  collectionCopy: { estimatedTotalBytes: number; estimatedCopiedBytes: number } | null;
  indexBuilding: SyncSnapshot['indexBuilding'] | null;
  directionMapping: { Source: string; Destination: string } | null;
  mongosyncID: string | null;
  coordinatorID: string | null;
  /** mongosync's embedded verifier's progress, per cluster; null when the sync does not verify. */
  verification: VerificationProgress | null;
  warnings: string[] | null;
  /**
   * mongosync's: seconds until change-event application catches up, from how fast the lag fell
   * over the last minute; null when the copy still runs, or the lag did not fall.
   */
  estimatedSecondsToCEACatchup: number | null;
  /** mongosync's: how much source oplog is left before what Ferry still needs rolls off (RUNNING only, else null). */
  estimatedOplogTimeRemaining: string | null;
  /** mongosync's: the last ping round trip in whole ms (absent below 1 ms or before the first; -1: it failed). */
  source: { pingLatencyMs?: number } | null;
  destination: { pingLatencyMs?: number } | null;
  /** Ferry's: the live-tunable figures in force (SIGHUP changes them). */
  tuning: SyncSnapshot['tuning'] | null;
}

export interface ProgressInputs {
  state: State;
  /** The running sync's request, in the current direction; undefined in IDLE. */
  request?: StartRequest;
  clusters: Record<StartRequest['source'], ClusterEndpoint>;
  id: string;
  snapshot: SyncSnapshot;
  /** Warnings the state machine itself holds (e.g. why the sync paused). */
  warnings: string[];
  /** `estimatedSecondsToCEACatchup` as the progress history estimates it (history.ts). */
  catchUpSeconds?: (lagSeconds: number | null) => number | undefined;
}

const NOTHING_YET = {
  canWrite: null,
  info: null,
  lagTimeSeconds: null,
  lag: null,
  totalEventsApplied: null,
  collectionCopy: null,
  indexBuilding: null,
  directionMapping: null,
  mongosyncID: null,
  coordinatorID: null,
  verification: null,
  warnings: null,
  estimatedSecondsToCEACatchup: null,
  estimatedOplogTimeRemaining: null,
  source: null,
  destination: null,
  tuning: null,
} as const;

function wholeNonNegative(value: number | undefined): number {
  return value === undefined || !Number.isFinite(value) || value < 0 ? 0 : Math.floor(value);
}

function collectionCopy(snapshot: SyncSnapshot): NonNullable<Progress['collectionCopy']> {
  const estimate = snapshot.estimatedTotalBytes;
  // No estimate yet (before the copy phase): the spec's 0 of 1.
  if (estimate === undefined || !Number.isFinite(estimate) || estimate < 0) return { estimatedTotalBytes: 1, estimatedCopiedBytes: 0 };
  const total = wholeNonNegative(estimate);
  const copied = wholeNonNegative(snapshot.estimatedCopiedBytes);
  // Nothing to copy (empty collections only): done, shown as 1 of 1 so that copied/total reads 100%.
  if (total === 0 && copied === 0) return { estimatedTotalBytes: 1, estimatedCopiedBytes: 1 };
  return { estimatedTotalBytes: Math.max(total, copied), estimatedCopiedBytes: copied };
}

function info(state: State, snapshot: SyncSnapshot): string | null {
  if (state === 'COMMITTING') return 'waiting for commit to complete';
  if (state === 'COMMITTED') return 'commit completed';
  return snapshot.info;
}

function lag(state: State, snapshot: SyncSnapshot): Progress['lag'] {
  if (state === 'PAUSED') return null;
  // Committed: the source was write-blocked and everything up to the commit point applied.
  if (state === 'COMMITTED') return { overallLagSeconds: 0, crudLagSeconds: 0, ddlLagSeconds: 0 };
  if (snapshot.lag === undefined) return null;
  return {
    overallLagSeconds: wholeNonNegative(snapshot.lag.overallSeconds),
    crudLagSeconds: wholeNonNegative(snapshot.lag.crudSeconds),
    ddlLagSeconds: wholeNonNegative(snapshot.lag.ddlSeconds),
  };
}

/** mongosync's ping figure: whole milliseconds, absent below 1 ms or before a ping returned, -1 when it failed. */
function ping(latency: number | undefined): { pingLatencyMs?: number } {
  if (latency === undefined) return {};
  if (latency < 0) return { pingLatencyMs: -1 };
  return latency < 1 ? {} : { pingLatencyMs: Math.round(latency) };
}

/** What the operator must know that no phase says: the source still refusing writes after the commit. */
function stateWarnings(state: State, request: StartRequest, clusters: ProgressInputs['clusters']): string[] {
  if ((state !== 'COMMITTING' && state !== 'COMMITTED') || !blocksSource(request.enableUserWriteBlocking)) return [];
  return [
    `User writes are blocked on the source (${describeCluster(clusters[request.source])}) since the commit began ` +
      '(enableUserWriteBlocking "sourceAndDestination"), and stay blocked: the application belongs on the destination now. ' +
      'To let the source take writes again: db.adminCommand({setUserWriteBlockMode: 1, global: false})',
  ];
}

export function buildProgress(inputs: ProgressInputs): Progress {
  const { state, request, snapshot } = inputs;
  if (state === 'IDLE' || state === 'INITIALIZING' || request === undefined) {
    return { state, canCommit: false, ...NOTHING_YET };
  }
  const currentLag = lag(state, snapshot);
  return {
    state,
    canCommit: state === 'RUNNING' && snapshot.readyToCommit,
    canWrite: state === 'COMMITTED',
    info: info(state, snapshot),
    lagTimeSeconds: currentLag === null ? null : currentLag.overallLagSeconds,
    lag: currentLag,
    totalEventsApplied: wholeNonNegative(snapshot.eventsApplied),
    collectionCopy: collectionCopy(snapshot),
    indexBuilding: snapshot.indexBuilding ?? null,
    directionMapping: {
      Source: describeCluster(inputs.clusters[request.source]),
      Destination: describeCluster(inputs.clusters[request.destination]),
    },
    mongosyncID: inputs.id,
    coordinatorID: snapshot.coordinatorID ?? inputs.id,
    verification: snapshot.verification ?? null,
    warnings: [...inputs.warnings, ...snapshot.warnings, ...stateWarnings(state, request, inputs.clusters)],
    estimatedSecondsToCEACatchup:
      state === 'RUNNING' && snapshot.info === 'change event application' && currentLag !== null
        ? (inputs.catchUpSeconds?.(currentLag.overallLagSeconds) ?? null)
        : null,
    estimatedOplogTimeRemaining: state === 'RUNNING' ? describeOplogTime(snapshot.oplogTimeRemaining?.seconds) : null,
    source: ping(snapshot.pingLatencyMs?.source),
    destination: ping(snapshot.pingLatencyMs?.destination),
    tuning: snapshot.tuning ?? null,
  };
}
