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

export class LagTracker {
  #sourceTime: Timestamp | undefined;
  #appliedTime: Timestamp | undefined;
  #waitingDdlTime: Timestamp | undefined;
  #caughtUp = false;
  #measured = false;

  /** The source time up to which every event is applied, once known. */
  get appliedTime(): Timestamp | undefined {
    return this.#appliedTime;
  }

  /** Whether a reply has said the source's time (the lag is measured, not estimated). */
  get measured(): boolean {
    return this.#measured;
  }

  /** A reply said the source has reached `time`. */
  observeSource(time: Timestamp | undefined): void {
    this.#sourceTime = laterTime(this.#sourceTime, time);
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
  lag(nowSeconds = Date.now() / 1000): Lag | undefined {
    if (!this.#measured) {
      if (this.#appliedTime === undefined) return undefined;
      const crudSeconds = Math.max(0, Math.floor(nowSeconds) - this.#appliedTime.getHighBits());
      return { overallSeconds: crudSeconds, crudSeconds, ddlSeconds: 0 };
    }
    const ddlSeconds = secondsBetween(this.#sourceTime, this.#waitingDdlTime);
    const crudSeconds = this.#caughtUp && this.#waitingDdlTime === undefined ? 0 : secondsBetween(this.#sourceTime, this.#appliedTime);
    return { overallSeconds: Math.max(crudSeconds, ddlSeconds), crudSeconds, ddlSeconds };
  }
}
