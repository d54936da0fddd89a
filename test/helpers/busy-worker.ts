/**
 * Keeps its thread busy `ms` milliseconds, then returns them: a thread-pool task, and a busy main
 * thread, for test/unit/thread-pool.test.ts.
 */
export default function busyFor(ms: number): number {
  const end = Date.now() + ms;
  while (Date.now() < end);
  return ms;
}
