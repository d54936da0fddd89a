/**
 * Scale benchmark: Ferry's initial copy at several data sizes (default 50, 200 and 800 MiB of the
 * generator's data), each from a freshly filled source into a fresh destination, to show how
 * time, CPU and memory grow with the data. Time and CPU should grow in proportion to the data
 * (constant MB/s and CPU per GB); Ferry's peak memory should not grow at all (it is bounded by its
 * settings, not by the data).
 *
 *   npm run bench:scale -- [--sizes 50,200,800] [--runs 1] [--seed 1] [--loadLevel 3] [--ferryEnv NAME=value] [--baseline]
 *                           [--mongoTools dir] [--cpuProf dir] [--out bench/results]
 *
 * `--baseline` also copies each size with the baseline copier. `--mongoTools <dir>` (or
 * `MONGO_TOOLS_DIR`) also copies each size with `mongodump | mongorestore` in bench:copy's three
 * configurations; Ferry is then timed from `start` to `canCommit`, as bench:copy does, and every
 * destination is compared with the source.
 *
 * `--runs <n>` measures every size, namespace point and sweep cell n times (fresh destinations, the
 * copiers of a size taking turns to go first) and reports each figure's median, each run kept in
 * `perRun`: on a noisy machine one run per point says little.
 *
 * The namespaces axis (`--namespaces 1000,10000`, `none` to skip; `--sizes none` skips the sizes)
 * copies sources of that many one-document collections, each with `--indexesPerCollection`
 * secondary indexes (default 1: 10,000 collections carry 10,000 secondary indexes), and times
 * Ferry from `start` to `canCommit`, as an operator waits for it. Planning, destination
 * preparation, index builds and progress must grow linearly with the namespaces: the growth of
 * time against the growth of namespaces says whether they do. Writes `<out>/scale.json`, and
 * after a sweep `<out>/sweep.svg`, its chart (`node dist/bench/sweep-chart.js` redraws it).
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Command } from 'commander';
import { generateDataset } from '../scripts/generate.js';
import { InvalidArgumentError } from 'commander';
import { integer, positiveInteger, positiveNumberList, environmentEntry } from '../scripts/lib/cli-numbers.js';
import { runIfEntryPoint } from '../scripts/lib/entry-point.js';
import { spawnCluster } from '../test/cluster/index.js';
import {
  copyWorkload,
  describeMeasurement,
  measureBaselineCopy,
  measureFerryCopy,
  medianMeasurement,
  type CopyMeasurement,
  type CopyRunOptions,
} from './lib/copy-runs.js';
import { fillNamespaces } from './lib/namespaces.js';
import { measurePeerCopy, missingTools, PEER_CONFIGURATIONS, ratioToBest, type PeerMeasurement } from './lib/peer-copy.js';
import { UsageSampler } from './lib/process-usage.js';
import { DEFAULT_RESULTS_DIR, machineInfo, median, MiB, round, writeResult } from './lib/results.js';
import { sweepChartSvg, sweepSubtitle } from './lib/sweep-chart.js';

/** Options of `runScaleBenchmark`. */
export interface ScaleBenchmarkOptions {
  /** Data sizes to copy, MiB, smallest first. Default [50, 200, 800]; empty skips the sizes. */
  sizes?: number[];
  /** Numbers of one-document collections to sync until `canCommit`. Default [1000, 10000]; empty skips them. */
  namespaces?: number[];
  /** Secondary indexes on each collection of the namespaces axis. Default 1. */
  indexesPerCollection?: number;
  /** Copies of each size, namespace point and sweep cell; each figure reported is their median. Default 1. */
  runs?: number;
  /** Generator seed. Default 1. */
  seed?: number;
  /** Ferry's `--loadLevel`. Default: Ferry's default. */
  loadLevel?: number;
  /** Extra environment of the ferry process (`--ferryEnv NAME=value`). Default none. */
  ferryEnv?: Record<string, string>;
  /** `--copyWorkers` values of the concurrency sweep. Default none (no sweep). */
  sweepCopyWorkers?: number[];
  /** `--batchBytes` values of the sweep, MiB. Default none (no sweep). */
  sweepBatchBytesMB?: number[];
  /** Size of the sweep's generated source, MiB. Default 200. */
  sweepSizeMB?: number;
  /** Write CPU profiles of Ferry's threads (node --cpu-prof) into this directory. Default none. */
  cpuProf?: string;
  /** Also measure the baseline copier at each size. Default false. */
  baseline?: boolean;
  /**
   * Directory holding `mongodump` and `mongorestore`: each size is also copied by them
   * (PEER_CONFIGURATIONS). Default `MONGO_TOOLS_DIR`, else none.
   */
  mongoTools?: string;
  /** Directory of `scale.json`. Default `bench/results/`. */
  out?: string;
  print?: (line: string) => void;
}

