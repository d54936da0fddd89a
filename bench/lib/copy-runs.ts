/**
 * One measured initial copy, by Ferry or by the baseline copier, from a source test cluster into
 * a fresh destination test cluster (each copier and each cluster in its own process).
 *
 * - Ferry: the real CLI; the clock runs from `POST /api/v1/start` until progress says the copy
 *   is complete (indexes built), polled every 100 ms.
 * - Baseline: `bench/baseline-copier.ts` driven over stdin; the clock runs from its go line to its
 *   report line.
 *
 * CPU seconds are each process's own (/proc, worker threads included) over that window; peak RSS
 * is the copier's VmHWM. The clusters' CPU is recorded separately. Afterwards the destination's
 * document counts are checked against the source's, so a copy that lost documents fails loudly
 * instead of looking fast.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { rm } from 'node:fs/promises';
import { dirname } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { performance } from 'node:perf_hooks';
import { MongoClient } from 'mongodb';
import { spawnCluster, type ClusterHandle } from '../../test/cluster/index.js';
import { copyFinished, startFerry } from '../../test/e2e/ferry-process.js';
import { watchProgress } from '../../scripts/lib/sync-watch.js';
import type { GenerateReport } from '../../scripts/generate.js';
import type { UsageSampler } from './process-usage.js';
import { GiB, MiB, round } from './results.js';
import { redactUris } from '../../src/domain/credentials.js';

/** A cluster process the harness can measure. */
export type MeasuredCluster = ClusterHandle & { pid: number };

/** What a copier is asked to copy: the generator's report of the source. */
export interface CopyWorkload {
  /** Sum of the source documents' BSON sizes. */
  bytes: number;
  documents: number;
  /** Documents per namespace (`db.coll`), to check the copy against. */
  documentsByNamespace: Record<string, number>;
}

/** One copier's figures for one copy. */
export interface CopyMeasurement {
  copier: 'ferry' | 'baseline';
  seconds: number;
  MBps: number;
  documentsPerSecond: number;
  cpuSeconds: number;
  /** The part of `cpuSeconds` spent in the kernel. */
  systemCpuSeconds: number;
  cpuSecondsPerGB: number;
  peakRssMB: number;
  sourceClusterCpuSeconds: number;
  destinationClusterCpuSeconds: number;
}

/** The generator's report as what a copier must copy. */
export function copyWorkload(report: GenerateReport): CopyWorkload {
  return {
    bytes: report.totalBytes,
    documents: report.totalDocuments,
    documentsByNamespace: Object.fromEntries(report.collections.map((c) => [c.ns, c.documents])),
  };
}

export function describeMeasurement(m: CopyMeasurement): string {
  return (
    `${m.copier.padEnd(8)} ${m.seconds.toFixed(1).padStart(7)} s ${m.MBps.toFixed(1).padStart(7)} MB/s ` +
    `${String(m.documentsPerSecond).padStart(8)} docs/s  CPU ${m.cpuSeconds.toFixed(1)} ` +
    `s (${m.cpuSecondsPerGB.toFixed(1)} s/GB, ${m.systemCpuSeconds.toFixed(1)} s kernel)  ` +
    `peak RSS ${m.peakRssMB.toFixed(0)} MB  clusters CPU ${(m.sourceClusterCpuSeconds + m.destinationClusterCpuSeconds).toFixed(1)} s`
  );
}

/** Options of one copy run. */
export interface CopyRunOptions {
  source: MeasuredCluster;
  workload: CopyWorkload;
  /** Samples the processes; the source must be watched as `source`. */
  sampler: UsageSampler;
  /** Extra flags for the ferry process (e.g. `--loadLevel 4`). Default none. */
  ferryFlags?: string[];
  /** Give up after this long. Default 30 minutes. */
  timeoutMs?: number;
  /** Write CPU profiles of the ferry process (every thread) into this directory. Default none. */
  ferryCpuProfileDir?: string;
  /** Write a CPU profile of each fresh destination cluster into this directory. Default none. */
  destinationCpuProfileDir?: string;
  /** Extra environment of the ferry process (tuning variables such as `FERRY_COPY_WRITE_PATH`). Default none. */
  ferryEnv?: Record<string, string>;
  /** Where Ferry's clock stops: the copy complete (indexes built), or `canCommit` as an operator waits for it. Default `copy`. */
  until?: 'copy' | 'canCommit';
}

const BASELINE_MAIN = fileURLToPath(new URL('../baseline-copier.js', import.meta.url));

/** Fails if the destination does not hold as many documents per namespace as the source. */
async function checkCounts(destinationUri: string, workload: CopyWorkload, copier: string): Promise<void> {
  const client = await MongoClient.connect(destinationUri);
  try {
    for (const [ns, expected] of Object.entries(workload.documentsByNamespace)) {
      const dot = ns.indexOf('.');
      const actual = await client
        .db(ns.slice(0, dot))
        .collection(ns.slice(dot + 1))
        .countDocuments();
      if (actual !== expected) throw new Error(`${copier} copied ${actual} documents of ${expected} in ${ns}`);
    }
  } finally {
    await client.close();
  }
}

