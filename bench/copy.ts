/**
 * Copy benchmark: the same generated data (scripts/generate.ts) copied by Ferry and by the
 * baseline copier (bench/baseline-copier.ts: find + insertMany, one collection at a time), each
 * into a fresh destination test cluster, in one run, side by side. Each run starts with the next
 * copier (MongoDB's tools too); figures are medians over runs, and the ratio is the median of the
 * per-run ratios. Before the runs, one Ferry copy is made and not counted (`--noWarmUp` leaves it
 * out): on this machine the first copy after a few idle minutes costs its destination 20–45% more
 * CPU, whichever copier makes it, and generating the data does not take that cost away.
 *
 * With `--shards n` each destination is a sharded test cluster of n shards (through its mongos):
 * replica set → sharded, Ferry sharding every collection on `{_id: "hashed"}`; each destination
 * shard's CPU and share of the documents are recorded per run (`destinationShards`).
 *
 * With `--mongoTools <dir>` (or `MONGO_TOOLS_DIR`) naming a directory that holds MongoDB's own
 * `mongodump` and `mongorestore`, each run also copies with `mongodump --archive | mongorestore
 * --archive` in three configurations (bench/lib/peer-copy.ts), each into a fresh destination, and
 * every destination (Ferry's too) is compared equal to the source. Ferry's clock then runs from
 * `start` to `canCommit`, as a user waits for it; `peers` and `ratioToBestPeer` join the result.
 *
 *   npm run bench:copy -- [--sizeMB 100] [--seed 1] [--runs 1] [--shards 2] [--loadLevel 3] [--ferryEnv NAME=value]
 *                          [--ferryFlags "--verifyWorkers 4"] [--until copy|canCommit] [--mongoTools dir] [--out bench/results]
 *                          [--cpuProf dir] [--clusterCpuProf dir] [--noWarmUp]
 *
 * Writes `<out>/copy.json`.
 */
import { join } from 'node:path';
import { Command, InvalidArgumentError } from 'commander';
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
  stageMedians,
  type CopyMeasurement,
  type CopyStage,
} from './lib/copy-runs.js';
import { UsageSampler } from './lib/process-usage.js';
import { measurePeerCopy, missingTools, PEER_CONFIGURATIONS, ratioToBest, type PeerMeasurement } from './lib/peer-copy.js';
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
  /**
   * Where Ferry's clock stops: `copy` (the copy complete, indexes built) or `canCommit` (the embedded
   * verifier's first pass too). Default `canCommit` with `mongoTools`, else `copy`.
   */
  until?: 'copy' | 'canCommit';
  /** More flags for the ferry process, e.g. `['--verifyWorkers', '4']` (`--ferryFlags "<flags>"`). Default none. */
  ferryFlags?: string[];
  /** Shards of the destination (0: a replica set). Default 0. */
  shards?: number;
  /** Extra environment of the ferry process (`--ferryEnv NAME=value`). Default none. */
  ferryEnv?: Record<string, string>;
  /**
   * Directory holding MongoDB's `mongodump` and `mongorestore`, to compare against (see the module
   * comment). Default `MONGO_TOOLS_DIR`, else none (no peers).
   */
  mongoTools?: string;
  /** Directory of `copy.json`. Default `bench/results/`. */
  out?: string;
  /** Write CPU profiles of Ferry (every thread) here (`node --cpu-prof`). Default none. */
  cpuProf?: string;
  /** Write CPU profiles of the test clusters here: `<dir>/source`, `<dir>/destination` (one per copy). Default none. */
  clusterCpuProf?: string;
  /**
   * Make one Ferry copy, not counted, before the runs: the first copy after the machine sat idle
   * costs its destination 20–45% more CPU, whichever copier makes it (`--noWarmUp`: false). Default true.
   */
  warmUp?: boolean;
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
  /** Where Ferry's clock stopped: the copy complete, or `canCommit` (when peers are compared). */
  ferryUntil: 'copy' | 'canCommit';
  ferryDestinationCpuSecondsPerGB: number;
  /** The destination's CPU seconds over Ferry's seconds (medians): 1 means it was busy all of Ferry's window. */
  ferryDestinationBusyShare: number;
  /** Ferry's window in stages (`CopyStage`: copy, index builds, until canCommit), medians over runs. */
  ferryStages: CopyStage[];
  /**
   * Issue 17's destination targets (with `mongoTools`), "during Ferry's copy": its `copy` and
   * `indexBuilds` stages, not the embedded verifier's pass until `canCommit` (work the restore does
   * not do). The destination's CPU per GiB then against the `--noIndexRestore` restore's plus
   * Ferry's own index builds', and Ferry's time against the destination's busy time (within 10%).
   * Medians over runs.
   */
  destinationTargets?: {
    /** The destination's CPU per GiB during Ferry's copy and index builds. */
    ferryCopyDestinationCpuSecondsPerGB: number;
    /** The same over Ferry's whole window (to `canCommit`), for comparison. */
    ferryDestinationCpuSecondsPerGB: number;
    noIndexRestorePlusIndexBuildsCpuSecondsPerGB: number | null;
    cpuPerByteMet: boolean;
    /** Ferry's copy and index builds. */
    ferryCopySeconds: number;
    /** The destination's CPU seconds during them. */
    destinationBusySeconds: number;
    /** `ferryCopySeconds` over `destinationBusySeconds`: ≤ 1.1 meets the target. */
    timeOverBusy: number;
    busyTimeMet: boolean;
  };
  /** With `mongoTools`: each configuration of `mongodump | mongorestore` (medians over runs), verified equal. */
  peers?: PeerFigures[];
  /** Ferry's throughput over the fastest peer configuration's (median of the per-run ratios). */
  ratioToBestPeer?: number;
  /** The same against the fastest configuration that builds indexes, and the fastest that does not. */
  ratioToBestPeerWithIndexes?: number;
  ratioToBestPeerWithoutIndexes?: number;
  perRun: { ferry: CopyMeasurement; baseline: CopyMeasurement; ratio: number; peers?: PeerMeasurement[] }[];
}