/** One size's figures. */
export interface ScalePoint {
  sizeMB: number;
  bytes: number;
  documents: number;
  /** Medians of the runs (`medianMeasurement`), as are `baseline` and each of `peers`. */
  ferry: CopyMeasurement;
  baseline?: CopyMeasurement;
  /** With `mongoTools`: each configuration of `mongodump | mongorestore`, verified equal. */
  peers?: PeerMeasurement[];
  /** With `mongoTools`: Ferry's throughput over the fastest peer's (the median of the runs' ratios). */
  ratioToBestPeer?: number;
  /** Each run's measurements. */
  perRun: SizeRun[];
  /** Peak RSS of each test cluster after the copy, MiB (they hold the data in memory). */
  sourceClusterPeakRssMB: number;
}

/** One run at one size: each copier once, into its own fresh destination. */
export interface SizeRun {
  ferry: CopyMeasurement;
  baseline?: CopyMeasurement;
  peers?: PeerMeasurement[];
}

/** How a figure grows from the smallest size to the largest, against the data's growth. */
export interface Growth {
  /** Largest size's bytes ÷ smallest's. */
  data: number;
  time: number;
  cpu: number;
  peakRss: number;
}

/** One point of the namespaces axis: Ferry from `start` to `canCommit`. */
export interface NamespacePoint {
  collections: number;
  indexes: number;
  /** Medians of the runs. */
  ferry: CopyMeasurement;
  perRun: CopyMeasurement[];
}

/** How the namespaces axis grows from its first point to its last. */
export interface NamespaceGrowth {
  /** Largest number of collections ÷ smallest. */
  namespaces: number;
  time: number;
  cpu: number;
  /** Time grows at most 1.2× as fast as the namespaces (×10 collections in ≤ ×12 time). */
  linear: boolean;
}

export interface ScaleBenchmarkResult {
  sizes: number[];
  points: ScalePoint[];
  /** Ferry's growth from the smallest size to the largest (absent without sizes). */
  ferryGrowth?: Growth;
  /** Ferry's peak RSS at each size, MiB. */
  ferryPeakRssMB: number[];
  /** Ferry's peak RSS stays within 25% of the smallest size's while the data grows. */
  ferryMemoryFlat?: boolean;
  namespacePoints: NamespacePoint[];
  namespaceGrowth?: NamespaceGrowth;
  /** The concurrency sweep (absent without one). */
  sweep?: { sizeMB: number; cells: SweepCell[]; fastest: SweepCell; cheapest: SweepCell };
}

/** One pair of settings of the concurrency sweep: the medians of its runs. */
export interface SweepCell {
  copyWorkers: number;
  batchBytesMB: number;
  /** Copies made with these settings (`--runs`); the figures are their medians. */
  runs: number;
  MBps: number;
  seconds: number;
  cpuSecondsPerGB: number;
  peakRssMB: number;
  destinationCpuSecondsPerGB: number;
}

const ratio = (a: number, b: number) => round(b / a);

/** Peak RSS may wobble (GC timing, batch sizes); more than this over the smallest size is growth. */
const FLAT_TOLERANCE = 1.25;

