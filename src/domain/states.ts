/**
 * The states of a Ferry instance and every transition between them: mongosync's (spec §3 and
 * reference.md), nothing more. The state machine refuses anything not listed here.
 */

export const STATES = ['INITIALIZING', 'IDLE', 'RUNNING', 'PAUSED', 'COMMITTING', 'COMMITTED', 'REVERSING'] as const;
export type State = (typeof STATES)[number];

/** API requests that change state. */
export type Command = 'start' | 'pause' | 'resume' | 'commit' | 'reverse';

/** What each request needs and where it leads. */
export const COMMANDS: Readonly<Record<Command, { from: State; to: State }>> = Object.freeze({
  start: { from: 'IDLE', to: 'RUNNING' },
  pause: { from: 'RUNNING', to: 'PAUSED' },
  resume: { from: 'PAUSED', to: 'RUNNING' },
  commit: { from: 'RUNNING', to: 'COMMITTING' },
  reverse: { from: 'COMMITTED', to: 'REVERSING' },
});

/** Every legal transition, by request, by the sync's background events, or by recovery at startup. */
export const TRANSITIONS: ReadonlyArray<readonly [State, State]> = Object.freeze([
  ['INITIALIZING', 'IDLE'],
  ['INITIALIZING', 'RUNNING'],
  ['INITIALIZING', 'PAUSED'],
  ['INITIALIZING', 'COMMITTING'],
  ['INITIALIZING', 'COMMITTED'],
  ['INITIALIZING', 'REVERSING'],
  ...Object.values(COMMANDS).map(({ from, to }) => [from, to] as const),
  ['COMMITTING', 'COMMITTED'], // commit completed
  ['REVERSING', 'RUNNING'], // reverse completed, now syncing the other way
  ['RUNNING', 'PAUSED'], // the sync stopped on an error; resume retries (unless it cannot continue)
  ['COMMITTING', 'PAUSED'], // the commit cannot complete: an error the sync cannot continue from (resume is refused)
]);

export function isTransition(from: State, to: State): boolean {
  return TRANSITIONS.some(([a, b]) => a === from && b === to);
}

/** States a sync's metadata records, and so the states a restart with the same `--id` can find. */
export type RecoverableState = 'RUNNING' | 'PAUSED' | 'COMMITTING' | 'COMMITTED' | 'REVERSING';

/**
 * Where the initial copy of a sync stands, recorded before each part begins: `planning` (catalog
 * recorded, destination prepared, partition table written) → `copying` → `buildingIndexes` (only
 * when indexes are built after the copy) → `copied` (only change-event application remains).
 */
export const SYNC_PHASES = ['planning', 'copying', 'buildingIndexes', 'copied'] as const;
export type SyncPhase = (typeof SYNC_PHASES)[number];
