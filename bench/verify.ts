/**
 * Verification benchmark: the embedded verifier at several data sizes (default 50, 200 and 800
 * MiB of the generator's data). For each size, from one freshly filled source:
 *
 * 1. Ferry with `--disableVerification` copies into a fresh destination (the copy's time and
 *    throughput without the verifier);
 * 2. Ferry with verification on copies into another fresh destination (the copy's time and
 *    throughput with it), then verifies: the clock runs from the copy's end until both clusters'
 *    verification phase is `stream hashing` (every range compared once) with no document left to
 *    re-check, and the report must say no difference.
 *
 * Figures: the verification's time, MB/s and documents/s, Ferry's CPU seconds over it (and per GB
 * of source data), the clusters' CPU over it, Ferry's peak RSS over the whole run (copy and
 * verification: VmHWM), and the copy's throughput with verification on over off. Each process's
 * CPU and memory come from /proc (bench/lib/process-usage.ts).
 *
 *   npm run bench:verify -- [--sizes 50,200,800] [--seed 1] [--loadLevel 3] [--noOff] [--out bench/results]
 *
 * Writes `<out>/verify.json`.
 */
import { rm } from 'node:fs/promises';
import { dirname } from 'node:path';
import { performance } from 'node:perf_hooks';
import { Command } from 'commander';
import { generateDataset } from '../scripts/generate.js';
import { integer, positiveInteger, positiveNumberList } from '../scripts/lib/cli-numbers.js';
import { runIfEntryPoint } from '../scripts/lib/entry-point.js';
import { watchProgress } from '../scripts/lib/sync-watch.js';
import { spawnCluster } from '../test/cluster/index.js';
import { copyFinished, startFerry, type Progress } from '../test/e2e/ferry-process.js';
import type { MeasuredCluster } from './lib/copy-runs.js';
import { UsageSampler } from './lib/process-usage.js';
import { DEFAULT_RESULTS_DIR, GiB, MiB, round, writeResult } from './lib/results.js';

export interface VerifyBenchmarkOptions {
  /** Data sizes, MiB, smallest first. Default [50, 200, 800]. */
  sizes?: number[];
  seed?: number;
  loadLevel?: number;
  /** Skip the copy without verification (no on/off ratio). Default false. */
  noOff?: boolean;
  out?: string;
  print?: (line: string) => void;
}

/** One copy's figures. */
export interface CopyFigures {
  seconds: number;
  MBps: number;
  cpuSeconds: number;
  peakRssMB: number;
}

export interface VerificationFigures {
  seconds: number;
  MBps: number;
  documentsPerSecond: number;
  cpuSeconds: number;
  systemCpuSeconds: number;
  cpuSecondsPerGB: number;
  sourceClusterCpuSeconds: number;
  destinationClusterCpuSeconds: number;
  /** Documents compared on each cluster (progress `hashedDocumentCount`). */
  hashedDocuments: { source: number; destination: number };
  differences: number;
}

export interface VerifyPoint {
  sizeMB: number;
  bytes: number;
  documents: number;
  copyWithoutVerification?: CopyFigures;
  copyWithVerification: CopyFigures;
  verification: VerificationFigures;
  /** Ferry's peak RSS over the run with verification (copy and verification), MiB. */
  peakRssMB: number;
  /** Copy throughput with verification on ÷ off. */
  copyThroughputRatio?: number;
}

const verified = (progress: Progress): boolean =>
  progress.verification?.source?.phase === 'stream hashing' && progress.verification?.destination?.phase === 'stream hashing';

interface RunOptions {
  source: MeasuredCluster;
  sampler: UsageSampler;
  bytes: number;
  documents: number;
  flags: string[];
  verify: boolean;
}

