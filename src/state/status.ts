/**
 * What the status page shows beyond `/api/v1/progress`, served read-only at `GET /api/v1/status`
 * and `GET /api/v1/namespaces`, from memory only (never a query per request): the states this
 * process went through, the tuning in force, each cluster's address and latency, what write
 * blocking holds on each side, the requests legal now (with the one to send next), and the last
 * hour of progress samples for the charts.
 */
import { describeCluster, type ClusterEndpoint } from '../domain/clusters.js';
import { blocksDestination, blocksSource, type StartRequest } from '../domain/start-request.js';
import type { NamespaceProgress, SyncSnapshot } from '../domain/sync-control.js';
import type { Command, State } from '../domain/states.js';
import type { ProgressSample } from './history.js';
import type { StateChange } from './machine.js';

/** A request the API accepts now, ready to send. */
export interface LegalAction {
  command: Command;
  method: 'POST';
  path: string;
  body: Record<string, unknown>;
  /** The one an operator most likely wants next. */
  recommended: boolean;
  /** What it does, in a sentence. */
  description: string;
}

export interface ClusterStatus {
  /** `cluster0` / `cluster1` and the first host (never credentials). */
  name: string;
  /** Last ping round trip in ms (fractional), -1 when it failed, null before the first. */
  pingLatencyMs: number | null;
  /** Whether user writes are blocked there by this sync (as Ferry set them). */
  writesBlocked: boolean;
}

export interface Status {
  state: State;
  id: string;
  timeline: { state: State; at: string }[];
  tuning: SyncSnapshot['tuning'] | null;
  /** The sync's request as started (no credentials in it); null in IDLE. */
  request: StartRequest | null;
  source: ClusterStatus | null;
  destination: ClusterStatus | null;
  /** Seconds of source oplog left (null: not read yet or not running; Infinity is sent as null too, see `oplogUnbounded`). */
  oplogSecondsRemaining: number | null;
  oplogUnbounded: boolean;
  actions: LegalAction[];
  /** Why nothing can be sent now, or what to wait for. */
  waitingFor: string | null;
  history: { samples: ProgressSample[] };
}

export interface StatusInputs {
  state: State;
  canCommit: boolean;
  id: string;
  request: StartRequest | undefined;
  clusters: Record<StartRequest['source'], ClusterEndpoint>;
  snapshot: SyncSnapshot;
  timeline: StateChange[];
  samples: ProgressSample[];
}

/** Whether each side is write-blocked by the sync now (as mongosync's modes define it: domain/start-request.ts). */
export function writeBlockingNow(state: State, request: StartRequest): { source: boolean; destination: boolean } {
  const mode = request.enableUserWriteBlocking;
  return {
    // From the commit on; the source stays blocked after it (the application has moved).
    source: blocksSource(mode) && (state === 'COMMITTING' || state === 'COMMITTED'),
    // From start until the commit completes.
    destination: blocksDestination(mode) && state !== 'COMMITTED',
  };
}

function action(command: Command, recommended: boolean, description: string, body: Record<string, unknown> = {}): LegalAction {
  return { command, method: 'POST', path: `/api/v1/${command}`, body, recommended, description };
}

/** The requests legal in `state`, and what to wait for when none moves the sync forward. */
export function legalActions(
  state: State,
  canCommit: boolean,
  request: StartRequest | undefined,
): { actions: LegalAction[]; waitingFor: string | null } {
  switch (state) {
    case 'IDLE':
      return {
        actions: [
          action('start', true, 'Start syncing cluster0 (source) to cluster1 (destination); swap them to sync the other way', {
            source: 'cluster0',
            destination: 'cluster1',
          }),
        ],
        waitingFor: null,
      };
    case 'RUNNING': {
      const blocking = request !== undefined && blocksSource(request.enableUserWriteBlocking);
      const commit = action(
        'commit',
        true,
        blocking
          ? 'Cut over: Ferry blocks writes on the source, applies the last changes, restores the destination, and unblocks it'
          : 'Cut over: stop the application writing to the source first, then commit; the destination opens once COMMITTED',
      );
      const pause = action('pause', !canCommit, 'Stop copying and applying at a safe point (resume continues from there)');
      return canCommit
        ? { actions: [commit, pause], waitingFor: null }
        : { actions: [pause], waitingFor: 'canCommit: the copy and index builds must finish and the lag fall to 30 s or less' };
    }
    case 'PAUSED':
      return { actions: [action('resume', true, 'Continue from where the sync stopped')], waitingFor: null };
    case 'COMMITTING':
      return { actions: [], waitingFor: 'the commit to complete (COMMITTED, canWrite true)' };
    case 'COMMITTED': {
      const reversible = request?.reversible === true && request.enableUserWriteBlocking === 'sourceAndDestination';
      return reversible
        ? { actions: [action('reverse', false, 'Sync back the other way (the old destination becomes the source)')], waitingFor: null }
        : { actions: [], waitingFor: null };
    }
    default:
      return { actions: [], waitingFor: state === 'INITIALIZING' ? 'Ferry to find what an earlier run recorded' : null };
  }
}

export function buildStatus(inputs: StatusInputs): Status {
  const { state, request, snapshot } = inputs;
  const { actions, waitingFor } = legalActions(state, inputs.canCommit, request);
  const blocked = request === undefined ? undefined : writeBlockingNow(state, request);
  const cluster = (side: 'source' | 'destination'): ClusterStatus | null =>
    request === undefined
      ? null
      : {
          name: describeCluster(inputs.clusters[request[side]]),
          pingLatencyMs: snapshot.pingLatencyMs?.[side] ?? null,
          writesBlocked: blocked![side],
        };
  const seconds = snapshot.oplogTimeRemaining?.seconds;
  return {
    state,
    id: inputs.id,
    timeline: inputs.timeline.map((change) => ({ state: change.state, at: change.at.toISOString() })),
    tuning: snapshot.tuning ?? null,
    request: request ?? null,
    source: cluster('source'),
    destination: cluster('destination'),
    oplogSecondsRemaining: seconds === undefined || !Number.isFinite(seconds) ? null : Math.floor(seconds),
    oplogUnbounded: seconds === Number.POSITIVE_INFINITY,
    actions,
    waitingFor,
    history: { samples: inputs.samples },
  };
}

/** `GET /api/v1/namespaces`: the initial copy per collection (empty before planning recorded them). */
export function namespaceProgress(snapshot: SyncSnapshot): NamespaceProgress[] {
  return snapshot.namespaces ?? [];
}
