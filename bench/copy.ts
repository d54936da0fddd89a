/**
 * Copy benchmark: the same generated data (scripts/generate.ts) copied by Ferry and by the
 * baseline copier (bench/baseline-copier.ts: find + insertMany, one collection at a time), each
 * into a fresh destination test cluster, in one run, side by side. Runs alternate which copier
 * goes first; figures are medians over runs, and the ratio is the median of the per-run ratios.
 *
 * With `--shards n` each destination is a sharded test cluster of n shards (through its mongos):
 * replica set → sharded, Ferry sharding every collection on `{_id: "hashed"}`; each destination
 * shard's CPU and share of the documents are recorded per run (`destinationShards`).
 *
 *   npm run bench:copy -- [--sizeMB 100] [--seed 1] [--runs 1] [--shards 2] [--loadLevel 3] [--ferryEnv NAME=value]
 *                          [--out bench/results] [--cpuProf dir] [--clusterCpuProf dir]
 *
 * Writes `<out>/copy.json`.
 */
import { join } from 'node:path';
import { Command } from 'commander';
import { generateDataset } from '../scripts/generate.js';
import { positiveInteger, positiveNumber, integer, environmentEntry } from '../scripts/lib/cli-numbers.js';
import { runIfEntryPoint } from '../scripts/lib/entry-point.js';
import { spawnCluster } from '../test/cluster/index.js';
import {
  copyWorkload,
  cpuProfileArgs,
  describeMeasurement,
  measureBaselineCopy,
  measureFerryCopy,
  type CopyMeasurement,
} from './lib/copy-runs.js';
import { UsageSampler } from './lib/process-usage.js';
import { DEFAULT_RESULTS_DIR, median, MiB, round, writeResult } from './lib/results.js';

/** Options of `runCopyBenchmark`. */
export interface CopyBenchmarkOptions {
  /** Size of the generated data, MiB. Default 100. */
  sizeMB?: number;
  /** Generator seed. Default 1. */
  seed?: number;
  /** Side-by-side runs (each copier once per run). Default 1. */
  runs?: number;
  /** Ferry's `--loadLevel`. Default: Ferry's own default. */
  loadLevel?: number;
  /** Shards of the destination (0: a replica set). Default 0. */
  shards?: number;
  /** Extra environment of the ferry process (`--ferryEnv NAME=value`). Default none. */
  ferryEnv?: Record<string, string>;
  /** Directory of `copy.json`. Default `bench/results/`. */
  out?: string;
  /** Write CPU profiles of Ferry (every thread) here (`node --cpu-prof`). Default none. */
  cpuProf?: string;
  /** Write CPU profiles of the test clusters here: `<dir>/source`, `<dir>/destination` (one per copy). Default none. */
  clusterCpuProf?: string;
  /** Where progress lines go. Default stdout. */
  print?: (line: string) => void;
}

/** What `copy.json` holds besides the machine and the command. */
export interface CopyBenchmarkResult {
  sizeMB: number;
  /** Shards of the destination (0: a replica set). */
  shards: number;
  seed: number;
  runs: number;
  bytes: number;
  documents: number;
  ferryMBps: number;
  baselineMBps: number;
  /** Median of the per-run ratios of Ferry's throughput to the baseline's. */
  ratio: number;
  ferryDocumentsPerSecond: number;
  baselineDocumentsPerSecond: number;
  ferryCpuSecondsPerGB: number;
  baselineCpuSecondsPerGB: number;
  ferryPeakRssMB: number;
  baselinePeakRssMB: number;
  ferrySeconds: number;
  baselineSeconds: number;
  /** CPU the two test clusters used during each copier's copy (medians): they share the cores. */
  ferryClustersCpuSeconds: number;
  baselineClustersCpuSeconds: number;
  perRun: { ferry: CopyMeasurement; baseline: CopyMeasurement; ratio: number }[];
}

