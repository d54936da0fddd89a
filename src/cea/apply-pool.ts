/**
 * The pool (a ThreadPool, src/phase/thread-pool.ts) applying lane batches (workers/apply-batch.ts).
 * It starts its threads with the first batch: until the source changes there is nothing to apply,
 * and a copy of an idle source never pays for them (each thread loads the driver: tens of MB and
 * a fraction of a CPU-second). Applying mostly waits on the destination, so each thread runs
 * several batches at once: `threads` is the number of lanes or of CPUs, whichever is smaller, and
 * each thread takes as many concurrent tasks as it needs for every lane to have one batch in
 * flight. Each thread keeps its own source and destination clients for the pool's life. Batch
 * buffers are transferred to the worker, never copied.
 */
import { availableParallelism } from 'node:os';
import { ThreadPool } from '../phase/thread-pool.js';
import type { ApplyOutcome, ApplyTask } from './apply-batch.js';

/** The compiled worker entry point (dist/workers/apply-batch.js, from dist/src/cea/apply-pool.js). */
export const APPLY_WORKER_URL = new URL('../../workers/apply-batch.js', import.meta.url);

/** Given to every apply thread (`workerData`). */
export interface ApplyWorkerData {
  /** Connection strings (they may hold credentials: never logged). */
  sourceUri: string;
  destinationUri: string;
  /** The instance id (tombstones name it). */
  instance: string;
}

export interface ApplyPoolOptions extends ApplyWorkerData {
  /** Lanes that may each have a batch in flight (`--applyLanes`). */
  lanes: number;
}

export class ApplyPool {
  readonly #options: ApplyPoolOptions;
  /** Started with the first batch: until the source changes there is nothing to apply. */
  #pool: ThreadPool<ApplyTask, ApplyOutcome> | undefined;

  constructor(options: ApplyPoolOptions) {
    this.#options = options;
  }

  /** Whether the threads have been started (by a first batch). */
  get started(): boolean {
    return this.#pool !== undefined;
  }

  #start(): ThreadPool<ApplyTask, ApplyOutcome> {
    const options = this.#options;
    const threads = Math.max(1, Math.min(options.lanes, availableParallelism()));
    const workerData: ApplyWorkerData = {
      sourceUri: options.sourceUri,
      destinationUri: options.destinationUri,
      instance: options.instance,
    };
    return new ThreadPool({
      filename: APPLY_WORKER_URL,
      threads,
      tasksPerThread: Math.ceil(options.lanes / threads),
      workerData,
    });
  }

  /** Applies a batch in a worker; `task.events` is transferred (unusable here afterwards). */
  run(task: ApplyTask): Promise<ApplyOutcome> {
    this.#pool ??= this.#start();
    return this.#pool.run(task, [task.events.buffer as ArrayBuffer]);
  }

  async destroy(): Promise<void> {
    await this.#pool?.destroy();
  }
}
