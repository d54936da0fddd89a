/**
 * Prometheus text exposition (format 0.0.4) of Ferry's metrics, for a `GET /metrics` endpoint.
 * Histograms are exposed as summaries (p50/p90/p99 quantiles, the maximum as quantile 1, `_sum`,
 * `_count`) in base units.
 */
import { COUNTER_NAMES, COUNTER_SPECS, type CounterValues } from './counters.js';
import type { HistogramSet } from './histograms.js';
import { HISTOGRAM_NAMES, HISTOGRAM_SPECS } from './specs.js';

/** A gauge (or a counter kept elsewhere) with its samples, each with its labels. */
export interface MetricFamily {
  /** Prometheus name, in base units (`_seconds`, `_bytes`; counters end in `_total`). */
  name: string;
  help: string;
  type: 'gauge' | 'counter';
  samples: { labels?: Record<string, string>; value: number }[];
}

/** The metrics to render; any may be omitted. */
export interface PrometheusSources {
  histograms?: HistogramSet;
  counters?: CounterValues;
  /** Figures of the moment (state, lag, tuning...) and the process's own. */
  families?: MetricFamily[];
}

const QUANTILES = [
  ['0.5', 'p50'],
  ['0.9', 'p90'],
  ['0.99', 'p99'],
  ['1', 'max'],
] as const;

function escapeHelp(text: string): string {
  return text.replace(/\\/g, '\\\\').replace(/\n/g, '\\n');
}

function escapeLabel(value: string): string {
  return value.replace(/\\/g, '\\\\').replace(/\n/g, '\\n').replace(/"/g, '\\"');
}

/** A sample value as the exposition format writes it (`+Inf`, `NaN`). */
function formatValue(value: number): string {
  if (Number.isNaN(value)) return 'NaN';
  if (value === Number.POSITIVE_INFINITY) return '+Inf';
  if (value === Number.NEGATIVE_INFINITY) return '-Inf';
  return String(value);
}

/** Renders the metrics as Prometheus text; content type `text/plain; version=0.0.4`. */
export function renderPrometheus(sources: PrometheusSources): string {
  const lines: string[] = [];
  if (sources.counters !== undefined) {
    for (const name of COUNTER_NAMES) {
      const spec = COUNTER_SPECS[name];
      lines.push(`# HELP ${spec.prometheusName} ${escapeHelp(spec.help)}`);
      lines.push(`# TYPE ${spec.prometheusName} counter`);
      lines.push(`${spec.prometheusName} ${sources.counters[name]}`);
    }
  }
  // A set closed by a shutting-down engine has nothing left to show; /metrics still answers.
  if (sources.histograms !== undefined && !sources.histograms.closed) {
    for (const name of HISTOGRAM_NAMES) {
      const spec = HISTOGRAM_SPECS[name];
      const summary = sources.histograms.percentiles(name);
      const factor = spec.prometheusFactor;
      lines.push(`# HELP ${spec.prometheusName} ${escapeHelp(spec.help)}`);
      lines.push(`# TYPE ${spec.prometheusName} summary`);
      for (const [quantile, field] of QUANTILES) {
        lines.push(`${spec.prometheusName}{quantile="${quantile}"} ${summary[field] * factor}`);
      }
      lines.push(`${spec.prometheusName}_sum ${summary.mean * summary.count * factor}`);
      lines.push(`${spec.prometheusName}_count ${summary.count}`);
    }
  }
  for (const family of sources.families ?? []) {
    lines.push(`# HELP ${family.name} ${escapeHelp(family.help)}`);
    lines.push(`# TYPE ${family.name} ${family.type}`);
    for (const { labels, value } of family.samples) {
      const pairs = Object.entries(labels ?? {}).map(([key, label]) => `${key}="${escapeLabel(label)}"`);
      lines.push(`${family.name}${pairs.length > 0 ? `{${pairs.join(',')}}` : ''} ${formatValue(value)}`);
    }
  }
  return lines.join('\n') + '\n';
}
