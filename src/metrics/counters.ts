/**
 * Monotonic counters of work done, kept per thread and summed in the main thread like the
 * histograms. (Progress figures come from the state machine's own in-memory counters; these
 * are for `GET /metrics` and benchmarks.)
 */

/** How one counter is shown. */
export interface CounterSpec {
  /** One line for people (Prometheus HELP text). */
  help: string;
  /** Prometheus metric name (counters end in `_total`). */
  prometheusName: string;
}

/** The counters Ferry keeps. */
export const COUNTER_SPECS = {
  copiedDocuments: {
    help: 'Documents copied to the destination during collection copy',
    prometheusName: 'ferry_copied_documents_total',
  },
  copiedBytes: {
    help: 'Bytes of documents copied to the destination during collection copy',
    prometheusName: 'ferry_copied_bytes_total',
  },
  appliedEvents: {
    help: 'Change events applied to the destination',
    prometheusName: 'ferry_applied_events_total',
  },
} as const satisfies Record<string, CounterSpec>;

export type CounterName = keyof typeof COUNTER_SPECS;

export const COUNTER_NAMES = Object.keys(COUNTER_SPECS) as CounterName[];

/** Counter values, as sent between threads. */
export type CounterValues = Record<CounterName, number>;

/** One value per name in `COUNTER_SPECS`, starting at 0. */
export class Counters {
  private readonly values = new Map<CounterName, number>(COUNTER_NAMES.map((name) => [name, 0]));

  /** Adds `amount` (a non-negative number) to a counter. */
  add(name: CounterName, amount = 1): void {
    if (!(amount >= 0)) throw new RangeError(`counter ${name} cannot go down (adding ${amount})`);
    this.values.set(name, this.get(name) + amount);
  }

  get(name: CounterName): number {
    return this.values.get(name) ?? 0;
  }

  /** All values, a plain object safe to `postMessage`. */
  snapshot(): CounterValues {
    return Object.fromEntries(this.values) as CounterValues;
  }

  /** Adds another thread's `snapshot()` (typically one taken just before its `reset()`). */
  merge(values: Partial<CounterValues>): void {
    for (const name of COUNTER_NAMES) this.add(name, values[name] ?? 0);
  }

  reset(): void {
    for (const name of COUNTER_NAMES) this.values.set(name, 0);
  }
}