export async function runCopyBenchmark(options: CopyBenchmarkOptions = {}): Promise<CopyBenchmarkResult & { path: string }> {
  const sizeMB = options.sizeMB ?? 100;
  const seed = options.seed ?? 1;
  const runs = options.runs ?? 1;
  const print = options.print ?? ((line: string) => console.log(line));
  const ferryFlags = options.loadLevel === undefined ? [] : ['--loadLevel', String(options.loadLevel)];
  const sampler = new UsageSampler();
  const clusterProfile = (which: string) => (options.clusterCpuProf === undefined ? undefined : join(options.clusterCpuProf, which));
  const source = await spawnCluster({}, cpuProfileArgs(clusterProfile('source')));
  try {
    sampler.watch('source', source.pid);
    const report = await generateDataset({ uri: source.uri, sizeMB, seed });
    const workload = copyWorkload(report);
    print(
      `source: ${(report.totalBytes / MiB).toFixed(1)} MB in ${report.totalDocuments} documents, ${report.collections.length} collections`,
    );
    const perRun: CopyBenchmarkResult['perRun'] = [];
    for (let run = 0; run < runs; run++) {
      const measure = {
        source,
        workload,
        sampler,
        ferryFlags,
        destinationShards: options.shards ?? 0,
        ...(options.ferryEnv === undefined ? {} : { ferryEnv: options.ferryEnv }),
        ...(options.cpuProf === undefined ? {} : { ferryCpuProfileDir: options.cpuProf }),
        ...(options.clusterCpuProf === undefined ? {} : { destinationCpuProfileDir: clusterProfile('destination') }),
      };
      // Alternate the order, so that neither copier always meets a warmer (or busier) machine.
      let ferry: CopyMeasurement;
      let baseline: CopyMeasurement;
      if (run % 2 === 0) {
        ferry = await measureFerryCopy(measure);
        baseline = await measureBaselineCopy(measure);
      } else {
        baseline = await measureBaselineCopy(measure);
        ferry = await measureFerryCopy(measure);
      }
      const ratio = round(ferry.MBps / baseline.MBps);
      perRun.push({ ferry, baseline, ratio });
      print(`run ${run + 1}/${runs}:`);
      print(`  ${describeMeasurement(ferry)}`);
      print(`  ${describeMeasurement(baseline)}`);
      print(`  Ferry / baseline throughput: ${ratio.toFixed(2)}x`);
      for (const shard of ferry.destinationShards ?? []) {
        print(
          `  Ferry: ${shard.shard} CPU ${shard.cpuSeconds} s, ${shard.documents} documents (${(shard.documentShare * 100).toFixed(1)}%)`,
        );
      }
    }
    const of = (copier: 'ferry' | 'baseline', field: keyof CopyMeasurement) => median(perRun.map((r) => r[copier][field] as number));
    const clusters = (copier: 'ferry' | 'baseline') =>
      round(median(perRun.map((r) => r[copier].sourceClusterCpuSeconds + r[copier].destinationClusterCpuSeconds)));
    const result: CopyBenchmarkResult = {
      sizeMB,
      shards: options.shards ?? 0,
      seed,
      runs,
      bytes: report.totalBytes,
      documents: report.totalDocuments,
      ferryMBps: of('ferry', 'MBps'),
      baselineMBps: of('baseline', 'MBps'),
      ratio: median(perRun.map((r) => r.ratio)),
      ferryDocumentsPerSecond: of('ferry', 'documentsPerSecond'),
      baselineDocumentsPerSecond: of('baseline', 'documentsPerSecond'),
      ferryCpuSecondsPerGB: of('ferry', 'cpuSecondsPerGB'),
      baselineCpuSecondsPerGB: of('baseline', 'cpuSecondsPerGB'),
      ferryPeakRssMB: of('ferry', 'peakRssMB'),
      baselinePeakRssMB: of('baseline', 'peakRssMB'),
      ferrySeconds: of('ferry', 'seconds'),
      baselineSeconds: of('baseline', 'seconds'),
      ferryClustersCpuSeconds: clusters('ferry'),
      baselineClustersCpuSeconds: clusters('baseline'),
      perRun,
    };
    const path = writeResult(options.out ?? DEFAULT_RESULTS_DIR, 'copy', result);
    print(
      `median of ${runs}: Ferry ${result.ferryMBps} MB/s, baseline ${result.baselineMBps} MB/s, ratio ${result.ratio}x; ` +
        `Ferry CPU ${result.ferryCpuSecondsPerGB} s/GB, peak RSS ${result.ferryPeakRssMB} MB → ${path}`,
    );
    return { ...result, path };
  } finally {
    sampler.close();
    await source.stop();
  }
}

async function main(argv: string[]): Promise<void> {
  const flags = new Command()
    .name('bench:copy')
    .description('Ferry vs a dump-and-restore baseline copying the same generated data')
    .option('--sizeMB <n>', 'size of the generated data, MiB', positiveNumber, 100)
    .option('--seed <n>', 'generator seed', integer, 1)
    .option('--runs <n>', 'side-by-side runs (medians are reported)', positiveInteger, 1)
    .option('--loadLevel <n>', "Ferry's --loadLevel (default: Ferry's default)", positiveInteger)
    .option('--shards <n>', 'shards of the destination (0: a replica set)', integer, 0)
    .option('--ferryEnv <NAME=value>', 'environment variable for the ferry process (repeatable)', environmentEntry)
    .option('--out <dir>', 'directory of copy.json', DEFAULT_RESULTS_DIR)
    .option('--cpuProf <dir>', "write CPU profiles of Ferry's threads here (node --cpu-prof)")
    .option('--clusterCpuProf <dir>', 'write CPU profiles of the test clusters here (<dir>/source, <dir>/destination)')
    .parse(argv)
    .opts<CopyBenchmarkOptions>();
  await runCopyBenchmark(flags);
}

runIfEntryPoint(import.meta.url, 'bench:copy', main);