function measurement(copier: CopyMeasurement['copier'], seconds: number, workload: CopyWorkload, sampler: UsageSampler): CopyMeasurement {
  const own = sampler.usage(copier);
  return {
    copier,
    seconds: round(seconds, 3),
    MBps: round(workload.bytes / MiB / seconds),
    documentsPerSecond: Math.round(workload.documents / seconds),
    cpuSeconds: round(own.cpuSeconds, 3),
    systemCpuSeconds: round(own.systemCpuSeconds, 3),
    cpuSecondsPerGB: round(own.cpuSeconds / (workload.bytes / GiB)),
    peakRssMB: round(own.peakRssMB, 1),
    sourceClusterCpuSeconds: round(sampler.usage('source').cpuSeconds),
    destinationClusterCpuSeconds: round(sampler.usage('destination').cpuSeconds),
  };
}

/** Node flags that make a process write its CPU profile into `dir` (none without a dir). */
export function cpuProfileArgs(dir: string | undefined): string[] {
  return dir === undefined ? [] : ['--cpu-prof', `--cpu-prof-dir=${dir}`];
}

/** Starts a fresh destination cluster, watched as `destination`, and runs `copy` against it. */
async function withFreshDestination<T>(options: CopyRunOptions, copy: (destination: MeasuredCluster) => Promise<T>): Promise<T> {
  const { sampler } = options;
  const destination = await spawnCluster({}, cpuProfileArgs(options.destinationCpuProfileDir));
  try {
    sampler.watch('destination', destination.pid);
    return await copy(destination);
  } finally {
    sampler.forget('destination');
    await destination.stop();
  }
}

/**
 * Times `copy` (resolving once the copier is done) and takes the copier's and the clusters' usage
 * over it; then checks the destination's counts.
 */
async function measureCopy(
  copier: CopyMeasurement['copier'],
  pid: number,
  options: CopyRunOptions,
  destinationUri: string,
  copy: () => Promise<void>,
): Promise<CopyMeasurement> {
  const { sampler, workload } = options;
  sampler.watch(copier, pid);
  sampler.restart('source');
  sampler.restart('destination');
  const started = performance.now();
  await copy();
  const result = measurement(copier, (performance.now() - started) / 1000, workload, sampler);
  await checkCounts(destinationUri, workload, copier);
  return result;
}

/** Ferry copies the source into a fresh destination. */
export function measureFerryCopy(options: CopyRunOptions): Promise<CopyMeasurement> {
  const { source, sampler } = options;
  return withFreshDestination(options, async (destination) => {
    const nodeArgs = cpuProfileArgs(options.ferryCpuProfileDir);
    const flags = ['--cluster0', source.uri, '--cluster1', destination.uri, '--id', 'bench-copy', ...(options.ferryFlags ?? [])];
    const ferry = await startFerry(flags, options.ferryEnv ?? {}, undefined, nodeArgs);
    let measured = false;
    try {
      const result = await measureCopy('ferry', ferry.child.pid!, options, destination.uri, async () => {
        const reply = await ferry.post('start', { source: 'cluster0', destination: 'cluster1' });
        if (reply.status !== 200) throw new Error(`ferry refused start: ${JSON.stringify(reply.body)}`);
        const canCommit = options.until === 'canCommit';
        await watchProgress(ferry, canCommit ? (progress) => progress.canCommit === true : copyFinished, {
          what: canCommit ? 'canCommit' : 'the copy to complete',
          timeoutMs: options.timeoutMs ?? 30 * 60_000,
          intervalMs: 100,
        });
      });
      measured = true;
      return result;
    } finally {
      sampler.forget('ferry');
      await ferry.stop();
      // Its log is only worth keeping when something went wrong.
      if (measured) await rm(dirname(ferry.logFile), { recursive: true, force: true });
    }
  });
}

/** The baseline copier copies the source into a fresh destination. */
export function measureBaselineCopy(options: CopyRunOptions): Promise<CopyMeasurement> {
  const { source, sampler } = options;
  return withFreshDestination(options, async (destination) => {
    const child = spawn(process.execPath, [BASELINE_MAIN, '--from', source.uri, '--to', destination.uri, '--harness'], {
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let stderr = '';
    child.stderr!.on('data', (chunk) => (stderr += chunk));
    const exited = once(child, 'exit');
    const lines = createInterface({ input: child.stdout! })[Symbol.asyncIterator]();
    const nextLine = async (): Promise<string> => {
      const next = await Promise.race([lines.next(), exited.then(() => undefined)]);
      if (next === undefined || next.done === true) throw new Error(`baseline copier exited: ${redactUris(stderr.trim())}`);
      return next.value;
    };
    try {
      if ((await nextLine()) !== 'ready') throw new Error('baseline copier did not say ready');
      return await measureCopy('baseline', child.pid!, options, destination.uri, async () => {
        child.stdin!.write('go\n');
        JSON.parse(await nextLine()); // its report: the copy is done
      });
    } finally {
      sampler.forget('baseline');
      child.stdin!.end();
      if (child.exitCode === null && child.signalCode === null) {
        const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
        await exited;
        clearTimeout(timer);
      }
    }
  });
}
