/**
 * The pool (a ThreadPool, src/phase/thread-pool.ts) that compares ranges (compare-range.ts) in
 * worker threads (workers/verify-range.ts), so that streaming both clusters' documents never holds
 * up the main thread (which routes change events). As the copy's pool: at most one thread per core
 * but one, several ranges at once per thread (a thread mostly waits on the clusters), each thread
 * with its own clients for the pool's life.
 */
import { availableParallelism } from 'node:os';
import { ThreadPool } from '../phase/thread-pool.js';
import type { RangeOutcome, RangeTask } from './compare-range.js';

/** The verifier's connections on both clusters (range reads and change streams): `appName` in currentOp and fail points. */
export const VERIFY_APP_NAME = 'ferry-verify';

/** The compiled worker entry point (dist/workers/verify-range.js, from dist/src/verify/range-pool.js). */
export const VERIFY_WORKER_URL = new URL('../../workers/verify-range.js', import.meta.url);

/** Given to every verify thread (`workerData`). */
export interface VerifyWorkerData {
  /** Connection strings (they may hold credentials: never logged). */
  sourceUri: string;
  destinationUri: string;
}

export class RangePool {
  /** Ranges compared at once. */
  readonly ranges: number;
  readonly threads: number;
  readonly #pool: ThreadPool<RangeTask, RangeOutcome>;

  constructor(data: VerifyWorkerData, ranges: number, cores = availableParallelism()) {
    this.ranges = Math.max(1, ranges);
    this.threads = Math.max(1, Math.min(this.ranges, cores - 1));
    this.#pool = new ThreadPool({
      filename: VERIFY_WORKER_URL,
      threads: this.threads,
      tasksPerThread: Math.ceil(this.ranges / this.threads),
      workerData: data,
    });
  }

  run(task: RangeTask): Promise<RangeOutcome> {
    return this.#pool.run(task);
  }

  async destroy(): Promise<void> {
    await this.#pool.destroy();
  }
}
