/**
 * How the V8 heaps of Ferry's worker threads are sized. A copy worker allocates little on its
 * JavaScript heap, but every byte it copies passes through short-lived buffers outside it (the
 * driver's socket chunks, each read reply, two concatenations of each insert message), and V8
 * counts those bytes towards the heap's limit: with its default limits a worker's ~20 MB heap
 * was fully collected every 20–30 MB of copied data, and those collections (and the page faults
 * of buffers freed and allocated again) were the largest share of the copy's CPU.
 *
 * A floor under the old generation's limit (V8's `--initial-old-space-size`) makes full
 * collections wait until that many megabytes have been allocated: fewer of them, each freeing
 * more. The price is memory: up to the floor of dead buffers per thread between collections.
 * Measured (bench/RESULTS.md): 64 MB halves the copy's CPU per GB.
 *
 * V8 reads the setting when a thread's heap is created, so it is set before the first worker
 * starts; it applies to every worker thread of the process (the main thread's heap exists
 * already). A value given on node's own command line is left alone.
 */
import { setFlagsFromString } from 'node:v8';

/** Default floor of a worker thread's old generation, MB (`FERRY_WORKER_HEAP_MB`). */
export const DEFAULT_WORKER_HEAP_MB = 64;

const FLAG = '--initial-old-space-size';

let configured: number | undefined;

/**
 * Sets the old-generation floor of worker threads started from now on (0 leaves V8's default).
 * Returns the floor in effect for them, in MB (undefined: V8's default, or node's command line).
 */
export function configureWorkerHeap(megabytes: number, execArgv: readonly string[] = process.execArgv): number | undefined {
  if (execArgv.some((arg) => arg.startsWith(FLAG) || arg.startsWith('--initial_old_space_size'))) return undefined;
  if (megabytes <= 0 || configured === megabytes) return configured;
  setFlagsFromString(`${FLAG}=${Math.floor(megabytes)}`);
  configured = Math.floor(megabytes);
  return configured;
}
