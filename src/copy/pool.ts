/**
 * The pool of copy workers (a ThreadPool, src/phase/thread-pool.ts): worker threads, each running
 * one or more partitions at once (workers/copy-partition.ts) with its own driver connections kept
 * for the pool's life. The shared counters and stop flag travel in `workerData`.
 *
 * `--copyWorkers` says how many partitions are copied at once: the load the clusters see. The
 * threads they run in are fewer on a small machine (`copyThreads`): a thread mostly waits on the
 * clusters and keeps a read and several writes going, so one copies hundreds of MB/s; more
 * threads than cores but one (the main thread, the driver's monitoring and the garbage collector
 * need one) only compete for the CPU and cost each ~40 MB and their start-up. On 2 cores, one
 * thread copied bench:copy's data as fast as two, with 25% less CPU and 80 MB less memory.
 */
import { availableParallelism } from 'node:os';
import { ThreadPool } from '../phase/thread-pool.js';
import type { PartitionTask } from './partition-copier.js';
import { COUNTER_SLOTS, SharedCounters, StopFlag } from './shared-state.js';
import type { CopyWorkerData, PartitionTaskResult } from './worker-task.js';

/** The compiled worker entry point (dist/workers/copy-partition.js, from dist/src/copy/pool.js). */
export const COPY_WORKER_URL = new URL('../../workers/copy-partition.js', import.meta.url);

/** Worker threads for `partitions` copied at once on a machine with `cores` cores: at most one per core but one. */
export function copyThreads(partitions: number, cores = availableParallelism()): number {
  return Math.max(1, Math.min(partitions, cores - 1));
}

export interface CopyPoolOptions {
  /** Connection strings of the two clusters (credentials stay in memory, never logged). */
  sourceUri: string;
  destinationUri: string;
  /** The instance id (`--id`). */
  instance: string;
  /** The lease epoch the instance holds: the workers' metadata writes are fenced by it (src/meta/fence.ts). */
  epoch: number;
  /** Partitions copied at once (`--copyWorkers`, at most the partitions to copy). */
  partitions: number;
  /** Worker threads they share. Default `copyThreads(partitions)`. */
  threads?: number;
}

export class CopyPool {
  readonly counters = new SharedCounters();
  readonly stopFlag = new StopFlag();
  /** Partitions copied at once. */
  readonly partitions: number;
  readonly threads: number;
  readonly #pool: ThreadPool<PartitionTask, PartitionTaskResult>;

  constructor(options: CopyPoolOptions) {
    this.partitions = Math.max(1, options.partitions);
    this.threads = Math.min(this.partitions, options.threads ?? copyThreads(this.partitions));
    const workerData: CopyWorkerData = {
      sourceUri: options.sourceUri,
      destinationUri: options.destinationUri,
      instance: options.instance,
      epoch: options.epoch,
      counters: this.counters.buffer,
      stop: this.stopFlag.buffer,
    };
    this.#pool = new ThreadPool({
      filename: COPY_WORKER_URL,
      threads: this.threads,
      // The scheduler bounds how many run (and may raise it live, up to --copyWorkers' maximum):
      // the pool only spreads them over its threads, least busy first.
      tasksPerThread: Math.ceil(COUNTER_SLOTS / this.threads),
      workerData,
    });
  }

  run(task: PartitionTask): Promise<PartitionTaskResult> {
    return this.#pool.run(task);
  }

  /** Stops the threads (their connections close with them). */
  async destroy(): Promise<void> {
    await this.#pool.destroy();
  }
}
