/**
 * The one retry policy for passing conditions of a cluster (errors.ts `isTransient`: the network,
 * a primary stepping down, a failover): a few attempts with exponential backoff. Each attempt may
 * itself wait up to CLUSTER_TIMEOUT_MS for a server (connect.ts), so a failover of a minute or so
 * is ridden out; a longer outage fails the operation, and the sync pauses with the reason.
 *
 * A whole idempotent operation is retried with `retryTransient` (a change-event batch). Work that
 * resumes from a position instead (a partition copy, the change stream) runs its own loop with
 * `RETRY_POLICY` and `retryDelay`.
 */
import { isTransient } from './errors.js';

export const RETRY_POLICY = Object.freeze({
  /** Retries after the first failure, in a row without progress. */
  retries: 5,
  /** Wait before the first retry; doubled for each next one. */
  firstDelayMs: 250,
  /** Longest wait between two attempts. */
  maxDelayMs: 10_000,
});

/** The wait before retry number `retry` (from 0). */
export function retryDelay(retry: number): number {
  return Math.min(RETRY_POLICY.firstDelayMs * 2 ** retry, RETRY_POLICY.maxDelayMs);
}

export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** Runs `operation` (idempotent), again after a transient failure, at most `RETRY_POLICY.retries` more times. */
export async function retryTransient<T>(operation: () => Promise<T>): Promise<T> {
  for (let retry = 0; ; retry++) {
    try {
      return await operation();
    } catch (error) {
      if (!isTransient(error) || retry >= RETRY_POLICY.retries) throw error;
      await sleep(retryDelay(retry));
    }
  }
}
