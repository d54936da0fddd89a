/**
 * The last hour of progress, in memory: a sample every few seconds (state, bytes copied, events
 * applied, lag), bounded by age and count, for the status page's charts (throughput and lag over
 * the last hour, events applied per second) and for `estimatedSecondsToCEACatchup`. Nothing is
 * persisted: a restarted Ferry starts a new history.
 */
import type { State } from '../domain/states.js';

export interface ProgressSample {
  /** Milliseconds since the epoch. */
  t: number;
  state: State;
  /** `collectionCopy.estimatedCopiedBytes` (null when there is no sync). */
  copiedBytes: number | null;
  /** Change events applied by this process so far. */
  eventsApplied: number;
  /** `lagTimeSeconds` (null while paused, or before application measures it). */
  lagSeconds: number | null;
}

export interface HistoryOptions {
  /** Samples older than this are dropped. Default one hour. */
  maxAgeMs?: number;
  /** At most this many samples are kept. Default 3600. */
  maxSamples?: number;
}

/** Over how long a stretch the lag's fall is measured for the catch-up estimate. */
export const CATCH_UP_WINDOW_MS = 60_000;
/** The shortest stretch the estimate is made from. */
export const CATCH_UP_MIN_SPAN_MS = 10_000;

export class ProgressHistory {
  readonly #samples: ProgressSample[] = [];
  readonly #maxAgeMs: number;
  readonly #maxSamples: number;

  constructor(options: HistoryOptions = {}) {
    this.#maxAgeMs = options.maxAgeMs ?? 3_600_000;
    this.#maxSamples = options.maxSamples ?? 3600;
  }

  record(sample: ProgressSample): void {
    this.#samples.push(sample);
    const oldest = sample.t - this.#maxAgeMs;
    let drop = 0;
    while (drop < this.#samples.length && this.#samples[drop]!.t < oldest) drop++;
    drop = Math.max(drop, this.#samples.length - this.#maxSamples);
    if (drop > 0) this.#samples.splice(0, drop);
  }

  /** Samples taken after `since` (ms), oldest first. */
  since(since = 0): ProgressSample[] {
    return this.#samples.filter((sample) => sample.t > since);
  }

  /**
   * mongosync's `estimatedSecondsToCEACatchup`: the seconds until the lag reaches 0 at the rate
   * it fell over the last minute (at least ten seconds of samples, all RUNNING with a measured
   * lag); undefined when it did not fall (or there is not enough to tell).
   */
  catchUpSeconds(now: number, currentLag: number | null): number | undefined {
    if (currentLag === null) return undefined;
    const window = this.#samples.filter((sample) => sample.t >= now - CATCH_UP_WINDOW_MS && sample.t <= now);
    const first = window[0];
    if (first === undefined || now - first.t < CATCH_UP_MIN_SPAN_MS) return undefined;
    if (window.some((sample) => sample.state !== 'RUNNING' || sample.lagSeconds === null)) return undefined;
    const fell = first.lagSeconds! - currentLag;
    if (fell <= 0) return undefined;
    const perSecond = fell / ((now - first.t) / 1000);
    return Math.ceil(currentLag / perSecond);
  }
}
