import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ThreadPool } from '../../src/phase/thread-pool.js';
import busyFor from '../helpers/busy-worker.js';

const BUSY_WORKER = new URL('../helpers/busy-worker.js', import.meta.url);

test('a pool destroyed while a task reply is on its way stops quietly: the task is rejected, the process goes on', async () => {
  const uncaught: unknown[] = [];
  const monitor = (error: unknown) => uncaught.push(error);
  process.on('uncaughtExceptionMonitor', monitor);
  try {
    const pool = new ThreadPool<number, number>({ filename: BUSY_WORKER, threads: 1, tasksPerThread: 1, workerData: undefined });
    assert.equal(await pool.run(0), 0, 'the thread is up');
    const running = pool.run(20).then(
      () => 'resolved',
      (error: unknown) => (error instanceof Error ? error.message : String(error)),
    );
    // The task ends and its reply waits here while this thread is busy; then the pool is destroyed.
    busyFor(200);
    await pool.destroy();
    assert.match(await running, /Terminating worker thread/);
    // The reply is delivered after the destroy: Piscina reports it as an 'error' event.
    await new Promise((resolve) => setTimeout(resolve, 100));
    assert.deepEqual(uncaught, []);
  } finally {
    process.off('uncaughtExceptionMonitor', monitor);
  }
});
