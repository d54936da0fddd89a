/**
 * Planning waits on one cluster round trip per namespace at several steps (listIndexes,
 * create, $collStats, createIndexes): this runs such steps several at a time.
 */

/** Runs `task` over `items` with at most `parallelism` at once; rejects with the first failure. */
export async function forEachBounded<T>(items: readonly T[], parallelism: number, task: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  let failure: unknown;
  const lane = async () => {
    while (next < items.length && failure === undefined) {
      try {
        await task(items[next++]!);
      } catch (error) {
        failure ??= error;
      }
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(parallelism, items.length)) }, lane));
  if (failure !== undefined) throw failure;
}