export async function runScaleBenchmark(options: ScaleBenchmarkOptions = {}): Promise<ScaleBenchmarkResult & { path: string }> {
  const sizes = [...(options.sizes ?? [50, 200, 800])].sort((a, b) => a - b);
  const namespaces = [...(options.namespaces ?? [1000, 10000])].sort((a, b) => a - b);
  const print = options.print ?? ((line: string) => console.log(line));
  const ferryFlags = options.loadLevel === undefined ? [] : ['--loadLevel', String(options.loadLevel)];
  const mongoTools = options.mongoTools ?? process.env.MONGO_TOOLS_DIR;
  const missing = mongoTools === undefined ? undefined : missingTools(mongoTools);
  if (missing !== undefined) throw new Error(`--mongoTools: ${missing}`);
  const sampler = new UsageSampler();
  const points: ScalePoint[] = [];
  const namespacePoints: NamespacePoint[] = [];
  let sweep: ScaleBenchmarkResult['sweep'];
  try {
    for (const sizeMB of sizes) {
      const source = await spawnCluster();
      try {
        sampler.watch('source', source.pid);
        const report = await generateDataset({ uri: source.uri, sizeMB, seed: options.seed ?? 1 });
        const workload = copyWorkload(report);
        print(`${sizeMB} MB: ${(report.totalBytes / MiB).toFixed(1)} MB in ${report.totalDocuments} documents`);
        const run = {
          source,
          workload,
          sampler,
          ferryFlags,
          ...(options.ferryEnv === undefined ? {} : { ferryEnv: options.ferryEnv }),
          // Against the tools, Ferry's clock runs to canCommit and every destination is compared, as in bench:copy.
          ...(mongoTools === undefined ? {} : { until: 'canCommit' as const, verify: true }),
        };
        const measured = await measureSize(run, options, mongoTools, print);
        points.push({
          sizeMB,
          bytes: report.totalBytes,
          documents: report.totalDocuments,
          ...measured,
          sourceClusterPeakRssMB: round(sampler.usage('source').peakRssMB, 1),
        });
      } finally {
        sampler.forget('source');
        await source.stop();
      }
    }
    for (const collections of namespaces) namespacePoints.push(await measureNamespaces(collections, options, sampler, ferryFlags, print));
    sweep = await measureSweep(options, sampler, ferryFlags, print);
  } finally {
    sampler.close();
  }
  const result: ScaleBenchmarkResult = { sizes, points, ferryPeakRssMB: points.map((p) => p.ferry.peakRssMB), namespacePoints };
  if (sweep !== undefined) result.sweep = sweep;
  if (points.length > 0) {
    const first = points[0]!;
    const last = points.at(-1)!;
    result.ferryGrowth = {
      data: ratio(first.bytes, last.bytes),
      time: ratio(first.ferry.seconds, last.ferry.seconds),
      cpu: ratio(first.ferry.cpuSeconds, last.ferry.cpuSeconds),
      peakRss: ratio(first.ferry.peakRssMB, last.ferry.peakRssMB),
    };
    result.ferryMemoryFlat = Math.max(...result.ferryPeakRssMB) <= first.ferry.peakRssMB * FLAT_TOLERANCE;
    print(
      `from ${first.sizeMB} to ${last.sizeMB} MB (data ×${result.ferryGrowth.data}): Ferry time ×${result.ferryGrowth.time}, ` +
        `CPU ×${result.ferryGrowth.cpu}, peak RSS ×${result.ferryGrowth.peakRss} (${result.ferryPeakRssMB.join(' → ')} MB, ` +
        `${result.ferryMemoryFlat ? 'flat' : 'GROWING'})`,
    );
  }
  if (namespacePoints.length > 1) {
    const first = namespacePoints[0]!;
    const last = namespacePoints.at(-1)!;
    const growth = ratio(first.collections, last.collections);
    const time = ratio(first.ferry.seconds, last.ferry.seconds);
    result.namespaceGrowth = {
      namespaces: growth,
      time,
      cpu: ratio(first.ferry.cpuSeconds, last.ferry.cpuSeconds),
      linear: time <= growth * 1.2,
    };
    print(
      `from ${first.collections} to ${last.collections} collections (×${growth}): time to canCommit ×${time}, ` +
        `CPU ×${result.namespaceGrowth.cpu} (${result.namespaceGrowth.linear ? 'linear' : 'FASTER THAN LINEAR'})`,
    );
  }
  const path = writeResult(options.out ?? DEFAULT_RESULTS_DIR, 'scale', result);
  print(`→ ${path}`);
  if (result.sweep !== undefined) {
    const chart = join(options.out ?? DEFAULT_RESULTS_DIR, 'sweep.svg');
    const command = ['node', ...process.argv.slice(1)].join(' ');
    writeFileSync(chart, sweepChartSvg(result.sweep.cells, sweepSubtitle(result.sweep, machineInfo(), command)));
    print(`→ ${chart}`);
  }
  return { ...result, path };
}

