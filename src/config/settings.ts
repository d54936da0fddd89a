/**
 * What each phase gets from the options (options.ts): the figures it runs with, in its own terms.
 * Derived once at startup, so a phase never reads an option or the environment itself; a later
 * live re-tune (options marked `live`) derives them again and hands them over.
 *
 * Memory of the copy stays bounded by these, whatever the data size: each of `copyWorkers`
 * partitions holds at most `batchesInFlight` batches being written (each a buffer of at most
 * `batchBytes`, or one document up to 16 MiB, plus its framed message while sent), the batch being
 * filled, and one read reply (at most 16 MiB). Change-event application holds at most
 * `maxPendingBytes` of events queued or in flight, plus the change-stream reply being routed. The
 * verifier holds, per range compared at once, one read reply from each cluster (`readBatchBytes`),
 * and at most `maxPendingRechecks` queued documents (the rest wait in the metadata database).
 */
import { MAX_BSON_OBJECT_BYTES } from '../domain/constants.js';
import type { FerryOptions } from './options.js';

export type WritePath = 'raw' | 'decode';

/** How partitions are copied (the same for every partition of a sync; it crosses to worker threads). */
export interface CopySettings {
  /** Largest write batch in bytes (`--batchBytes`). */
  batchBytes: number;
  /** Write batches in flight per partition while reading continues (`--batchesInFlight`). */
  batchesInFlight: number;
  /** Least time between two checkpoints of a partition, in ms (`FERRY_CHECKPOINT_INTERVAL_MS`). */
  checkpointIntervalMs: number;
  /** `raw` or `decode` (`FERRY_COPY_WRITE_PATH`); see src/copy/write-path.ts. */
  writePath: WritePath;
}

/** How change-event application runs. */
export interface CeaSettings {
  /** Lanes applying at once (`--applyLanes`). */
  applyLanes: number;
  /** Most events in one lane batch (PCSM's bulk limit). */
  maxBatchEvents: number;
  /** Most bytes of events in one lane batch: `--batchBytes`, at most 16 MiB. */
  maxBatchBytes: number;
  /** Bytes of events queued or in flight before reading waits: 4 batches' worth. */
  maxPendingBytes: number;
  /** Events per change-stream reply at most. */
  readBatchSize: number;
  /** How long a `getMore` waits for new events. */
  maxAwaitMs: number;
  /** Least time between two resume-token checkpoints (`FERRY_CEA_CHECKPOINT_INTERVAL_MS`). */
  checkpointIntervalMs: number;
}

/** How the embedded verifier runs (src/verify/). */
export interface VerificationSettings {
  /** False with `--disableVerification` (a start request can turn it off too). */
  enabled: boolean;
  /** `_id` ranges compared at once (`--verifyWorkers`). */
  rangesAtOnce: number;
  /** Bytes read from each cluster by one comparison task before it records its position. */
  taskBytes: number;
  /** Bytes per read reply of a range (`--batchBytes`, at most 16 MiB). */
  readBatchBytes: number;
  /** Differences one task returns at most before it records its position. */
  maxDifferencesPerTask: number;
  /** Documents waiting for a re-check kept in memory (`FERRY_VERIFY_MAX_PENDING_RECHECKS`); more go to the metadata database. */
  maxPendingRechecks: number;
  /** Documents checked again in one batch (one `find` per namespace on each cluster). */
  recheckBatch: number;
  /** Events per change-stream reply at most, and how long a `getMore` waits. */
  streamBatchSize: number;
  maxAwaitMs: number;
  /** How often the streams' positions are recorded (and long-waiting re-checks written out). */
  checkpointIntervalMs: number;
  /** How long a re-check may pin a stream position in memory before it is written out. */
  pinMs: number;
  /** How long the verifier waits after a failure before it continues. */
  retryIntervalMs: number;
}

export interface SyncSettings {
  /** Partitions copied at once (`--copyWorkers`). */
  copyWorkers: number;
  /** Target partition size in bytes (`--partitionSizeMB`). */
  partitionBytes: number;
  /** Floor of each worker thread's V8 old generation in MB (`FERRY_WORKER_HEAP_MB`; 0 keeps V8's default). */
  workerHeapMB: number;
  copy: CopySettings;
  cea: CeaSettings;
  commit: {
    /**
     * How long a commit waiting on a refused restore, or a reverse on a refused temporary change, or either on a
     * cluster error, waits before trying again (`FERRY_COMMIT_RETRY_INTERVAL_MS`).
     */
    retryIntervalMs: number;
  };
  verification: VerificationSettings;
}

/** Collections whose indexes are built at once (one `createIndexes` each). */
export const INDEX_BUILD_PARALLELISM = 2;

/** Collections measured and sampled at once while planning. */
export const PLANNING_PARALLELISM = 4;

export function syncSettings(options: FerryOptions): SyncSettings {
  const maxBatchBytes = Math.min(options.batchBytes, MAX_BSON_OBJECT_BYTES);
  return {
    copyWorkers: options.copyWorkers,
    partitionBytes: options.partitionSizeMB * 1024 * 1024,
    workerHeapMB: options.workerHeapMB,
    copy: {
      batchBytes: options.batchBytes,
      batchesInFlight: options.batchesInFlight,
      checkpointIntervalMs: options.copyCheckpointIntervalMs,
      writePath: options.copyWritePath,
    },
    cea: {
      applyLanes: options.applyLanes,
      maxBatchEvents: 5000,
      maxBatchBytes,
      maxPendingBytes: 4 * maxBatchBytes,
      readBatchSize: 10_000,
      maxAwaitMs: 1000,
      checkpointIntervalMs: options.ceaCheckpointIntervalMs,
    },
    commit: { retryIntervalMs: options.commitRetryIntervalMs },
    verification: {
      enabled: !options.disableVerification,
      rangesAtOnce: options.verifyWorkers,
      taskBytes: 16 * 1024 * 1024,
      readBatchBytes: maxBatchBytes,
      maxDifferencesPerTask: 1000,
      maxPendingRechecks: options.verifyMaxPendingRechecks,
      recheckBatch: 500,
      streamBatchSize: 10_000,
      maxAwaitMs: 1000,
      checkpointIntervalMs: 1000,
      pinMs: 5000,
      retryIntervalMs: 10_000,
    },
  };
}