async function run(options: RunOptions): Promise<{ copy: CopyFigures; verification?: VerificationFigures; peakRssMB: number }> {
  const { source, sampler, bytes, documents } = options;
  const destination = await spawnCluster();
  sampler.watch('destination', destination.pid);
  const ferry = await startFerry([
    '--cluster0',
    source.uri,
    '--cluster1',
    destination.uri,
    '--id',
    'bench-verify',
    ...options.flags,
    ...(options.verify ? [] : ['--disableVerification']),
  ]);
  let measured = false;
  try {
    sampler.watch('ferry', ferry.child.pid!);
    sampler.restart('source');
    const started = performance.now();
    const reply = await ferry.post('start', { source: 'cluster0', destination: 'cluster1' });
    if (reply.status !== 200) throw new Error(`ferry refused start: ${JSON.stringify(reply.body)}`);
    await watchProgress(ferry, copyFinished, { what: 'the copy to complete', timeoutMs: 60 * 60_000, intervalMs: 100 });
    const copySeconds = (performance.now() - started) / 1000;
    const copyUsage = sampler.usage('ferry');
    const copy: CopyFigures = {
      seconds: round(copySeconds, 3),
      MBps: round(bytes / MiB / copySeconds),
      cpuSeconds: round(copyUsage.cpuSeconds, 3),
      peakRssMB: round(copyUsage.peakRssMB, 1),
    };
    if (!options.verify) {
      measured = true;
      return { copy, peakRssMB: copy.peakRssMB };
    }
    for (const name of ['ferry', 'source', 'destination']) sampler.restart(name);
    const verifyStarted = performance.now();
    const done = await watchProgress(ferry, verified, { what: 'the initial verification', timeoutMs: 60 * 60_000, intervalMs: 100 });
    const report = await ferry.waitForVerification((r) => r.pendingRechecks === 0, 10 * 60_000);
    const seconds = (performance.now() - verifyStarted) / 1000;
    const usage = sampler.usage('ferry');
    const verification: VerificationFigures = {
      seconds: round(seconds, 3),
      MBps: round(bytes / MiB / seconds),
      documentsPerSecond: Math.round(documents / seconds),
      cpuSeconds: round(usage.cpuSeconds, 3),
      systemCpuSeconds: round(usage.systemCpuSeconds, 3),
      cpuSecondsPerGB: round(usage.cpuSeconds / (bytes / GiB)),
      sourceClusterCpuSeconds: round(sampler.usage('source').cpuSeconds),
      destinationClusterCpuSeconds: round(sampler.usage('destination').cpuSeconds),
      hashedDocuments: {
        source: done.verification.source.hashedDocumentCount,
        destination: done.verification.destination.hashedDocumentCount,
      },
      differences: report.mismatchCount,
    };
    if (report.mismatchCount !== 0)
      throw new Error(`the verifier reported differences on a faithful copy: ${JSON.stringify(report.mismatches)}`);
    measured = true;
    return { copy, verification, peakRssMB: round(usage.peakRssMB, 1) };
  } finally {
    sampler.forget('ferry');
    sampler.forget('destination');
    await ferry.stop();
    await destination.stop();
    if (measured) await rm(dirname(ferry.logFile), { recursive: true, force: true });
  }
}

export async function runVerifyBenchmark(options: VerifyBenchmarkOptions = {}): Promise<{ points: VerifyPoint[]; path: string }> {
  const sizes = [...(options.sizes ?? [50, 200, 800])].sort((a, b) => a - b);
  const print = options.print ?? ((line: string) => console.log(line));
  const flags = options.loadLevel === undefined ? [] : ['--loadLevel', String(options.loadLevel)];
  const sampler = new UsageSampler();
  const points: VerifyPoint[] = [];
  try {
    for (const sizeMB of sizes) {
      const source = await spawnCluster();
      try {
        sampler.watch('source', source.pid);
        const generated = await generateDataset({ uri: source.uri, sizeMB, seed: options.seed ?? 1 });
        const common = { source, sampler, bytes: generated.totalBytes, documents: generated.totalDocuments, flags };
        print(`${sizeMB} MB: ${(generated.totalBytes / MiB).toFixed(1)} MB in ${generated.totalDocuments} documents`);
        const off = options.noOff === true ? undefined : await run({ ...common, verify: false });
        if (off !== undefined)
          print(`  copy, verification off: ${off.copy.seconds} s, ${off.copy.MBps} MB/s, peak RSS ${off.copy.peakRssMB} MB`);
        const on = await run({ ...common, verify: true });
        const verification = on.verification!;
        const point: VerifyPoint = {
          sizeMB,
          bytes: generated.totalBytes,
          documents: generated.totalDocuments,
          copyWithVerification: on.copy,
          verification,
          peakRssMB: on.peakRssMB,
        };
        if (off !== undefined) {
          point.copyWithoutVerification = off.copy;
          point.copyThroughputRatio = round(on.copy.MBps / off.copy.MBps);
        }
        print(
          `  copy, verification on:  ${on.copy.seconds} s, ${on.copy.MBps} MB/s` +
            (off === undefined ? '' : ` (×${point.copyThroughputRatio} of off)`),
        );
        print(
          `  verification: ${verification.seconds} s, ${verification.MBps} MB/s, ${verification.documentsPerSecond} docs/s, ` +
            `Ferry CPU ${verification.cpuSeconds} s (${verification.cpuSecondsPerGB} s/GB), clusters CPU ` +
            `${verification.sourceClusterCpuSeconds} + ${verification.destinationClusterCpuSeconds} s; peak RSS ${point.peakRssMB} MB`,
        );
        points.push(point);
      } finally {
        sampler.forget('source');
        await source.stop();
      }
    }
  } finally {
    sampler.close();
  }
  const rss = points.map((point) => point.peakRssMB);
  const path = writeResult(options.out ?? DEFAULT_RESULTS_DIR, 'verify', { sizes, points, peakRssMB: rss });
  print(`peak RSS ${rss.join(' → ')} MB → ${path}`);
  return { points, path };
}

async function main(argv: string[]): Promise<void> {
  const flags = new Command()
    .name('bench:verify')
    .description("The embedded verifier's time, CPU and memory at several sizes, and its cost to the copy")
    .option('--sizes <list>', 'data sizes, MiB, comma-separated', positiveNumberList, [50, 200, 800])
    .option('--seed <n>', 'generator seed', integer, 1)
    .option('--loadLevel <n>', "Ferry's --loadLevel (default: Ferry's default)", positiveInteger)
    .option('--noOff', 'skip the copy without verification', false)
    .option('--out <dir>', 'directory of verify.json', DEFAULT_RESULTS_DIR)
    .parse(argv)
    .opts<VerifyBenchmarkOptions>();
  await runVerifyBenchmark(flags);
}

runIfEntryPoint(import.meta.url, 'bench:verify', main);
