/**
 * Ferry's own histograms, read from its `GET /metrics` endpoint (Prometheus summaries in base
 * units: seconds, bytes) and given back in the units people read: lag and latencies in seconds.
 */

/** One Prometheus summary. */
export interface Summary {
  p50: number;
  p90: number;
  p99: number;
  max: number;
  count: number;
  sum: number;
}

const QUANTILE_FIELDS: Record<string, keyof Summary> = { '0.5': 'p50', '0.9': 'p90', '0.99': 'p99', '1': 'max' };

/** Parses the summaries of a Prometheus text exposition, by metric name. */
export function parseSummaries(text: string): Map<string, Summary> {
  const summaries = new Map<string, Summary>();
  const get = (name: string) => {
    let summary = summaries.get(name);
    if (summary === undefined) {
      summary = { p50: 0, p90: 0, p99: 0, max: 0, count: 0, sum: 0 };
      summaries.set(name, summary);
    }
    return summary;
  };
  for (const line of text.split('\n')) {
    const quantile = /^(\w+)\{quantile="([\d.]+)"\} (\S+)$/.exec(line);
    if (quantile !== null) {
      const field = QUANTILE_FIELDS[quantile[2]!];
      if (field !== undefined) get(quantile[1]!)[field] = Number(quantile[3]);
      continue;
    }
    const total = /^(\w+)_(sum|count) (\S+)$/.exec(line);
    if (total !== null) get(total[1]!)[total[2] as 'sum' | 'count'] = Number(total[3]);
  }
  return summaries;
}

/** The apply path's histograms of a running ferry. */
export interface ApplyHistograms {
  /** Source event time to its application on the destination, seconds. */
  lag: Summary;
  /** One batch of change events applied, seconds. */
  applyLatency: Summary;
}

/** Reads lag and apply latency from ferry's `/metrics` (`base` is `http://host:port`). */
export async function readApplyHistograms(base: string): Promise<ApplyHistograms> {
  const response = await fetch(`${base}/metrics`);
  if (!response.ok) throw new Error(`GET /metrics answered HTTP ${response.status}`);
  const summaries = parseSummaries(await response.text());
  const lag = summaries.get('ferry_lag_seconds');
  const applyLatency = summaries.get('ferry_apply_latency_seconds');
  if (lag === undefined || applyLatency === undefined)
    throw new Error('GET /metrics has no ferry_lag_seconds or ferry_apply_latency_seconds');
  return { lag, applyLatency };
}