/**
 * One size's runs: Ferry, the baseline and each peer configuration into fresh destinations, each run
 * starting with the next copier (as bench:copy does), so that none always meets a warmer machine.
 */
async function measureSize(
  run: CopyRunOptions,
  options: ScaleBenchmarkOptions,
  mongoTools: string | undefined,
  print: (line: string) => void,
): Promise<Pick<ScalePoint, 'ferry' | 'baseline' | 'peers' | 'ratioToBestPeer' | 'perRun'>> {
  const runs = options.runs ?? 1;
  const perRun: SizeRun[] = [];
  for (let i = 0; i < runs; i++) {
    const copiers: (() => Promise<CopyMeasurement>)[] = [
      () => measureFerryCopy({ ...run, ...profileOf(options) }),
      ...(options.baseline === true ? [() => measureBaselineCopy(run)] : []),
      ...(mongoTools === undefined
        ? []
        : PEER_CONFIGURATIONS.map((configuration) => () => measurePeerCopy(run, mongoTools, configuration))),
    ];
    if (runs > 1) print(`  run ${i + 1}/${runs}:`);
    const measured: CopyMeasurement[] = [];
    for (let turn = 0; turn < copiers.length; turn++) {
      const at = (i + turn) % copiers.length;
      const m = await copiers[at]!();
      measured[at] = m;
      const error = (m as PeerMeasurement).error;
      print(`  ${error === undefined ? describeMeasurement(m) : `${m.copier} FAILED: ${error}`}`);
    }
    const [ferry, ...others] = measured as [CopyMeasurement, ...CopyMeasurement[]];
    const sizeRun: SizeRun = { ferry };
    if (options.baseline === true) sizeRun.baseline = others.shift()!;
    if (mongoTools !== undefined) sizeRun.peers = others as PeerMeasurement[];
    perRun.push(sizeRun);
  }
  const point: Pick<ScalePoint, 'ferry' | 'baseline' | 'peers' | 'ratioToBestPeer' | 'perRun'> = {
    ferry: medianMeasurement(perRun.map((r) => r.ferry)),
    perRun,
  };
  if (runs > 1) print(`  median of ${runs}: ${describeMeasurement(point.ferry)}`);
  if (options.baseline === true) point.baseline = medianMeasurement(perRun.map((r) => r.baseline!));
  if (mongoTools !== undefined) {
    point.peers = PEER_CONFIGURATIONS.map((_, c) => peerMedian(perRun.map((r) => r.peers![c]!)));
    const ratios = perRun.flatMap((r) => ratioToBest(r.ferry, r.peers!) ?? []);
    if (ratios.length > 0) {
      point.ratioToBestPeer = round(median(ratios));
      print(`  Ferry / best peer throughput: ${point.ratioToBestPeer}x${runs > 1 ? ` (median of ${ratios.length})` : ''}`);
    }
  }
  return point;
}

/** One peer configuration's runs: medians of those that succeeded; the failures' reasons in `error`. */
function peerMedian(runs: PeerMeasurement[]): PeerMeasurement {
  const succeeded = runs.filter((m) => m.error === undefined);
  const errors = runs.flatMap((m) => (m.error === undefined ? [] : [m.error]));
  const peer = medianMeasurement(succeeded.length > 0 ? succeeded : runs);
  peer.equal = runs.every((m) => m.equal);
  if (errors.length > 0) peer.error = errors.join('; ');
  return peer;
}

