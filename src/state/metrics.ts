/**
 * The figures of the moment for `GET /metrics`, beside the counters and histograms the phases keep
 * (src/metrics/): the state, whether a commit would succeed, the copy's bytes and partitions,
 * index builds, lag, the source oplog left, each cluster's ping, the tuning in force, how many
 * warnings stand, and the process's own CPU, memory and start time (Prometheus' `process_*`
 * names). Read from progress and the sync's snapshot: in memory, never a query per scrape.
 */
import { STATES } from '../domain/states.js';
import type { NamespaceProgress, SyncSnapshot } from '../domain/sync-control.js';
import type { MetricFamily } from '../metrics/prometheus.js';
import type { Progress } from './progress.js';

const PROCESS_START_SECONDS = Date.now() / 1000 - process.uptime();

function gauge(name: string, help: string, samples: MetricFamily['samples']): MetricFamily {
  return { name, help, type: 'gauge', samples };
}

/** Every family, in a stable order (the README's table lists them). */
export function metricFamilies(progress: Progress, snapshot: SyncSnapshot, version: string, id: string): MetricFamily[] {
  const families: MetricFamily[] = [
    gauge('ferry_info', 'Always 1; labels say which Ferry and which instance', [{ labels: { version, id }, value: 1 }]),
    gauge(
      'ferry_state',
      'Whether Ferry is in each state (1 for the current one)',
      STATES.map((state) => ({ labels: { state }, value: progress.state === state ? 1 : 0 })),
    ),
    gauge('ferry_can_commit', 'Whether a commit would succeed now (progress canCommit)', [{ value: progress.canCommit ? 1 : 0 }]),
    gauge('ferry_warnings', 'Warnings in progress now', [{ value: progress.warnings?.length ?? 0 }]),
  ];
  const copy = progress.collectionCopy;
  if (copy !== null) {
    families.push(
      gauge('ferry_copy_estimated_total_bytes', 'Bytes the initial copy is estimated to copy', [{ value: copy.estimatedTotalBytes }]),
      gauge('ferry_copy_estimated_copied_bytes', 'Bytes the initial copy has copied (all runs)', [{ value: copy.estimatedCopiedBytes }]),
    );
  }
  const namespaces = snapshot.namespaces;
  if (namespaces !== undefined) {
    const sum = (pick: (n: NamespaceProgress) => number) => namespaces.reduce((total, n) => total + pick(n), 0);
    const done = sum((n) => n.partitions.done);
    const running = sum((n) => n.partitions.inProgress);
    families.push(
      gauge('ferry_copy_partitions', 'Partitions of the initial copy, by status', [
        { labels: { status: 'done' }, value: done },
        { labels: { status: 'in_progress' }, value: running },
        { labels: { status: 'not_started' }, value: sum((n) => n.partitions.total) - done - running },
      ]),
    );
  }
  const indexes = progress.indexBuilding;
  if (indexes !== null && indexes !== undefined) {
    families.push(
      gauge('ferry_indexes_built', 'Indexes built on the destination after the copy', [{ value: indexes.indexesBuilt }]),
      gauge('ferry_indexes_to_build', 'Indexes to build on the destination after the copy', [{ value: indexes.totalIndexesToBuild }]),
    );
  }
  if (progress.lag !== null) {
    families.push(
      gauge('ferry_lag_time_seconds', "Progress's lag: the source's latest time minus the last applied", [
        { labels: { kind: 'overall' }, value: progress.lag.overallLagSeconds },
        { labels: { kind: 'crud' }, value: progress.lag.crudLagSeconds },
        { labels: { kind: 'ddl' }, value: progress.lag.ddlLagSeconds },
      ]),
    );
  }
  const oplog = snapshot.oplogTimeRemaining?.seconds;
  if (progress.state === 'RUNNING' && oplog !== undefined) {
    families.push(
      gauge('ferry_oplog_time_remaining_seconds', 'Source oplog left before the oldest change event still needed rolls off', [
        { value: oplog },
      ]),
    );
  }
  const pings = snapshot.pingLatencyMs;
  if (pings !== undefined) {
    const measured = (['source', 'destination'] as const).filter((side) => pings[side] !== undefined && pings[side]! >= 0);
    families.push(
      gauge(
        'ferry_ping_latency_seconds',
        'Round trip of the last ping to each cluster (absent when it failed: see ferry_ping_up)',
        measured.map((side) => ({ labels: { cluster: side }, value: pings[side]! / 1000 })),
      ),
      gauge(
        'ferry_ping_up',
        'Whether the last ping to each cluster was answered',
        (['source', 'destination'] as const)
          .filter((side) => pings[side] !== undefined)
          .map((side) => ({ labels: { cluster: side }, value: pings[side]! >= 0 ? 1 : 0 })),
      ),
    );
  }
  const tuning = snapshot.tuning;
  if (tuning !== undefined) {
    families.push(
      gauge('ferry_tuning_load_level', 'The load level in force (--loadLevel, live)', [{ value: tuning.loadLevel }]),
      gauge('ferry_tuning_copy_workers', 'Partitions copied at once (--copyWorkers, live)', [{ value: tuning.copyWorkers }]),
      gauge('ferry_tuning_batches_in_flight', 'Write batches each partition keeps in flight (--batchesInFlight, live)', [
        { value: tuning.batchesInFlight },
      ]),
      gauge('ferry_tuning_apply_lanes', 'Change-event lanes (--applyLanes, live)', [{ value: tuning.applyLanes }]),
      gauge('ferry_tuning_batch_bytes', 'Largest write batch (--batchBytes, live)', [{ value: tuning.batchBytes }]),
    );
  }
  const cpu = process.cpuUsage();
  families.push(
    {
      name: 'process_cpu_seconds_total',
      help: 'CPU time of this process',
      type: 'counter',
      samples: [{ value: (cpu.user + cpu.system) / 1e6 }],
    },
    gauge('process_resident_memory_bytes', 'Resident memory of this process', [{ value: process.memoryUsage.rss() }]),
    gauge('process_start_time_seconds', 'When this process started, in seconds since the epoch', [{ value: PROCESS_START_SECONDS }]),
  );
  return families;
}
