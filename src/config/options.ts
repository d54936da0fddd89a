/**
 * Everything an operator can set when starting Ferry. Each option is set by a flag of the same
 * name (`--loadLevel 2`) or by the same key in the YAML file given with `--config`; flags win.
 */
import type { ClusterEndpoint } from '../domain/clusters.js';
import type { Verbosity } from '../domain/constants.js';

export type LoadLevel = 1 | 2 | 3 | 4;

export interface FerryOptions {
  /** `--cluster0 <uri>`: the first cluster; start requests call it `cluster0`. Required. */
  cluster0: ClusterEndpoint;
  /** `--cluster1 <uri>`: the second cluster; start requests call it `cluster1`. Required. */
  cluster1: ClusterEndpoint;
  /** `--port`: TCP port of the control API. Default 27182 (mongosync's). 0 takes any free port, reported in the log. */
  port: number;
  /**
   * `--id`: this instance's identifier: `mongosyncID` and `coordinatorID` in progress, and
   * `mongosyncID` in every log line. Default `coordinator` (what a single mongosync reports).
   */
  id: string;
  /** `--bindAddress`: interface the API listens on. Default 127.0.0.1; anything else logs a warning (the API has no authentication). */
  bindAddress: string;
  /** `--config <file>`: YAML file with any of these keys (not `config`). Default: none. */
  config?: string;
  /** `--loadLevel` 1–4: how hard Ferry pushes the clusters; sets the four figures below (see LOAD_LEVELS). Default 3. */
  loadLevel: LoadLevel;
  /**
   * `--copyWorkers`: partitions copied at once (the load on the clusters). They share worker
   * threads, at most one per CPU core but one (see `copyThreads`). Default from loadLevel.
   */
  copyWorkers: number;
  /** `--batchesInFlight`: read batches each copy worker keeps in flight. Default from loadLevel. */
  batchesInFlight: number;
  /** `--applyLanes`: parallel lanes applying change events (per-document order kept within a lane). Default from loadLevel. */
  applyLanes: number;
  /** `--batchBytes`: upper bound of one write batch, in bytes. Default from loadLevel. */
  batchBytes: number;
  /** `--partitionSizeMB`: target size of one `_id`-range copy partition, in MiB. Default 64. */
  partitionSizeMB: number;
  /** `--logPath <dir>`: write JSON-lines logs to `<dir>/ferry.log` (reopened on SIGUSR1) instead of stdout. Default: stdout. */
  logPath?: string;
  /** `--verbosity`: least severe level logged (TRACE, DEBUG, INFO, WARN, ERROR, FATAL, PANIC). Default INFO. */
  verbosity: Verbosity;
  /** `--disableVerification`: accepted for mongosync compatibility; this build has no embedded verifier, so it has no effect. Default false. */
  disableVerification: boolean;
}

/** The figures `--loadLevel` sets unless given explicitly. */
export interface LoadProfile {
  copyWorkers: number;
  batchesInFlight: number;
  applyLanes: number;
  batchBytes: number;
}

const MiB = 1024 * 1024;

/**
 * What each load level means. Level 3 suits a cluster that also serves its application; 4 is
 * for a migration window; 1 for a busy production source. Keep the README table in step.
 * Batches of a few MiB already hold thousands of documents, so a bigger one saves the clusters
 * little, while each batch in flight costs Ferry that much memory several times over (its own
 * buffer, the driver's copies of the message, the read reply): bench/RESULTS.md measured 2 MiB
 * batches copying as fast as 8 MiB ones with a third less memory.
 */
export const LOAD_LEVELS: Readonly<Record<LoadLevel, LoadProfile>> = Object.freeze({
  1: { copyWorkers: 1, batchesInFlight: 1, applyLanes: 2, batchBytes: 1 * MiB },
  2: { copyWorkers: 2, batchesInFlight: 2, applyLanes: 4, batchBytes: 2 * MiB },
  3: { copyWorkers: 4, batchesInFlight: 2, applyLanes: 8, batchBytes: 2 * MiB },
  4: { copyWorkers: 8, batchesInFlight: 4, applyLanes: 16, batchBytes: 4 * MiB },
});

/** Defaults of the options that have a fixed one (the rest: required, or from loadLevel). */
export const DEFAULTS = Object.freeze({
  port: 27182,
  id: 'coordinator',
  bindAddress: '127.0.0.1',
  loadLevel: 3 as LoadLevel,
  partitionSizeMB: 64,
  verbosity: 'INFO' as Verbosity,
  disableVerification: false,
});
