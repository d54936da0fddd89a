/**
 * Waiting on a running `ferry` process through its progress endpoint, as an operator's script
 * would, with reasons when the wait fails: Ferry exited, Ferry paused the sync by itself (the
 * reason is in its `warnings`), or the deadline passed (with the last progress seen).
 */
import type { FerryProcess, Progress } from '../../test/e2e/ferry-process.js';

/** Ferry stopped syncing by itself: it exited, or paused the sync on an error. */
export class SyncStoppedError extends Error {
  override readonly name = 'SyncStoppedError';
  readonly code = 'SyncStopped';
}

/** The awaited condition did not hold in time. */
export class SyncTimeoutError extends Error {
  override readonly name = 'SyncTimeoutError';
  readonly code = 'SyncTimeout';
}

/** Options of `watchProgress`. */
export interface WatchOptions {
  /** What is awaited, for error messages ("the copy to complete"). Required. */
  what: string;
  /** Give up after this long. Required. */
  timeoutMs: number;
  /** Time between two progress calls, or a function of the last record read that says it. Default 250 ms. */
  intervalMs?: number | ((last: Progress) => number);
  /** Told of every progress record read. Default nothing. */
  onProgress?: (progress: Progress) => void;
  /** A PAUSED sync is a failure (Ferry pauses itself on errors it cannot get past). Default true. */
  pausedIsFailure?: boolean;
}

const MiB = 1024 * 1024;

/** What progress `info` says when the copy is done but this build has no change-event application. */
const NO_CHANGE_APPLICATION_INFO = 'change event application not available';

/**
 * Throws SyncStoppedError when progress says this build of Ferry cannot apply change events: such
 * a sync never becomes `canCommit`, so waiting for it would only end in a timeout.
 */
export function assertAppliesChanges(progress: Progress): void {
  if (String(progress.info).includes(NO_CHANGE_APPLICATION_INFO)) {
    throw new SyncStoppedError(
      `this build of Ferry cannot apply change events, so the sync can never commit: ${describeProgress(progress)}`,
    );
  }
}

/** One line about where a sync stands: state, info, bytes copied, lag, events, canCommit. */
export function describeProgress(progress: Progress): string {
  const parts = [`state ${progress.state}`];
  if (progress.info) parts.push(`info "${progress.info}"`);
  const copy = progress.collectionCopy as { estimatedCopiedBytes: number; estimatedTotalBytes: number } | null;
  if (copy) parts.push(`copied ${(copy.estimatedCopiedBytes / MiB).toFixed(1)} of ${(copy.estimatedTotalBytes / MiB).toFixed(1)} MB`);
  if (progress.lagTimeSeconds !== null && progress.lagTimeSeconds !== undefined) parts.push(`lag ${progress.lagTimeSeconds} s`);
  if (progress.totalEventsApplied !== null && progress.totalEventsApplied !== undefined)
    parts.push(`${progress.totalEventsApplied} events applied`);
  parts.push(`canCommit ${progress.canCommit}`);
  const warnings = (progress.warnings as string[] | null) ?? [];
  if (warnings.length > 0) parts.push(`warnings: ${warnings.join(' | ')}`);
  return parts.join(', ');
}

/** The last error Ferry logged, if any (to explain an exit). */
export function lastLoggedError(ferry: FerryProcess): string | undefined {
  const errors = ferry.log().filter((line) => ['error', 'fatal', 'panic'].includes(String(line.level)));
  const last = errors.at(-1);
  if (last === undefined) return undefined;
  const cause = (last.err as { message?: string } | undefined)?.message;
  return cause === undefined ? String(last.message) : `${String(last.message)}: ${cause}`;
}

/** Polls progress until `done` holds; throws SyncStoppedError or SyncTimeoutError with the reason. */
export async function watchProgress(ferry: FerryProcess, done: (progress: Progress) => boolean, options: WatchOptions): Promise<Progress> {
  const deadline = Date.now() + options.timeoutMs;
  const interval = options.intervalMs ?? 250;
  let exitCode: number | null | undefined;
  void ferry.exit.then((code) => (exitCode = code));
  let last: Progress | undefined;
  for (;;) {
    try {
      last = await ferry.progress();
    } catch (error) {
      // The API went away: most likely Ferry exited, which the check below explains.
      await new Promise((resolve) => setTimeout(resolve, 100));
      if (exitCode === undefined)
        throw new SyncStoppedError(`Ferry's control API stopped answering while waiting for ${options.what}: ${(error as Error).message}`);
    }
    if (exitCode !== undefined) {
      const logged = lastLoggedError(ferry);
      throw new SyncStoppedError(
        `Ferry exited (code ${exitCode}) while waiting for ${options.what}${logged ? `; it logged: ${logged}` : ''}`,
      );
    }
    options.onProgress?.(last!);
    if (done(last!)) return last!;
    if (last!.state === 'PAUSED' && options.pausedIsFailure !== false) {
      throw new SyncStoppedError(`Ferry paused the sync while waiting for ${options.what}: ${describeProgress(last!)}`);
    }
    if (Date.now() > deadline) {
      throw new SyncTimeoutError(
        `timed out after ${Math.round(options.timeoutMs / 1000)} s waiting for ${options.what}; last progress: ${describeProgress(last!)}`,
      );
    }
    await new Promise((resolve) => setTimeout(resolve, typeof interval === 'number' ? interval : interval(last!)));
  }
}
