/**
 * Lag of change-event application, as progress reports it (`lagTimeSeconds`, `lag.*`): the
 * source's latest time (the newest operation or cluster time a change-stream reply carried)
 * minus the source time up to which every event is applied, in whole seconds; 0 when application
 * is caught up (the last read found no new event and everything read is applied).
 *
 * - `crudSeconds`: how far behind the applied position is.
 * - `ddlSeconds`: how long a DDL event has been waiting at its barrier (for the lanes to drain, or
 *   for the initial copy to finish); 0 when none waits.
 * - `overallSeconds`: the larger of the two.
 *
 * An outage never freezes it: once the source has not been heard from for longer than a read
 * normally waits (`staleAfterSeconds`), the source is taken to move on with the clock, and while
 * a cluster is known unreachable (src/cluster/health.ts) the lag is at least the time since it
 * stopped answering. Either way it grows with wall-clock time until Ferry reads and applies again,
 * and "caught up" is not believed meanwhile.
 */
import type { Timestamp } from 'bson';
import { laterTime } from '../domain/time.js';

export interface Lag {
  overallSeconds: number;
  crudSeconds: number;
  ddlSeconds: number;
}

function secondsBetween(later: Timestamp | undefined, earlier: Timestamp | undefined): number {
  if (later === undefined || earlier === undefined) return 0;
  return Math.max(0, later.getHighBits() - earlier.getHighBits());
}

export interface LagOptions {
  /** How long the source may go unheard (a read's longest wait, and some) before its time is taken to move on with the clock. */
  staleAfterSeconds?: number;
}

export class LagTracker {
  readonly #staleAfterSeconds: number;
  #sourceTime: Timestamp | undefined;
  /** Wall time (seconds) of the last reply that said the source's time. */
  #observedAt = 0;
  #appliedTime: Timestamp | undefined;
  #waitingDdlTime: Timestamp | undefined;
  #caughtUp = false;
  #measured = false;

  /** The source time up to which every event is applied, once known. */
  get appliedTime(): Timestamp | undefined {
    return this.#appliedTime;
  }

  constructor(options: LagOptions = {}) {
    this.#staleAfterSeconds = options.staleAfterSeconds ?? Infinity;
  }

  /** Whether a reply has said the source's time (the lag is measured, not estimated). */
  get measured(): boolean {
    return this.#measured;
  }

  /** A reply (received at wall time `atSeconds`) said the source has reached `time`. */
  observeSource(time: Timestamp | undefined, atSeconds = Date.now() / 1000): void {
    this.#sourceTime = laterTime(this.#sourceTime, time);
    this.#observedAt = atSeconds;
    this.#measured = true;
  }

  /** Everything up to source time `time` is applied. */
  applied(time: Timestamp | undefined): void {
    this.#appliedTime = laterTime(this.#appliedTime, time);
  }

  /** Whether the last read found nothing new and everything read is applied. */
  set caughtUp(value: boolean) {
    this.#caughtUp = value;
  }

  /** A DDL event of time `time` waits at its barrier (undefined: none waits). */
  set waitingDdl(time: Timestamp | undefined) {
    this.#waitingDdlTime = time;
  }

  /**
   * Undefined until either time is known. Before the stream's first reply says the source's time
   * (just after start or a restart), the source is taken to be at `nowSeconds` (this machine's
   * clock): the lag is then the time since the position application starts from, which is what
   * it is once measured, give or take the clocks' skew.
   */
  lag(nowSeconds = Date.now() / 1000, unreachableSinceSeconds?: number): Lag | undefined {
    // Seconds a cluster has been known not to answer: nothing read or applied since can be vouched for.
    const outage = unreachableSinceSeconds === undefined ? 0 : Math.max(0, Math.floor(nowSeconds - unreachableSinceSeconds));
    if (!this.#measured) {
      if (this.#appliedTime === undefined) return undefined;
      const crudSeconds = Math.max(outage, Math.floor(nowSeconds) - this.#appliedTime.getHighBits(), 0);
      return { overallSeconds: crudSeconds, crudSeconds, ddlSeconds: 0 };
    }
    // Unheard for longer than a read waits: the source's time moved on with the clock meanwhile.
    const silence = Math.max(0, nowSeconds - this.#observedAt - this.#staleAfterSeconds);
    const ddlSeconds =
      this.#waitingDdlTime === undefined ? 0 : secondsBetween(this.#sourceTime, this.#waitingDdlTime) + Math.floor(silence);
    const caughtUp = this.#caughtUp && this.#waitingDdlTime === undefined && silence === 0 && outage === 0;
    const behind = secondsBetween(this.#sourceTime, this.#appliedTime) + Math.floor(silence);
    const crudSeconds = caughtUp ? 0 : Math.max(behind, outage);
    return { overallSeconds: Math.max(crudSeconds, ddlSeconds), crudSeconds, ddlSeconds };
  }
}
