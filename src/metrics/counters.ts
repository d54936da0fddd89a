/**
 * Monotonic counters of the work this process has done, served on `GET /metrics` (the phases
 * count them: src/phase/contract.ts `PhaseStatus.counters`; progress figures come from the same).
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

/** A value per counter. */
export type CounterValues = Record<CounterName, number>;
