/**
 * The engine's settings: the operator's options (`--copyWorkers`, `--batchesInFlight`,
 * `--batchBytes`, `--partitionSizeMB`, all set by `--loadLevel` unless given) plus two tuning
 * knobs that are not flags, read from the environment:
 * - `FERRY_CHECKPOINT_INTERVAL_MS`: least time between two checkpoints of a partition (default
 *   1000). Lower means less re-copied after a crash, more small metadata writes.
 * - `FERRY_COPY_WRITE_PATH`: `raw` (default) or `decode` (see src/copy/write-path.ts).
 * - `FERRY_WORKER_HEAP_MB`: floor of each worker thread's V8 old generation (default 64; see
 *   src/copy/worker-heap.ts). Higher spends less CPU on garbage collection and more memory.
 *
 * Memory of the copy stays bounded by these, whatever the data size: each of `copyWorkers`
 * threads holds at most `batchesInFlight` batches being written (each a buffer of at most
 * `batchBytes`, or one document up to 16 MiB, plus its framed message while sent), the batch being
 * filled, and one read reply (at most 16 MiB).
 */
import { millisecondsVariable, wholeNumberVariable } from '../config/environment.js';
import type { FerryOptions } from '../config/options.js';
import type { CopySettings } from '../copy/partition-copier.js';
import { DEFAULT_WORKER_HEAP_MB } from '../copy/worker-heap.js';
import type { WritePath } from '../copy/write-path.js';

export const DEFAULT_CHECKPOINT_INTERVAL_MS = 1000;

/** Collections whose indexes are built at once (one `createIndexes` each). */
export const INDEX_BUILD_PARALLELISM = 2;

/** Collections measured and sampled at once while planning. */
export const PLANNING_PARALLELISM = 4;

export interface EngineSettings {
  /** Worker threads copying partitions. */
  copyWorkers: number;
  /**
   * Floor of each worker thread's V8 old generation in MB (`FERRY_WORKER_HEAP_MB`, default
   * 64; 0 keeps V8's default): see src/copy/worker-heap.ts.
   */
  workerHeapMB: number;
  /** Target partition size in bytes. */
  partitionBytes: number;
  copy: CopySettings;
}

function checkpointInterval(env: NodeJS.ProcessEnv): number {
  return millisecondsVariable(env, 'FERRY_CHECKPOINT_INTERVAL_MS', DEFAULT_CHECKPOINT_INTERVAL_MS);
}

function writePath(env: NodeJS.ProcessEnv): WritePath {
  const raw = env.FERRY_COPY_WRITE_PATH ?? 'raw';
  if (raw !== 'raw' && raw !== 'decode') {
    throw new RangeError(`FERRY_COPY_WRITE_PATH must be "raw" or "decode", got ${JSON.stringify(raw)}`);
  }
  return raw;
}

export function engineSettings(
  options: Pick<FerryOptions, 'copyWorkers' | 'batchesInFlight' | 'batchBytes' | 'partitionSizeMB'>,
  env: NodeJS.ProcessEnv = process.env,
): EngineSettings {
  return {
    copyWorkers: options.copyWorkers,
    workerHeapMB: wholeNumberVariable(env, 'FERRY_WORKER_HEAP_MB', DEFAULT_WORKER_HEAP_MB, 'megabytes'),
    partitionBytes: options.partitionSizeMB * 1024 * 1024,
    copy: {
      batchBytes: options.batchBytes,
      batchesInFlight: options.batchesInFlight,
      checkpointIntervalMs: checkpointInterval(env),
      writePath: writePath(env),
    },
  };
}
