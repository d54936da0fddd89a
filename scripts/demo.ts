/**
 * `npm run demo`: Ferry doing its whole job on this machine, as an operator would run it.
 *
 * 1. Two test clusters start, each in its own process (source and destination).
 * 2. The source is filled with generated application data (scripts/generate.ts).
 * 3. Ferry starts (the real CLI) and is sent `POST /api/v1/start`; a write workload
 *    (scripts/workload.ts) runs against the source during the copy and change-event application;
 *    progress is shown live.
 * 4. Once `canCommit`, the workload runs a few seconds more, stops, and the sync is committed;
 *    the demo waits for COMMITTED.
 * 5. Ferry's embedded verifier finishes its final pass and must report the destination clean; the
 *    destination is also verified equal to the source independently (documents by content hash per
 *    namespace, collection options, indexes as restored), and a summary is printed.
 *
 * Exits 0 when every step succeeded; otherwise 1 with the reason. Everything it started is
 * stopped however it ends (Ctrl-C included).
 *
 *   npm run demo -- [--sizeMB 100] [--seed 1] [--opsPerSecond 300] [--applySeconds 5]
 *                   [--timeoutSeconds 600] [--loadLevel n] [--summaryFile path]
 */
import { rm, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import { performance } from 'node:perf_hooks';
import { Command } from 'commander';
import { spawnCluster, type ClusterHandle } from '../test/cluster/index.js';
import { startFerry, type FerryProcess, type Progress } from '../test/e2e/ferry-process.js';
import { generateDataset, type GenerateReport } from './generate.js';
import { Cleanup } from './lib/cleanup.js';
import { positiveInteger, positiveNumber, integer } from './lib/cli-numbers.js';
import { compareClusters, type ClusterDifference, type NamespaceComparison } from './lib/compare-clusters.js';
import { createLiveProgress, type LiveProgress } from './lib/live-progress.js';
import { readApplyHistograms } from './lib/ferry-metrics.js';
import { assertAppliesChanges, describeProgress, watchProgress } from './lib/sync-watch.js';
import { startWorkload, type Workload, type WorkloadStats } from './workload.js';
import { runIfEntryPoint } from './lib/entry-point.js';
import { redactUris } from '../src/domain/credentials.js';

/** Options of `runDemo`. */
export interface DemoOptions {
  /** Size of the generated source data, MiB. Default 100. */
  sizeMB?: number;
  /** Seed of the generator and the workload. Default 1. */
  seed?: number;
  /** Writes per second of the workload on the source. Default 300. */
  opsPerSecond?: number;
  /** Seconds the workload keeps writing once the sync can commit (change-event application). Default 5. */
  applySeconds?: number;
  /** Longest wait for any one step (start-up, copy, catching up, commit). Default 600. */
  timeoutSeconds?: number;
  /** Ferry's `--loadLevel`. Default: Ferry's own default. */
  loadLevel?: number;
  /** Where to write the summary as JSON. Default: nowhere. */
  summaryFile?: string;
  /** Draw a progress bar (true) or print plain lines (false). Default: whether stdout is a terminal. */
  interactive?: boolean;
}

/** What the demo did, as printed at the end. */
export interface DemoSummary {
  sizeMB: number;
  seed: number;
  source: { databases: number; collections: number; views: number; indexes: number; documents: number; bytes: number };
  copiedBytes: number;
  /** From `start` until progress no longer says `collection copy` (indexes built). */
  copySeconds: number;
  copyMBps: number;
  /** From `start` until COMMITTED. */
  syncSeconds: number;
  eventsApplied: number;
  workload: WorkloadStats;
  /** Lag of the applied events (source event time to its application), from Ferry's histogram. */
  lagSeconds: { p50: number; p99: number; max: number; samples: number };
  /** Time to apply one batch of events, from Ferry's histogram. */
  applyLatencySeconds: { p50: number; p99: number; batches: number };
  verified: { namespaces: number; documents: number };
  /** Ferry's embedded verifier after its final pass: its outcome and the documents it compared on each cluster. */
  embeddedVerification: { outcome: string; differences: number; documents: { source: number; destination: number }; seconds: number };
  /** Processes the demo started (all stopped when it returns). */
  pids: { source: number; destination: number; ferry: number };
}

/** A step of the demo failed; the message says which and why. */
export class DemoFailedError extends Error {
  override readonly name = 'DemoFailedError';
  readonly code = 'DemoFailed';
}

const MiB = 1024 * 1024;
const FERRY_ID = 'demo';

function formatDifference(difference: ClusterDifference): string {
  const { kind, ns, ...details } = difference;
  return `${ns}: ${kind} ${JSON.stringify(details)}`;
}

function describeSource(report: GenerateReport): string {
  return (
    `${(report.totalBytes / MiB).toFixed(1)} MB, ${report.totalDocuments.toLocaleString('en-US')} documents in ` +
    `${report.collections.length} collections of ${report.databases.length} databases (${report.databases.join(', ')}), ` +
    `${report.views.length} view, ${report.indexes} secondary indexes`
  );
}

/** Sends a request to Ferry's API and fails with Ferry's own error when it is refused. */
async function request(ferry: FerryProcess, path: string, body: object = {}): Promise<void> {
  const reply = await ferry.post(path, body);
  if (reply.status !== 200 || reply.body.success !== true) {
    throw new DemoFailedError(`Ferry refused ${path} (HTTP ${reply.status}): ${reply.body.error}: ${reply.body.errorDescription}`);
  }
}

/** Starts a test cluster and registers its stop. */
async function startCluster(cleanup: Cleanup, role: string): Promise<ClusterHandle & { pid: number }> {
  const cluster = await spawnCluster();
  cleanup.defer(
    `the ${role} cluster`,
    () => cluster.stop(),
    () => process.kill(cluster.pid, 'SIGKILL'),
  );
  return cluster;
}

/** What a run of the demo shares with its caller. */
export interface DemoContext {
  /** Stops what the demo started; the caller runs it however the demo ends. */
  cleanup: Cleanup;
  /** Gets every line of output. */
  print: (line: string) => void;
  /** Set once ferry runs: its log file (kept when the demo fails). */
  ferryLog?: string;
}

/** What the sync did, as the demo saw it through progress. */
interface SyncOutcome {
  copiedBytes: number;
  copySeconds: number;
  syncSeconds: number;
  eventsApplied: number;
  workload: WorkloadStats;
}

/**
 * Shows progress live until the sync can commit, lets the workload run `applySeconds` more, stops
 * it, commits and waits for COMMITTED. `startedAt` is when `start` was sent.
 */
async function syncUntilCommitted(ferry: FerryProcess, workload: Workload, options: DemoOptions, startedAt: number): Promise<SyncOutcome> {
  const timeoutMs = (options.timeoutSeconds ?? 600) * 1000;
  const live: LiveProgress = createLiveProgress(options.interactive === undefined ? {} : { interactive: options.interactive });
  let copySeconds: number | undefined;
  let copiedBytes = 0;
  let eventsApplied = 0;
  const observe = (progress: Progress) => {
    live.update(progress);
    eventsApplied = Math.max(eventsApplied, progress.totalEventsApplied ?? 0);
    if (progress.state === 'RUNNING' && progress.info !== 'collection copy' && copySeconds === undefined) {
      copySeconds = (performance.now() - startedAt) / 1000;
      copiedBytes = progress.collectionCopy?.estimatedCopiedBytes ?? 0;
      live.note(
        `Initial copy complete in ${copySeconds.toFixed(1)} s (indexes built): ${(copiedBytes / MiB).toFixed(1)} MB; now: ${progress.info}`,
      );
    }
    assertAppliesChanges(progress);
  };
  const watch = (what: string, done: (progress: Progress) => boolean) =>
    watchProgress(ferry, done, { what, timeoutMs, onProgress: observe });

  let workloadStats: WorkloadStats;
  try {
    await watch('the copy to complete and change-event application to catch up (canCommit)', (p) => p.canCommit === true);
    const applySeconds = options.applySeconds ?? 5;
    live.note(`Ferry can commit; the workload keeps writing for ${applySeconds} s while Ferry applies its change events…`);
    const until = Date.now() + applySeconds * 1000;
    await watch('change-event application under the workload', () => Date.now() >= until);
    workloadStats = await workload.stop();
    live.note(
      `Workload stopped: ${workloadStats.writes} writes in ${workloadStats.seconds.toFixed(1)} s ` +
        `(${workloadStats.changes} documents changed, ${workloadStats.transactions} transactions, ${workloadStats.errors} refused)`,
    );
    if (workloadStats.errors > 0) live.note(`  the source refused some writes; the first: ${workloadStats.firstError}`);
    const ready = await watch('canCommit after the workload stopped', (p) => p.canCommit === true);
    live.note(`POST ${ferry.base}/api/v1/commit {} (lag ${ready.lagTimeSeconds ?? '-'} s, ${ready.totalEventsApplied} events applied)`);
    await request(ferry, 'commit');
    await watch('the commit to complete (COMMITTED)', (p) => p.state === 'COMMITTED');
  } finally {
    live.stop();
  }
  const syncSeconds = (performance.now() - startedAt) / 1000;
  live.note(`COMMITTED after ${syncSeconds.toFixed(1)} s: ${describeProgress(await ferry.progress())}`);
  return { copiedBytes, copySeconds: copySeconds ?? syncSeconds, syncSeconds, eventsApplied, workload: workloadStats };
}

/** Waits for Ferry's embedded verifier to finish its final pass after commit; fails on any difference it reports. */
async function awaitEmbeddedVerification(
  ferry: FerryProcess,
  timeoutMs: number,
  print: (line: string) => void,
): Promise<DemoSummary['embeddedVerification']> {
  const started = performance.now();
  const report = await ferry.waitForVerification((r) => r.outcome !== 'pending', timeoutMs);
  const seconds = (performance.now() - started) / 1000;
  const documents = {
    source: report.progress?.source.hashedDocumentCount ?? 0,
    destination: report.progress?.destination.hashedDocumentCount ?? 0,
  };
  print(
    `Ferry's embedded verifier finished its final pass ${seconds.toFixed(1)} s after COMMITTED: ${report.outcome} ` +
      `(${documents.source.toLocaleString('en-US')} source documents compared, ${report.mismatchCount} difference(s))`,
  );
  if (report.outcome !== 'clean') {
    throw new DemoFailedError(
      `Ferry's verifier reports ${report.mismatchCount} difference(s): ${JSON.stringify(report.mismatches.slice(0, 5))}`,
    );
  }
  return { outcome: report.outcome, differences: report.mismatchCount, documents, seconds };
}

/** Compares the clusters namespace by namespace, printing each; fails on any difference. */
async function verifyDestination(
  sourceUri: string,
  destinationUri: string,
  print: (line: string) => void,
): Promise<DemoSummary['verified']> {
  print('Verifying the destination against the source (documents by content hash, options, indexes as restored)…');
  const compared: NamespaceComparison[] = [];
  const differences = await compareClusters(sourceUri, destinationUri, {
    onCompared: (comparison) => {
      compared.push(comparison);
      const documents =
        comparison.documents === undefined
          ? ''
          : `${comparison.documents.toLocaleString('en-US').padStart(9)} documents  ` +
            `sha256 ${comparison.sourceHash!.slice(0, 16)}…  ${comparison.indexes} indexes`;
      print(`  ${comparison.equal ? 'equal    ' : 'DIFFERENT'} ${comparison.ns.padEnd(32)} ${comparison.type.padEnd(10)} ${documents}`);
    },
  });
  if (differences.length > 0) {
    throw new DemoFailedError(
      `the destination differs from the source in ${differences.length} ` +
        `way(s):\n  ${differences.slice(0, 10).map(formatDifference).join('\n  ')}`,
    );
  }
  return { namespaces: compared.length, documents: compared.reduce((sum, c) => sum + (c.documents ?? 0), 0) };
}

/** Runs the demo (see the module comment). */
export async function runDemo(options: DemoOptions, context: DemoContext): Promise<DemoSummary> {
  const { cleanup, print } = context;
  const sizeMB = options.sizeMB ?? 100;
  const seed = options.seed ?? 1;
  const opsPerSecond = options.opsPerSecond ?? 300;

  print(`Ferry demo: ${sizeMB} MB of generated data (seed ${seed}), a ${opsPerSecond} writes/s workload on the source.`);
  print('Starting two test clusters, each in its own process…');
  const [source, destination] = [await startCluster(cleanup, 'source'), await startCluster(cleanup, 'destination')];
  print(`  source      ${source.uri} (pid ${source.pid})`);
  print(`  destination ${destination.uri} (pid ${destination.pid})`);

  print(`Filling the source with ${sizeMB} MB of generated data…`);
  const generated = await generateDataset({ uri: source.uri, sizeMB, seed });
  print(`  ${describeSource(generated)}`);

  const ferryFlags = ['--cluster0', source.uri, '--cluster1', destination.uri, '--id', FERRY_ID];
  if (options.loadLevel !== undefined) ferryFlags.push('--loadLevel', String(options.loadLevel));
  const ferry = await startFerry(ferryFlags);
  const logDir = dirname(ferry.logFile);
  context.ferryLog = ferry.logFile;
  cleanup.defer(
    'ferry',
    () => ferry.stop('SIGTERM'),
    () => ferry.child.kill('SIGKILL'),
  );
  print(`Ferry started (pid ${ferry.child.pid}), control API at ${ferry.base}/api/v1, log in ${ferry.logFile}`);
  print(`Status page: ${ferry.base}/ (open it in a browser: copy, lag, warnings and the next step, live)`);

  const workload = await startWorkload({ uri: source.uri, opsPerSecond, seed });
  cleanup.defer('the workload', () => workload.stop());
  print(`Workload writing to the source at ${opsPerSecond} writes/s.`);

  const startRequest = { source: 'cluster0', destination: 'cluster1' };
  print(`POST ${ferry.base}/api/v1/start ${JSON.stringify(startRequest)}`);
  const startedAt = performance.now();
  await request(ferry, 'start', startRequest);

  const sync = await syncUntilCommitted(ferry, workload, options, startedAt);
  const { lag, applyLatency } = await readApplyHistograms(ferry.base);
  const embeddedVerification = await awaitEmbeddedVerification(ferry, (options.timeoutSeconds ?? 600) * 1000, print);
  const verified = await verifyDestination(source.uri, destination.uri, print);

  const summary: DemoSummary = {
    sizeMB,
    seed,
    source: {
      databases: generated.databases.length,
      collections: generated.collections.length,
      views: generated.views.length,
      indexes: generated.indexes,
      documents: generated.totalDocuments,
      bytes: generated.totalBytes,
    },
    copiedBytes: sync.copiedBytes,
    copySeconds: sync.copySeconds,
    copyMBps: sync.copiedBytes / MiB / sync.copySeconds,
    syncSeconds: sync.syncSeconds,
    eventsApplied: sync.eventsApplied,
    workload: sync.workload,
    lagSeconds: { p50: lag.p50, p99: lag.p99, max: lag.max, samples: lag.count },
    applyLatencySeconds: { p50: applyLatency.p50, p99: applyLatency.p99, batches: applyLatency.count },
    verified,
    embeddedVerification,
    pids: { source: source.pid, destination: destination.pid, ferry: ferry.child.pid! },
  };
  await rm(logDir, { recursive: true, force: true });
  return summary;
}

function printSummary(summary: DemoSummary, print: (line: string) => void): void {
  const n = (value: number) => value.toLocaleString('en-US');
  print('');
  print('Summary');
  print(
    `  copied        ${(summary.copiedBytes / MiB).toFixed(1)} MB, ${n(summary.source.documents)} documents ` +
      `in ${summary.copySeconds.toFixed(1)} s = ${summary.copyMBps.toFixed(1)} MB/s (indexes included)`,
  );
  print(
    `  workload      ${n(summary.workload.writes)} writes on the source during the sync (${n(summary.workload.changes)} documents changed)`,
  );
  print(`  applied       ${n(summary.eventsApplied)} change events`);
  const lag = summary.lagSeconds;
  const apply = summary.applyLatencySeconds;
  print(`  lag           p50 ${lag.p50.toFixed(3)} s, p99 ${lag.p99.toFixed(3)} s, max ${lag.max.toFixed(3)} s (Ferry's histogram)`);
  print(
    `  apply batch   p50 ${(apply.p50 * 1000).toFixed(1)} ms, p99 ${(apply.p99 * 1000).toFixed(1)} ms over ${n(apply.batches)} batches`,
  );
  print(`  sync          ${summary.syncSeconds.toFixed(1)} s from start to COMMITTED`);
  print(
    `  verified      destination equals source: ${summary.verified.namespaces} ` +
      `namespaces, ${n(summary.verified.documents)} documents, options and indexes restored`,
  );
  const embedded = summary.embeddedVerification;
  print(
    `  Ferry verified ${embedded.outcome}: ${n(embedded.documents.source)} source and ${n(embedded.documents.destination)} destination ` +
      `documents compared, ${embedded.differences} difference(s); final pass ${embedded.seconds.toFixed(1)} s after COMMITTED`,
  );
}

async function main(argv: string[]): Promise<void> {
  const options = new Command()
    .name('demo')
    .description('Ferry copies two local test clusters end to end, under a write workload, and commits')
    .option('--sizeMB <n>', 'size of the generated source data, MiB', positiveNumber, 100)
    .option('--seed <n>', 'seed of the generator and the workload', integer, 1)
    .option('--opsPerSecond <n>', 'writes per second of the workload on the source', positiveNumber, 300)
    .option('--applySeconds <n>', 'seconds the workload keeps writing once the sync can commit', positiveNumber, 5)
    .option('--timeoutSeconds <n>', 'longest wait for any one step', positiveNumber, 600)
    .option('--loadLevel <n>', "Ferry's --loadLevel", positiveInteger)
    .option('--summaryFile <path>', 'also write the summary as JSON to this file')
    .parse(argv)
    .opts<DemoOptions>();

  const cleanup = new Cleanup();
  const print = (line: string) => process.stdout.write(`${line}\n`);
  const context: DemoContext = { cleanup, print };
  let interrupted = false;
  process.once('SIGINT', () => {
    interrupted = true;
    print('\nInterrupted: stopping everything the demo started…');
    void cleanup.run().then(() => process.exit(130));
  });
  let failure: Error | undefined;
  let summary: DemoSummary | undefined;
  try {
    summary = await runDemo(options, context);
  } catch (error) {
    failure = error as Error;
  }
  const notStopped = await cleanup.run();
  if (interrupted) return;
  if (failure !== undefined) {
    process.stderr.write(`\ndemo failed: ${redactUris(failure.message)}\n`);
    if (context.ferryLog !== undefined) process.stderr.write(`  Ferry's log is kept: ${context.ferryLog}\n`);
    for (const line of notStopped) process.stderr.write(`  also: ${line}\n`);
    process.exitCode = 1;
    return;
  }
  printSummary(summary!, print);
  if (options.summaryFile !== undefined) await writeFile(options.summaryFile, JSON.stringify(summary, null, 2) + '\n');
  if (notStopped.length > 0) {
    process.stderr.write(`demo: could not stop everything cleanly:\n  ${notStopped.join('\n  ')}\n`);
    process.exitCode = 1;
  }
}

runIfEntryPoint(import.meta.url, 'demo', main);
