/**
 * How change-event application runs: `--applyLanes` and `--batchBytes` (set by `--loadLevel`
 * unless given), plus one tuning knob read from the environment:
 * - `FERRY_CEA_CHECKPOINT_INTERVAL_MS`: least time between two resume-token checkpoints while
 *   applying (default 1000). Lower means fewer events applied again after a crash (harmless but
 *   slower), more small metadata writes.
 *
 * Memory stays bounded whatever the event rate: at most `maxPendingBytes` of events queued or in
 * flight in the lanes, plus the change-stream reply being routed (at most 16 MiB).
 */
import { millisecondsVariable } from '../config/environment.js';
import type { FerryOptions } from '../config/options.js';

export const DEFAULT_CEA_CHECKPOINT_INTERVAL_MS = 1000;

/** mongosync's limit: `canCommit` is false while lag exceeds it. */
export const COMMIT_LAG_LIMIT_SECONDS = 30;

export interface CeaSettings {
  /** Lanes applying at once (`--applyLanes`). */
  applyLanes: number;
  /** Most events in one lane batch (PCSM's bulk limit). Default 5000. */
  maxBatchEvents: number;
  /** Most bytes of events in one lane batch: `--batchBytes`, at most 16 MiB. */
  maxBatchBytes: number;
  /** Bytes of events queued or in flight before reading waits: 4 batches' worth. */
  maxPendingBytes: number;
  /** Events per change-stream reply at most. Default 10,000. */
  readBatchSize: number;
  /** How long a `getMore` waits for new events. Default 1000 ms. */
  maxAwaitMs: number;
  /** Least time between two resume-token checkpoints. */
  checkpointIntervalMs: number;
}

const MiB = 1024 * 1024;

export function ceaSettings(options: Pick<FerryOptions, 'applyLanes' | 'batchBytes'>, env: NodeJS.ProcessEnv = process.env): CeaSettings {
  const maxBatchBytes = Math.min(options.batchBytes, 16 * MiB);
  return {
    applyLanes: options.applyLanes,
    maxBatchEvents: 5000,
    maxBatchBytes,
    maxPendingBytes: 4 * maxBatchBytes,
    readBatchSize: 10_000,
    maxAwaitMs: 1000,
    checkpointIntervalMs: millisecondsVariable(env, 'FERRY_CEA_CHECKPOINT_INTERVAL_MS', DEFAULT_CEA_CHECKPOINT_INTERVAL_MS),
  };
}
