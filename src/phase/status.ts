/**
 * Merging what the phases say of themselves (PhaseStatus) into the sync's snapshot: the last
 * phase that says what it is doing wins `info` (phases are listed in order: planning, copy,
 * change-event application, commit); warnings are all kept; a commit is possible when at least one
 * phase has a say and every phase that does agrees; figures of a later phase replace an earlier
 * one's; counters add up.
 */
import type { SyncSnapshot } from '../domain/sync-control.js';
import { COUNTER_NAMES, type CounterValues } from '../metrics/counters.js';
import type { PhaseStatus } from './contract.js';

/** Counters summed over statuses. */
export function sumCounters(statuses: readonly PhaseStatus[]): CounterValues {
  const sum = Object.fromEntries(COUNTER_NAMES.map((name) => [name, 0])) as CounterValues;
  for (const status of statuses) for (const name of COUNTER_NAMES) sum[name] += status.counters?.[name] ?? 0;
  return sum;
}

export function mergeStatuses(statuses: readonly PhaseStatus[]): SyncSnapshot {
  const says = statuses.filter((status) => status.readyToCommit !== undefined);
  const snapshot: SyncSnapshot = {
    info: statuses.reduce<string | null>((info, status) => status.info ?? info, null),
    eventsApplied: sumCounters(statuses).appliedEvents,
    readyToCommit: says.length > 0 && says.every((status) => status.readyToCommit === true),
    warnings: statuses.flatMap((status) => status.warnings ?? []),
  };
  for (const status of statuses) Object.assign(snapshot, status.figures);
  return snapshot;
}