/** A source of `collections` one-document collections, synced by Ferry into a fresh destination until `canCommit`. */
async function measureNamespaces(
  collections: number,
  options: ScaleBenchmarkOptions,
  sampler: UsageSampler,
  ferryFlags: string[],
  print: (line: string) => void,
): Promise<NamespacePoint> {
  const source = await spawnCluster();
  try {
    sampler.watch('source', source.pid);
    const indexesPerCollection = options.indexesPerCollection ?? 1;
    const filling = performance.now();
    const workload = await fillNamespaces(source.uri, { collections, indexesPerCollection });
    print(
      `${collections} collections, ${collections * indexesPerCollection} secondary indexes ` +
        `(filled in ${((performance.now() - filling) / 1000).toFixed(1)} s)`,
    );
    const run = { source, workload, sampler, ferryFlags, until: 'canCommit' as const, timeoutMs: 60 * 60_000 };
    const perRun: CopyMeasurement[] = [];
    for (let i = 0; i < (options.runs ?? 1); i++) {
      const ferry = await measureFerryCopy({
        ...run,
        ...profileOf(options),
        ...(options.ferryEnv === undefined ? {} : { ferryEnv: options.ferryEnv }),
      });
      perRun.push(ferry);
      print(`  start → canCommit ${describeMeasurement(ferry)}`);
    }
    const ferry = medianMeasurement(perRun);
    if (perRun.length > 1) print(`  median of ${perRun.length}: ${describeMeasurement(ferry)}`);
    return { collections, indexes: collections * (indexesPerCollection + 1), ferry, perRun };
  } finally {
    sampler.forget('source');
    await source.stop();
  }
}

/**
 * The concurrency sweep: one source, a fresh destination per pair of settings and run (undefined
 * without a sweep). With several runs every cell is measured once per round, so that a noisy
 * stretch of the machine's time falls on all cells rather than on one.
 */
async function measureSweep(
  options: ScaleBenchmarkOptions,
  sampler: UsageSampler,
  ferryFlags: string[],
  print: (line: string) => void,
): Promise<ScaleBenchmarkResult['sweep']> {
  const workers = options.sweepCopyWorkers ?? [];
  const batches = options.sweepBatchBytesMB ?? [];
  if (workers.length === 0 || batches.length === 0) return undefined;
  const sizeMB = options.sweepSizeMB ?? 200;
  const source = await spawnCluster();
  try {
    sampler.watch('source', source.pid);
    const report = await generateDataset({ uri: source.uri, sizeMB, seed: options.seed ?? 1 });
    const workload = copyWorkload(report);
    print(`sweep: ${(report.totalBytes / MiB).toFixed(1)} MB, copyWorkers ${workers.join('/')} × batchBytes ${batches.join('/')} MiB`);
    const settings = workers.flatMap((copyWorkers) => batches.map((batchBytesMB) => ({ copyWorkers, batchBytesMB })));
    const measured = settings.map((): CopyMeasurement[] => []);
    const runs = options.runs ?? 1;
    for (let round = 0; round < runs; round++) {
      for (const [i, { copyWorkers, batchBytesMB }] of settings.entries()) {
        const flags = [...ferryFlags, '--copyWorkers', String(copyWorkers), '--batchBytes', String(Math.round(batchBytesMB * MiB))];
        const ferry = await measureFerryCopy({
          source,
          workload,
          sampler,
          ferryFlags: flags,
          ...(options.ferryEnv === undefined ? {} : { ferryEnv: options.ferryEnv }),
        });
        measured[i]!.push(ferry);
        const of = runs > 1 ? ` (run ${round + 1}/${runs})` : '';
        print(`  copyWorkers ${copyWorkers}, batchBytes ${batchBytesMB} MiB${of}: ${describeMeasurement(ferry)}`);
      }
    }
    const cells = settings.map((setting, i): SweepCell => {
      const ferry = medianMeasurement(measured[i]!);
      return {
        ...setting,
        runs,
        MBps: ferry.MBps,
        seconds: ferry.seconds,
        cpuSecondsPerGB: ferry.cpuSecondsPerGB,
        peakRssMB: ferry.peakRssMB,
        destinationCpuSecondsPerGB: ferry.destinationCpuSecondsPerGB,
      };
    });
    const fastest = cells.reduce((best, cell) => (cell.MBps > best.MBps ? cell : best));
    const cheapest = cells.reduce((best, cell) => (cell.cpuSecondsPerGB < best.cpuSecondsPerGB ? cell : best));
    print(
      `  ${runs > 1 ? `medians of ${runs}, ` : ''}MB/s (copier CPU s/GB, peak RSS MB) | ${batches.map((b) => `batchBytes ${b} MiB`).join(' | ')}`,
    );
    for (const copyWorkers of workers) {
      const row = cells.filter((cell) => cell.copyWorkers === copyWorkers);
      print(`  copyWorkers ${copyWorkers} | ${row.map((c) => `${c.MBps} (${c.cpuSecondsPerGB}, ${c.peakRssMB})`).join(' | ')}`);
    }
    print(
      `  fastest: copyWorkers ${fastest.copyWorkers}, batchBytes ${fastest.batchBytesMB} MiB (${fastest.MBps} MB/s); ` +
        `least CPU: copyWorkers ${cheapest.copyWorkers}, batchBytes ${cheapest.batchBytesMB} MiB (${cheapest.cpuSecondsPerGB} s/GB)`,
    );
    return { sizeMB, cells, fastest, cheapest };
  } finally {
    sampler.forget('source');
    await source.stop();
  }
}

