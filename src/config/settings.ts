/**
 * What each phase gets from the options (options.ts): the figures it runs with, in its own terms.
 * Derived once at startup, so a phase never reads an option or the environment itself; a later
 * live re-tune (options marked `live`) derives them again and hands them over.
 *
 * Memory of the copy stays bounded by these, whatever the data size: each of `copyWorkers`
 * partitions holds at most `batchesInFlight` batches being written (each a buffer of at most
 * `batchBytes`, or one document up to 16 MiB, plus its framed message while sent), the batch being
 * filled, and one read reply (at most 16 MiB; with the `wire` read and write paths the replies are
 * received into those batch buffers and written from them). Change-event application holds at most
 * `maxPendingBytes` of events queued or in flight, plus the change-stream reply being routed. The
 * verifier holds, per range compared at once, one read reply from each cluster (`readBatchBytes`),
 * and at most `maxPendingRechecks` queued documents (the rest wait in the metadata database).
 */
import { MAX_BSON_OBJECT_BYTES } from '../domain/constants.js';
import type { HotDocuments } from '../domain/hot-documents.js';
import { checkHotDocuments } from './hot-documents.js';
import type { FerryOptions } from './options.js';
import type { ReadPath } from '../cluster/reply-reader.js';

export type WritePath = 'raw' | 'decode' | 'wire';
export type { ReadPath };

/** How partitions are copied (the same for every partition of a sync; it crosses to worker threads). */
export interface CopySettings {
  /** Largest write batch in bytes (`--batchBytes`). */
  batchBytes: number;
  /** Write batches in flight per partition while reading continues (`--batchesInFlight`). */
  batchesInFlight: number;
  /** Least time between two checkpoints of a partition, in ms (`FERRY_CHECKPOINT_INTERVAL_MS`). */
  checkpointIntervalMs: number;
  /** `raw`, `wire` (the default) or `decode` (`FERRY_COPY_WRITE_PATH`); see src/copy/write-path.ts. */
  writePath: WritePath;
  /** `driver` (when absent) or `wire` (`FERRY_COPY_READ_PATH`); see src/cluster/reply-reader.ts. */
  readPath?: ReadPath;
  /**
   * Which paths the operator set (`FERRY_COPY_*_PATH`): falling back from one of those is warned
   * about; from the default `wire`, on a deployment it cannot serve (a mongos), it is expected.
   */
  chosenPaths?: { read: boolean; write: boolean };
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
  /**
   * How long a `getMore` waits for new events once the initial copy is complete and nothing waits
   * on application. New events end the wait at once; a getMore that finds none (or only entries
   * the stream filters out, such as an oplog note) answers only when it runs out, as on mongod.
   * Each costs a round trip, so an idle sync waiting (days, maybe) for its commit asks once a second.
   */
  maxAwaitMs: number;
  /**
   * How long a `getMore` waits until the copy is complete and while another phase waits for
   * application to pass a source time it wrote an oplog note at (the index builds after the copy,
   * the copy's completion, the commit point): only the end of the wait tells that the note is
   * passed, so it is short then.
   */
  promptAwaitMs: number;
  /** Least time between two resume-token checkpoints (`FERRY_CEA_CHECKPOINT_INTERVAL_MS`). */
  checkpointIntervalMs: number;
}

/** The live-tunable figures as the operator set them (progress's `tuning`, the status page). */
export interface Tuning {
  loadLevel: number;
  copyWorkers: number;
  batchesInFlight: number;
  applyLanes: number;
  batchBytes: number;
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
  /** How long the verifier waits after a failure before it continues (`FERRY_VERIFY_RETRY_INTERVAL_MS`). */
  retryIntervalMs: number;
}

export interface SyncSettings {
  /** What the operator set, for progress; the figures below are derived from it. */
  tuning: Tuning;
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
  /** A change-event lane with a batch in flight this long is reported in `warnings` (`FERRY_LANE_STALL_SECONDS`). */
  laneStallSeconds: number;
  /** How often the source's oplog window is read (`FERRY_OPLOG_CHECK_INTERVAL_MS`). */
  oplogCheckIntervalMs: number;
  /** With `detectRandomId`, the least collection size checked for random `_id`s (`FERRY_RANDOM_ID_MIN_BYTES`). */
  randomIdMinBytes: number;
  /** `--hotDocIDs`: documents whose events are not applied; the commit copies them (src/domain/hot-documents.ts). */
  hotDocuments: HotDocuments[];
  /** How long the sync's lease lasts without renewal (`FERRY_LEASE_DURATION_MS`). */
  leaseDurationMs: number;
  /** How often the destination is checked for changes Ferry did not make (`FERRY_GUARD_INTERVAL_MS`). */
  guardIntervalMs: number;
  health: {
    /** How often each cluster is pinged (`FERRY_HEALTH_INTERVAL_MS`). */
    intervalMs: number;
    /** How long a ping may go unanswered before the cluster counts as unreachable. */
    timeoutMs: number;
  };
  verification: VerificationSettings;
}

/** Collections whose indexes are built at once (one `createIndexes` each). */
export const INDEX_BUILD_PARALLELISM = 2;

/** Collections created, measured and sampled at once while planning (each waits on a round trip). */
export const PLANNING_PARALLELISM = 8;

/** Collections whose planning records are written together (a crash redoes at most this many). */
export const PLANNING_CHUNK = 500;

export function syncSettings(options: FerryOptions): SyncSettings {
  const maxBatchBytes = Math.min(options.batchBytes, MAX_BSON_OBJECT_BYTES);
  return {
    tuning: {
      loadLevel: options.loadLevel,
      copyWorkers: options.copyWorkers,
      batchesInFlight: options.batchesInFlight,
      applyLanes: options.applyLanes,
      batchBytes: options.batchBytes,
    },
    copyWorkers: options.copyWorkers,
    partitionBytes: options.partitionSizeMB * 1024 * 1024,
    workerHeapMB: options.workerHeapMB,
    copy: {
      batchBytes: options.batchBytes,
      batchesInFlight: options.batchesInFlight,
      checkpointIntervalMs: options.copyCheckpointIntervalMs,
      // Ferry's own connections by default; each path falls back to the driver where they cannot serve.
      writePath: options.copyWritePath ?? 'wire',
      readPath: options.copyReadPath ?? 'wire',
      chosenPaths: { read: options.copyReadPath !== undefined, write: options.copyWritePath !== undefined },
    },
    cea: {
      applyLanes: options.applyLanes,
      maxBatchEvents: 5000,
      maxBatchBytes,
      maxPendingBytes: 4 * maxBatchBytes,
      readBatchSize: 10_000,
      maxAwaitMs: 1000,
      promptAwaitMs: 200,
      checkpointIntervalMs: options.ceaCheckpointIntervalMs,
    },
    commit: { retryIntervalMs: options.commitRetryIntervalMs },
    laneStallSeconds: options.laneStallSeconds,
    oplogCheckIntervalMs: options.oplogCheckIntervalMs,
    randomIdMinBytes: options.randomIdMinBytes,
    hotDocuments: checkHotDocuments(options.hotDocIDs ?? []),
    leaseDurationMs: options.leaseDurationMs,
    guardIntervalMs: options.guardIntervalMs,
    health: { intervalMs: options.healthIntervalMs, timeoutMs: Math.max(1000, Math.round(options.healthIntervalMs * 2.5)) },
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
      retryIntervalMs: options.verifyRetryIntervalMs,
    },
  };
}
