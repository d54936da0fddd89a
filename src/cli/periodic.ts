/**
 * What the daemon does on a timer besides serving the API: a progress sample every few seconds
 * for the status page's history (src/state/history.ts), and the log lines mongosync writes while
 * it replicates, with its field names, for log shippers that parse them: `Replication progress.`
 * (`totalEventsApplied`, `lagTimeSeconds`, `estimatedOplogTimeRemaining`) and, unless
 * `--disableMetricsLogging`, `Operation duration stats.` (average and maximum durations and counts
 * of copy reads, copy writes and change-event writes, since Ferry started, and each cluster's ping).
 */
import type { Logger } from '../log/logger.js';
import type { HistogramSet } from '../metrics/histograms.js';
import type { HistogramName } from '../metrics/specs.js';
import type { ProgressHistory } from '../state/history.js';
import type { Progress } from '../state/progress.js';

/** How often progress is sampled for the history. */
export const HISTORY_INTERVAL_MS = 2000;

export interface PeriodicOptions {
  progress: () => Progress;
  history: ProgressHistory;
  histograms: HistogramSet;
  /** Exact ping latencies (ms; -1: failed). */
  pings: () => { source?: number; destination?: number } | undefined;
  logger: Logger;
  logIntervalMs: number;
  metricsLogging: boolean;
}

function durationStats(histograms: HistogramSet, name: HistogramName): Record<string, unknown> {
  if (histograms.closed) return {};
  const { count, mean, max } = histograms.percentiles(name);
  if (count === 0) return {};
  return { averageDurationMs: mean.toFixed(2), maximumDurationMs: max.toFixed(2), numOperations: count };
}

/** Starts the timers; returns what stops them. */
export function startPeriodicWork(options: PeriodicOptions): () => void {
  const { progress, history, logger } = options;
  const sample = setInterval(() => {
    const now = progress();
    history.record({
      t: Date.now(),
      state: now.state,
      copiedBytes: now.collectionCopy?.estimatedCopiedBytes ?? null,
      eventsApplied: now.totalEventsApplied ?? 0,
      lagSeconds: now.lagTimeSeconds,
    });
  }, HISTORY_INTERVAL_MS);
  sample.unref();
  const log = setInterval(() => {
    const now = progress();
    if (now.state === 'IDLE' || now.state === 'INITIALIZING' || now.state === 'COMMITTED') return;
    logger.info(
      {
        totalEventsApplied: now.totalEventsApplied,
        lagTimeSeconds: now.lagTimeSeconds,
        ...(now.estimatedOplogTimeRemaining === null ? {} : { estimatedOplogTimeRemaining: now.estimatedOplogTimeRemaining }),
      },
      'Replication progress.',
    );
    if (!options.metricsLogging) return;
    const pings = options.pings() ?? {};
    logger.info(
      {
        CollectionCopySourceRead: durationStats(options.histograms, 'copyReadLatencyMs'),
        CollectionCopyDestinationWrite: durationStats(options.histograms, 'copyWriteLatencyMs'),
        CEADestinationWrite: durationStats(options.histograms, 'applyLatencyMs'),
        ...(pings.source === undefined ? {} : { sourcePingLatencyMs: Math.round(pings.source) }),
        ...(pings.destination === undefined ? {} : { destinationPingLatencyMs: Math.round(pings.destination) }),
      },
      'Operation duration stats.',
    );
  }, options.logIntervalMs);
  log.unref();
  return () => {
    clearInterval(sample);
    clearInterval(log);
  };
}
