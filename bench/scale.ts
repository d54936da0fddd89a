/**
 * Scale benchmark: Ferry's initial copy at several data sizes (default 50, 200 and 800 MiB of the
 * generator's data), each from a freshly filled source into a fresh destination, to show how
 * time, CPU and memory grow with the data. Time and CPU should grow in proportion to the data
 * (constant MB/s and CPU per GB); Ferry's peak memory should not grow at all (it is bounded by its
 * settings, not by the data).
 *
 *   npm run bench:scale -- [--sizes 50,200,800] [--seed 1] [--loadLevel 3] [--ferryEnv NAME=value] [--baseline]
 *                           [--out bench/results]
 *
 * `--baseline` also copies each size with the baseline copier. Writes `<out>/scale.json`.
 */
import { Command } from 'commander';
import { generateDataset } from '../scripts/generate.js';
import { integer, positiveInteger, positiveNumberList, environmentEntry } from '../scripts/lib/cli-numbers.js';
import { runIfEntryPoint } from '../scripts/lib/entry-point.js';
import { spawnCluster } from '../test/cluster/index.js';
import { copyWorkload, describeMeasurement, measureBaselineCopy, measureFerryCopy, type CopyMeasurement } from './lib/copy-runs.js';
import { UsageSampler } from './lib/process-usage.js';
import { DEFAULT_RESULTS_DIR, MiB, round, writeResult } from './lib/results.js';

/** Options of `runScaleBenchmark`. */
export interface ScaleBenchmarkOptions {
  /** Data sizes to copy, MiB, smallest first. Default [50, 200, 800]. */
  sizes?: number[];
  /** Generator seed. Default 1. */
  seed?: number;
  /** Ferry's `--loadLevel`. Default: Ferry's default. */
  loadLevel?: number;
  /** Extra environment of the ferry process (`--ferryEnv NAME=value`). Default none. */
  ferryEnv?: Record<string, string>;
  /** Also measure the baseline copier at each size. Default false. */
  baseline?: boolean;
  /** Directory of `scale.json`. Default `bench/results/`. */
  out?: string;
  print?: (line: string) => void;
}

/** One size's figures. */
export interface ScalePoint {
  sizeMB: number;
  bytes: number;
  documents: number;
  ferry: CopyMeasurement;
  baseline?: CopyMeasurement;
  /** Peak RSS of each test cluster after the copy, MiB (they hold the data in memory). */
  sourceClusterPeakRssMB: number;
}

/** How a figure grows from the smallest size to the largest, against the data's growth. */
export interface Growth {
  /** Largest size's bytes ÷ smallest's. */
  data: number;
  time: number;
  cpu: number;
  peakRss: number;
}

export interface ScaleBenchmarkResult {
  sizes: number[];
  points: ScalePoint[];
  /** Ferry's growth from the smallest size to the largest. */
  ferryGrowth: Growth;
  /** Ferry's peak RSS at each size, MiB. */
  ferryPeakRssMB: number[];
  /** Ferry's peak RSS stays within 25% of the smallest size's while the data grows. */
  ferryMemoryFlat: boolean;
}

/** Peak RSS may wobble (GC timing, batch sizes); more than this over the smallest size is growth. */
const FLAT_TOLERANCE = 1.25;

export async function runScaleBenchmark(options: ScaleBenchmarkOptions = {}): Promise<ScaleBenchmarkResult & { path: string }> {
  const sizes = [...(options.sizes ?? [50, 200, 800])].sort((a, b) => a - b);
  const print = options.print ?? ((line: string) => console.log(line));
  const ferryFlags = options.loadLevel === undefined ? [] : ['--loadLevel', String(options.loadLevel)];
  const sampler = new UsageSampler();
  const points: ScalePoint[] = [];
  try {
    for (const sizeMB of sizes) {
      const source = await spawnCluster();
      try {
        sampler.watch('source', source.pid);
        const report = await generateDataset({ uri: source.uri, sizeMB, seed: options.seed ?? 1 });
        const workload = copyWorkload(report);
        print(`${sizeMB} MB: ${(report.totalBytes / MiB).toFixed(1)} MB in ${report.totalDocuments} documents`);
        const run = { source, workload, sampler, ferryFlags, ...(options.ferryEnv === undefined ? {} : { ferryEnv: options.ferryEnv }) };
        const ferry = await measureFerryCopy(run);
        print(`  ${describeMeasurement(ferry)}`);
        const point: ScalePoint = { sizeMB, bytes: report.totalBytes, documents: report.totalDocuments, ferry, sourceClusterPeakRssMB: 0 };
        if (options.baseline === true) {
          point.baseline = await measureBaselineCopy(run);
          print(`  ${describeMeasurement(point.baseline)}`);
        }
        point.sourceClusterPeakRssMB = round(sampler.usage('source').peakRssMB, 1);
        points.push(point);
      } finally {
        sampler.forget('source');
        await source.stop();
      }
    }
  } finally {
    sampler.close();
  }
  const first = points[0]!;
  const last = points.at(-1)!;
  const ratio = (a: number, b: number) => round(b / a);
  const ferryGrowth: Growth = {
    data: ratio(first.bytes, last.bytes),
    time: ratio(first.ferry.seconds, last.ferry.seconds),
    cpu: ratio(first.ferry.cpuSeconds, last.ferry.cpuSeconds),
    peakRss: ratio(first.ferry.peakRssMB, last.ferry.peakRssMB),
  };
  const ferryPeakRssMB = points.map((p) => p.ferry.peakRssMB);
  const result: ScaleBenchmarkResult = {
    sizes,
    points,
    ferryGrowth,
    ferryPeakRssMB,
    ferryMemoryFlat: Math.max(...ferryPeakRssMB) <= first.ferry.peakRssMB * FLAT_TOLERANCE,
  };
  const path = writeResult(options.out ?? DEFAULT_RESULTS_DIR, 'scale', result);
  print(
    `from ${first.sizeMB} to ${last.sizeMB} MB (data ×${ferryGrowth.data}): Ferry time ×${ferryGrowth.time}, CPU ×${ferryGrowth.cpu}, ` +
      `peak RSS ×${ferryGrowth.peakRss} (${ferryPeakRssMB.join(' → ')} MB, ${result.ferryMemoryFlat ? 'flat' : 'GROWING'}) → ${path}`,
  );
  return { ...result, path };
}

async function main(argv: string[]): Promise<void> {
  const flags = new Command()
    .name('bench:scale')
    .description("How Ferry's copy time, CPU and memory grow with the data")
    .option('--sizes <list>', 'data sizes, MiB, comma-separated', positiveNumberList, [50, 200, 800])
    .option('--seed <n>', 'generator seed', integer, 1)
    .option('--loadLevel <n>', "Ferry's --loadLevel (default: Ferry's default)", positiveInteger)
    .option('--ferryEnv <NAME=value>', 'environment variable for the ferry process (repeatable)', environmentEntry)
    .option('--baseline', 'also measure the baseline copier at each size', false)
    .option('--out <dir>', 'directory of scale.json', DEFAULT_RESULTS_DIR)
    .parse(argv)
    .opts<ScaleBenchmarkOptions>();
  await runScaleBenchmark(flags);
}

runIfEntryPoint(import.meta.url, 'bench:scale', main);