/** Where Ferry's CPU profiles go, as `measureFerryCopy` takes it. */
function profileOf(options: ScaleBenchmarkOptions): { ferryCpuProfileDir?: string } {
  return options.cpuProf === undefined ? {} : { ferryCpuProfileDir: options.cpuProf };
}

/** `--sizes`/`--namespaces`: a comma-separated list, or `none`. */
function listOrNone(value: string): number[] {
  if (value.trim() === 'none') return [];
  try {
    return positiveNumberList(value);
  } catch {
    throw new InvalidArgumentError('must be a comma-separated list of positive numbers, or none');
  }
}

async function main(argv: string[]): Promise<void> {
  const flags = new Command()
    .name('bench:scale')
    .description("How Ferry's copy time, CPU and memory grow with the data")
    .option('--sizes <list>', 'data sizes, MiB, comma-separated, or none', listOrNone, [50, 200, 800])
    .option('--namespaces <list>', 'numbers of one-document collections, comma-separated, or none', listOrNone, [1000, 10000])
    .option('--indexesPerCollection <n>', 'secondary indexes on each collection of the namespaces axis', integer, 1)
    .option('--runs <n>', 'copies of each size, namespace point and sweep cell (medians are reported)', positiveInteger, 1)
    .option('--seed <n>', 'generator seed', integer, 1)
    .option('--loadLevel <n>', "Ferry's --loadLevel (default: Ferry's default)", positiveInteger)
    .option('--ferryEnv <NAME=value>', 'environment variable for the ferry process (repeatable)', environmentEntry)
    .option('--sweepCopyWorkers <list>', 'concurrency sweep: --copyWorkers values, comma-separated', listOrNone, [])
    .option('--sweepBatchBytesMB <list>', 'concurrency sweep: --batchBytes values, MiB, comma-separated', listOrNone, [])
    .option('--sweepSizeMB <n>', 'size of the sweep source, MiB', positiveInteger, 200)
    .option('--cpuProf <dir>', "write CPU profiles of Ferry's threads here (node --cpu-prof)")
    .option('--baseline', 'also measure the baseline copier at each size', false)
    .option('--mongoTools <dir>', 'also copy each size with mongodump | mongorestore from this directory (default MONGO_TOOLS_DIR)')
    .option('--out <dir>', 'directory of scale.json', DEFAULT_RESULTS_DIR)
    .parse(argv)
    .opts<ScaleBenchmarkOptions>();
  await runScaleBenchmark(flags);
}

runIfEntryPoint(import.meta.url, 'bench:scale', main);
