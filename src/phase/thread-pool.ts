/**
 * The Piscina pool a phase runs its worker threads in (the copy's partitions, change-event
 * application's batches, the verifier's ranges), with what the three share:
 * - a fixed number of threads, each running several tasks at once (a thread mostly waits on the
 *   clusters);
 * - atomics disabled, so that a thread's event loop keeps running between tasks (its MongoClients
 *   monitor their servers in the background);
 * - destroying the pool while a task's reply is on its way is part of stopping, not a failure.
 *   Piscina rejects the task ("Terminating worker thread") and then receives its reply for a task
 *   it no longer knows, which it reports as an `error` event; with no listener that ended the
 *   process, so a sync stopped, paused or ending a verification pass at that moment exited with
 *   "unexpected failure". What the pool reports once `destroy()` has begun is dropped; an error
 *   before it (a thread that failed outside any task) stays fatal, as it was.
 */
import { Piscina } from 'piscina';

export interface ThreadPoolOptions {
  /** The worker entry point (a compiled file of workers/). */
  filename: URL;
  /** Worker threads, started with the pool and kept for its life. */
  threads: number;
  /** Tasks one thread runs at once. */
  tasksPerThread: number;
  /** Given to every thread (`workerData`): connection strings, shared buffers. */
  workerData: unknown;
}

export class ThreadPool<Task, Result> {
  readonly #pool: Piscina<Task, Result>;
  #destroying = false;

  constructor(options: ThreadPoolOptions) {
    this.#pool = new Piscina({
      filename: options.filename.href,
      minThreads: options.threads,
      maxThreads: options.threads,
      concurrentTasksPerWorker: options.tasksPerThread,
      atomics: 'disabled',
      workerData: options.workerData,
    });
    this.#pool.on('error', (error: unknown) => {
      if (this.#destroying) return;
      throw error;
    });
  }

  /** Runs `task` on a thread; the buffers in `transferList` move to it (unusable here afterwards). */
  run(task: Task, transferList?: ArrayBuffer[]): Promise<Result> {
    return this.#pool.run(task, transferList === undefined ? {} : { transferList });
  }

  /** Stops the threads: tasks still running are rejected, their connections close with them. */
  async destroy(): Promise<void> {
    this.#destroying = true;
    await this.#pool.destroy();
  }
}
