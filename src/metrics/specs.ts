/**
 * What Ferry measures: the histograms and counters, each with its unit and how `/metrics` shows it.
 * Loads nothing (worker threads import it without hdr-histogram).
 */

/** How one histogram is kept and shown. */
export interface HistogramSpec {
  /** One line for people (Prometheus HELP text). */
  help: string;
  /** Unit of the values passed to `record` and returned by `percentiles`. */
  unit: 'milliseconds' | 'bytes';
  /**
   * Recorded integer = value × scale, so that sub-unit values keep 3 significant digits
   * (latencies are recorded in microseconds).
   */
  scale: number;
  /** Prometheus metric name, in base units (seconds, bytes). */
  prometheusName: string;
  /** Multiplier from `unit` to the Prometheus base unit. */
  prometheusFactor: number;
}

/** The histograms Ferry keeps. */
export const HISTOGRAM_SPECS = {
  copyReadLatencyMs: {
    help: 'Time to read one batch of documents from the source during collection copy',
    unit: 'milliseconds',
    scale: 1000,
    prometheusName: 'ferry_copy_read_latency_seconds',
    prometheusFactor: 1 / 1000,
  },
  copyWriteLatencyMs: {
    help: 'Time to write one batch of documents to the destination during collection copy',
    unit: 'milliseconds',
    scale: 1000,
    prometheusName: 'ferry_copy_write_latency_seconds',
    prometheusFactor: 1 / 1000,
  },
  copyBatchBytes: {
    help: 'Size of one batch of documents copied',
    unit: 'bytes',
    scale: 1,
    prometheusName: 'ferry_copy_batch_bytes',
    prometheusFactor: 1,
  },
  applyLatencyMs: {
    help: 'Time to apply one batch of change events to the destination',
    unit: 'milliseconds',
    scale: 1000,
    prometheusName: 'ferry_apply_latency_seconds',
    prometheusFactor: 1 / 1000,
  },
  lagMs: {
    help: 'Time between a change event on the source and its application on the destination',
    unit: 'milliseconds',
    scale: 1,
    prometheusName: 'ferry_lag_seconds',
    prometheusFactor: 1 / 1000,
  },
} as const satisfies Record<string, HistogramSpec>;

export type HistogramName = keyof typeof HISTOGRAM_SPECS;

export const HISTOGRAM_NAMES = Object.keys(HISTOGRAM_SPECS) as HistogramName[];
