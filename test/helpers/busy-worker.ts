/** A thread-pool task for tests (test/unit/thread-pool.test.ts): keeps its thread busy `ms` milliseconds, then returns them. */
export default function busyFor(ms: number): number {
  const end = Date.now() + ms;
  while (Date.now() < end);
  return ms;
}