/** One peer configuration's figures in `copy.json`. */
export interface PeerFigures {
  name: string;
  restoreFlags: string[];
  buildsIndexes: boolean;
  /** Medians over the runs where the tools succeeded (null when none did). */
  MBps: number | null;
  seconds: number | null;
  cpuSecondsPerGB: number | null;
  peakRssMB: number | null;
  destinationCpuSecondsPerGB: number | null;
  destinationBusyShare: number | null;
  /** Every run succeeded and its destination compared equal to the source. */
  equal: boolean;
  /** The runs where the tools failed: why. */
  errors?: string[];
}

export async function runCopyBenchmark(options: CopyBenchmarkOptions = {}): Promise<CopyBenchmarkResult & { path: string }> {
  const sizeMB = options.sizeMB ?? 100;
  const seed = options.seed ?? 1;
  const runs = options.runs ?? 1;
  const print = options.print ?? ((line: string) => console.log(line));
  const mongoTools = options.mongoTools ?? process.env.MONGO_TOOLS_DIR;
  if (mongoTools !== undefined) {
    const missing = missingTools(mongoTools);
    if (missing !== undefined) throw new Error(`--mongoTools: ${missing}`);
    if ((options.shards ?? 0) > 0) throw new Error('--mongoTools compares against a replica-set destination: leave out --shards');
  }
  const ferryFlags = [
    ...(options.loadLevel === undefined ? [] : ['--loadLevel', String(options.loadLevel)]),
    ...(options.ferryFlags ?? []),
  ];
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
    const measure = {
      source,
      workload,
      sampler,
      ferryFlags,
      destinationShards: options.shards ?? 0,
      until: options.until ?? (mongoTools === undefined ? ('copy' as const) : ('canCommit' as const)),
      ...(mongoTools === undefined ? {} : { verify: true }),
      ...(options.ferryEnv === undefined ? {} : { ferryEnv: options.ferryEnv }),
      ...(options.cpuProf === undefined ? {} : { ferryCpuProfileDir: options.cpuProf }),
      ...(options.clusterCpuProf === undefined ? {} : { destinationCpuProfileDir: clusterProfile('destination') }),
    };
    // The first copy after the machine sat idle costs its destination 20–45% more CPU, whichever
    // copier makes it; copies right after another do not (bench/RESULTS.md, 2026-11-30): one Ferry
    // copy into a fresh destination comes first, and is not counted.
    if (options.warmUp !== false) {
      const { ferryCpuProfileDir: _profile, destinationCpuProfileDir: _clusterProfile, ...unprofiled } = measure;
      print(`warm-up, not counted: ${describeMeasurement(await measureFerryCopy({ ...unprofiled, until: 'copy', verify: false }))}`);
    }
    for (let run = 0; run < runs; run++) {
      // Each run starts with the next copier, so that none always meets a warmer (or busier) machine.
      const peerCopies = (mongoTools === undefined ? [] : PEER_CONFIGURATIONS).map(
        (configuration) => () => measurePeerCopy(measure, mongoTools!, configuration),
      );
      const copiers = [() => measureFerryCopy(measure), () => measureBaselineCopy(measure), ...peerCopies];
      const measured: CopyMeasurement[] = [];
      for (let i = 0; i < copiers.length; i++) {
        const at = (run + i) % copiers.length;
        measured[at] = await copiers[at]!();
      }
      const [ferry, baseline] = measured as [CopyMeasurement, CopyMeasurement];
      const peers = measured.slice(2) as PeerMeasurement[];
      const ratio = round(ferry.MBps / baseline.MBps);
      perRun.push({ ferry, baseline, ratio, ...(mongoTools === undefined ? {} : { peers }) });
      print(`run ${run + 1}/${runs}:`);
      print(`  ${describeMeasurement(ferry)}`);
      print(`  ${describeMeasurement(baseline)}`);
      for (const peer of peers) print(`  ${peer.error === undefined ? describeMeasurement(peer) : `${peer.copier} FAILED: ${peer.error}`}`);
      print(`  Ferry / baseline throughput: ${ratio.toFixed(2)}x`);
      if (peers.length > 0) print(`  Ferry / best peer throughput: ${ratioToBest(ferry, peers)?.toFixed(2) ?? 'none succeeded'}x`);
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
      ferryUntil: mongoTools === undefined ? 'copy' : 'canCommit',
      ferryDestinationCpuSecondsPerGB: of('ferry', 'destinationCpuSecondsPerGB'),
      ferryDestinationBusyShare: of('ferry', 'destinationBusyShare'),
      ferryStages: stageMedians(perRun.map((r) => r.ferry.stages ?? [])),
      ...(mongoTools === undefined ? {} : peerFigures(perRun)),
      perRun,
    };
    if (result.peers !== undefined) result.destinationTargets = destinationTargets(result);
    const path = writeResult(options.out ?? DEFAULT_RESULTS_DIR, 'copy', result);
    if (result.peers !== undefined) {
      const failed = result.peers.filter((peer) => peer.errors !== undefined).map((peer) => peer.name);
      const verified =
        failed.length === 0 ? 'every destination verified equal' : `every other destination verified equal; FAILED: ${failed.join(', ')}`;
      print(`median of ${runs}, Ferry (start → canCommit) and MongoDB's tools, ${verified}:`);
      print('  copier | MB/s | copier CPU s/GB | copier peak RSS MB | destination CPU s/GB');
      print(
        `  Ferry | ${result.ferryMBps} | ${result.ferryCpuSecondsPerGB} | ${result.ferryPeakRssMB} | ${result.ferryDestinationCpuSecondsPerGB}`,
      );
      for (const peer of result.peers) {
        print(`  ${peer.name} | ${peer.MBps} | ${peer.cpuSecondsPerGB} | ${peer.peakRssMB} | ${peer.destinationCpuSecondsPerGB}`);
      }
      const targets = result.destinationTargets!;
      print(
        `  destination CPU s/GB during Ferry's copy and index builds: Ferry ${targets.ferryCopyDestinationCpuSecondsPerGB} ` +
          `(${targets.ferryDestinationCpuSecondsPerGB} to canCommit), --noIndexRestore + Ferry's index builds ` +
          `${targets.noIndexRestorePlusIndexBuildsCpuSecondsPerGB} (${targets.cpuPerByteMet ? 'met' : 'missed'}); ` +
          `Ferry's copy and index builds ${targets.ferryCopySeconds} s over the destination's ${targets.destinationBusySeconds} busy s: ` +
          `${targets.timeOverBusy}x (≤ 1.1 ${targets.busyTimeMet ? 'met' : 'missed'})`,
      );
      print(
        `  Ferry / best peer: ${result.ratioToBestPeer}x (with indexes ${result.ratioToBestPeerWithIndexes}x, ` +
          `without ${result.ratioToBestPeerWithoutIndexes}x)`,
      );
    }
    print(
      `Ferry's stages (medians): ${result.ferryStages
        .map(
          (stage) =>
            `${stage.stage} ${stage.seconds} s, destination ${stage.destinationCpuSeconds} CPU-s (${stage.destinationCpuSecondsPerGB} s/GB)`,
        )
        .join('; ')}; destination busy ${(result.ferryDestinationBusyShare * 100).toFixed(0)}% of Ferry's window`,
    );
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

/** Issue 17's two destination targets (see `destinationTargets` in the result). */
function destinationTargets(result: CopyBenchmarkResult): NonNullable<CopyBenchmarkResult['destinationTargets']> {
  const noIndexes = result.peers!.find((peer) => !peer.buildsIndexes)?.destinationCpuSecondsPerGB ?? null;
  const indexBuilds = result.ferryStages.find((stage) => stage.stage === 'indexBuilds')?.destinationCpuSecondsPerGB ?? 0;
  const allowed = noIndexes === null ? null : round(noIndexes + indexBuilds);
  const copyStages = result.perRun.map((run) => (run.ferry.stages ?? []).filter((stage) => stage.stage !== 'untilCanCommit'));
  const ofCopy = (field: 'seconds' | 'destinationCpuSeconds' | 'destinationCpuSecondsPerGB') =>
    round(median(copyStages.map((stages) => stages.reduce((total, stage) => total + stage[field], 0))));
  const copyCpuPerGB = ofCopy('destinationCpuSecondsPerGB');
  const copySeconds = ofCopy('seconds');
  const busySeconds = ofCopy('destinationCpuSeconds');
  const timeOverBusy = round(copySeconds / busySeconds);
  return {
    ferryCopyDestinationCpuSecondsPerGB: copyCpuPerGB,
    ferryDestinationCpuSecondsPerGB: result.ferryDestinationCpuSecondsPerGB,
    noIndexRestorePlusIndexBuildsCpuSecondsPerGB: allowed,
    cpuPerByteMet: allowed !== null && copyCpuPerGB <= allowed,
    ferryCopySeconds: copySeconds,
    destinationBusySeconds: busySeconds,
    timeOverBusy,
    busyTimeMet: timeOverBusy <= 1.1,
  };
}

/** The peers' medians over runs and Ferry's ratios to the best of them. */
function peerFigures(
  perRun: CopyBenchmarkResult['perRun'],
): Pick<CopyBenchmarkResult, 'peers' | 'ratioToBestPeer' | 'ratioToBestPeerWithIndexes' | 'ratioToBestPeerWithoutIndexes'> {
  const peers = PEER_CONFIGURATIONS.map((configuration, i): PeerFigures => {
    const runs = perRun.map((run) => run.peers![i]!);
    const succeeded = runs.filter((m) => m.error === undefined);
    const of = (field: keyof CopyMeasurement) => (succeeded.length === 0 ? null : median(succeeded.map((m) => m[field] as number)));
    const errors = runs.flatMap((m) => (m.error === undefined ? [] : [m.error]));
    return {
      name: configuration.name,
      restoreFlags: configuration.restoreFlags,
      buildsIndexes: configuration.buildsIndexes,
      MBps: of('MBps'),
      seconds: of('seconds'),
      cpuSecondsPerGB: of('cpuSecondsPerGB'),
      peakRssMB: of('peakRssMB'),
      destinationCpuSecondsPerGB: of('destinationCpuSecondsPerGB'),
      destinationBusyShare: of('destinationBusyShare'),
      equal: runs.every((m) => m.equal),
      ...(errors.length === 0 ? {} : { errors }),
    };
  });
  const ratio = (which: (peer: PeerMeasurement) => boolean) => {
    const ratios = perRun.flatMap((run) => ratioToBest(run.ferry, run.peers!.filter(which)) ?? []);
    return ratios.length === 0 ? undefined : median(ratios);
  };
  return {
    peers,
    ratioToBestPeer: ratio(() => true),
    ratioToBestPeerWithIndexes: ratio((peer) => peer.buildsIndexes),
    ratioToBestPeerWithoutIndexes: ratio((peer) => !peer.buildsIndexes),
  };
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
    .option(
      '--until <stage>',
      "where Ferry's clock stops: copy or canCommit (default: canCommit with --mongoTools, else copy)",
      (value: string) => {
        if (value !== 'copy' && value !== 'canCommit') throw new InvalidArgumentError('copy or canCommit');
        return value;
      },
    )
    .option('--ferryFlags <flags>', 'more flags for the ferry process, space-separated (e.g. "--verifyWorkers 4")', (value: string) =>
      value.split(/\s+/).filter((flag) => flag !== ''),
    )
    .option('--ferryEnv <NAME=value>', 'environment variable for the ferry process (repeatable)', environmentEntry)
    .option('--mongoTools <dir>', "compare against MongoDB's mongodump | mongorestore found here (default: MONGO_TOOLS_DIR)")
    .option('--out <dir>', 'directory of copy.json', DEFAULT_RESULTS_DIR)
    .option('--cpuProf <dir>', "write CPU profiles of Ferry's threads here (node --cpu-prof)")
    .option('--clusterCpuProf <dir>', 'write CPU profiles of the test clusters here (<dir>/source, <dir>/destination)')
    .option('--noWarmUp', 'make no uncounted warm-up copy before the runs (the first copy is then counted)')
    .parse(argv)
    .opts<CopyBenchmarkOptions & { noWarmUp?: boolean }>();
  const { noWarmUp, ...options } = flags;
  await runCopyBenchmark({ ...options, warmUp: noWarmUp !== true });
}

runIfEntryPoint(import.meta.url, 'bench:copy', main);
