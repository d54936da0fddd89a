/**
 * Several instances benchmark (issue 13): the initial copy of one 3-shard source by one Ferry
 * (the default id, reading through the mongos) and by three (one per source shard, `--id
 * <shard>`, each reading its own shard directly), side by side in one run, each into a fresh
 * replica-set destination. Runs alternate which goes first; figures are medians over runs, the
 * ratio the median of the per-run ratios.
 *
 * The source: `--collections` collections, each ranged-sharded on `k` and split into three
 * chunks, one per shard, filled through the mongos with 1 KiB documents to `--sizeMB` in all.
 * The clock runs from the `start` requests until every instance's progress says its copy is
 * complete (indexes built); CPU is each process's own from /proc over that window (every Ferry
 * process, the source's mongos, config server and shards, the destination), so the figures can be
 * read per core: `coresBusy` is CPU seconds per wall second, of Ferry and of everything together.
 *
 *   npm run bench:instances -- [--sizeMB 480] [--collections 4] [--runs 3] [--out bench/results]
 *
 * Writes `<out>/instances.json`.
 */
import { Command } from 'commander';
import { performance } from 'node:perf_hooks';
import { BSON, Int32 } from 'bson';
import { MongoClient } from 'mongodb';
import { positiveInteger } from '../scripts/lib/cli-numbers.js';
import { runIfEntryPoint } from '../scripts/lib/entry-point.js';
import { watchProgress } from '../scripts/lib/sync-watch.js';
import { spawnCluster } from '../test/cluster/index.js';
import { copyFinished, startFerry, type FerryProcess } from '../test/e2e/ferry-process.js';
import { checkCounts, measurement, withFreshDestination, type CopyMeasurement, type CopyWorkload } from './lib/copy-runs.js';
import { UsageSampler } from './lib/process-usage.js';
import { DEFAULT_RESULTS_DIR, median, MiB, round, writeResult } from './lib/results.js';

/** Options of `runInstancesBenchmark`. */
export interface InstancesBenchmarkOptions {
  /** Size of the source's data, MiB. Default 480. */
  sizeMB?: number;
  /** Collections it is spread over. Default 4. */
  collections?: number;
  /** Side-by-side runs (each setup once per run). Default 3. */
  runs?: number;
  /** Directory of `instances.json`. Default `bench/results/`. */
  out?: string;
  print?: (line: string) => void;
}

/** One setup's copy: Ferry's figures (all its processes together), and where the CPU went. */
export interface SetupMeasurement extends CopyMeasurement {
  /** Each Ferry process's CPU and peak RSS over the copy (one entry with a single instance). */
  instances: { id: string; cpuSeconds: number; peakRssMB: number }[];
  /** CPU of the source's shards and config server over the copy (`sourceClusterCpuSeconds` is its mongos's). */
  sourceShardsCpuSeconds: number;
  /** Ferry's CPU seconds per wall second: how many cores it kept busy. */
  ferryCoresBusy: number;
  /** Every process's (Ferry, source, destination) CPU seconds per wall second. */
  allCoresBusy: number;
  /** MiB copied per CPU second of every process together: what a core buys. */
  MBperCpuSecond: number;
}

export interface InstancesRun {
  one: SetupMeasurement;
  three: SetupMeasurement;
  /** three's MB/s ÷ one's. */
  ratio: number;
}

/** A setup's figures, medians over runs. */
export interface SetupMedian {
  MBps: number;
  seconds: number;
  cpuSeconds: number;
  ferryCoresBusy: number;
  allCoresBusy: number;
  MBperCpuSecond: number;
  mongosCpuSeconds: number;
  sourceShardsCpuSeconds: number;
  destinationCpuSeconds: number;
}

export interface InstancesBenchmarkResult {
  sizeMB: number;
  bytes: number;
  documents: number;
  shards: string[];
  runs: InstancesRun[];
  median: {
    one: SetupMedian;
    three: SetupMedian;
    /** Each instance's CPU seconds, median over runs, by shard. */
    threePerInstanceCpuSeconds: Record<string, number>;
    ratio: number;
  };
}

const DOC_BYTES = 1024;
const DB = 'bench';

/** Fills the source (see the module comment); what a copy must carry. */
async function fillSource(uri: string, shards: readonly string[], sizeMB: number, collections: number): Promise<CopyWorkload> {
  const client = await MongoClient.connect(uri);
  const perCollection = Math.max(3, Math.ceil((sizeMB * MiB) / DOC_BYTES / collections));
  const workload: CopyWorkload = { bytes: 0, documents: 0, documentsByNamespace: {} };
  try {
    const admin = client.db('admin');
    await admin.command({ enableSharding: DB, primaryShard: shards[0] });
    for (let c = 0; c < collections; c++) {
      const ns = `${DB}.c${c}`;
      await admin.command({ shardCollection: ns, key: { k: 1 } });
      for (let s = 1; s < shards.length; s++) {
        const middle = Math.floor((perCollection * s) / shards.length);
        await admin.command({ split: ns, middle: { k: middle } });
        await admin.command({ moveChunk: ns, find: { k: middle }, to: shards[s], _waitForDelete: true });
      }
      const padding = 'x'.repeat(DOC_BYTES - BSON.calculateObjectSize({ _id: new Int32(0), k: new Int32(0), pad: '' }));
      for (let start = 0; start < perCollection; start += 1000) {
        const docs = Array.from({ length: Math.min(1000, perCollection - start) }, (_, i) => ({
          _id: new Int32(start + i),
          k: new Int32(start + i),
          pad: padding,
        }));
        await client
          .db(DB)
          .collection(`c${c}`)
          .insertMany(docs as never[], { ordered: false });
        workload.bytes += docs.reduce((sum, doc) => sum + BSON.calculateObjectSize(doc), 0);
      }
      workload.documents += perCollection;
      workload.documentsByNamespace[ns] = perCollection;
    }
  } finally {
    await client.close();
  }
  return workload;
}

interface Source {
  uri: string;
  shards: string[];
  /** The sampler's names of the source's shards and config server. */
  parts: string[];
}

/**
 * Copies the source into a fresh destination with one Ferry (`ids` empty: the default id) or one
 * per shard (`ids` the shard IDs), and measures it.
 */
async function measureSetup(
  setup: 'one' | 'three',
  source: Source,
  workload: CopyWorkload,
  sampler: UsageSampler,
): Promise<SetupMeasurement> {
  const ids = setup === 'one' ? [undefined] : source.shards;
  const names = ids.map((id) => (id === undefined ? 'ferry' : `ferry:${id}`));
  return withFreshDestination({ sampler }, async (destination) => {
    const ferries: FerryProcess[] = [];
    try {
      for (const id of ids) {
        const idFlag = id === undefined ? [] : ['--id', id];
        ferries.push(await startFerry(['--cluster0', source.uri, '--cluster1', destination.uri, ...idFlag]));
      }
      ferries.forEach((ferry, i) => sampler.watch(names[i]!, ferry.child.pid!));
      for (const name of ['source', ...source.parts, 'destination']) sampler.restart(name);
      const started = performance.now();
      const replies = await Promise.all(ferries.map((ferry) => ferry.post('start', { source: 'cluster0', destination: 'cluster1' })));
      for (const reply of replies) if (reply.status !== 200) throw new Error(`ferry refused start: ${JSON.stringify(reply.body)}`);
      await Promise.all(
        ferries.map((ferry) =>
          watchProgress(ferry, copyFinished, { what: 'the copy to complete', timeoutMs: 30 * 60_000, intervalMs: 100 }),
        ),
      );
      const seconds = (performance.now() - started) / 1000;
      const result = measurement(setup, seconds, workload, sampler, [], names);
      const instances = names.map((name, i) => {
        const usage = sampler.usage(name);
        return { id: ids[i] ?? 'coordinator', cpuSeconds: round(usage.cpuSeconds, 3), peakRssMB: round(usage.peakRssMB, 1) };
      });
      const sourceShardsCpuSeconds = source.parts.reduce((sum, name) => sum + sampler.usage(name).cpuSeconds, 0);
      await checkCounts(destination.uri, workload, setup);
      const everything = result.cpuSeconds + result.sourceClusterCpuSeconds + sourceShardsCpuSeconds + result.destinationClusterCpuSeconds;
      return {
        ...result,
        instances,
        sourceShardsCpuSeconds: round(sourceShardsCpuSeconds),
        ferryCoresBusy: round(result.cpuSeconds / seconds),
        allCoresBusy: round(everything / seconds),
        MBperCpuSecond: round(workload.bytes / MiB / everything),
      };
    } finally {
      for (const name of names) sampler.forget(name);
      await Promise.all(ferries.map((ferry) => ferry.stop()));
    }
  });
}

function describe(m: SetupMeasurement): string {
  return (
    `${m.copier.padEnd(6)} ${m.seconds.toFixed(1).padStart(6)} s ${m.MBps.toFixed(1).padStart(6)} MB/s  Ferry CPU ${m.cpuSeconds.toFixed(1)} s ` +
    `(${m.instances.map((each) => `${each.id} ${each.cpuSeconds.toFixed(1)}`).join(', ')}), ${m.ferryCoresBusy} cores busy; ` +
    `mongos ${m.sourceClusterCpuSeconds.toFixed(1)} s, source shards ${m.sourceShardsCpuSeconds.toFixed(1)} s, ` +
    `destination ${m.destinationClusterCpuSeconds.toFixed(1)} s; all ${m.allCoresBusy} cores busy, ${m.MBperCpuSecond} MB per CPU-s`
  );
}

const medianOf = (runs: InstancesRun[], setup: 'one' | 'three'): SetupMedian => {
  const of = (figure: (m: SetupMeasurement) => number) => round(median(runs.map((run) => figure(run[setup]))));
  return {
    MBps: of((m) => m.MBps),
    seconds: of((m) => m.seconds),
    cpuSeconds: of((m) => m.cpuSeconds),
    ferryCoresBusy: of((m) => m.ferryCoresBusy),
    allCoresBusy: of((m) => m.allCoresBusy),
    MBperCpuSecond: of((m) => m.MBperCpuSecond),
    mongosCpuSeconds: of((m) => m.sourceClusterCpuSeconds),
    sourceShardsCpuSeconds: of((m) => m.sourceShardsCpuSeconds),
    destinationCpuSeconds: of((m) => m.destinationClusterCpuSeconds),
  };
};

export async function runInstancesBenchmark(options: InstancesBenchmarkOptions = {}): Promise<InstancesBenchmarkResult & { path: string }> {
  const sizeMB = options.sizeMB ?? 480;
  const runs = options.runs ?? 3;
  const print = options.print ?? ((line: string) => console.log(line));
  const sampler = new UsageSampler();
  const cluster = await spawnCluster({ shards: 3 });
  try {
    const shards = cluster.shards.map((shard) => shard.id).sort();
    const parts = ['source:config', ...cluster.shards.map((shard) => `source:${shard.id}`)];
    sampler.watch('source', cluster.mongos.pid!);
    sampler.watch('source:config', cluster.configServer.pid!);
    for (const shard of cluster.shards) sampler.watch(`source:${shard.id}`, shard.pid!);
    const workload = await fillSource(cluster.uri, shards, sizeMB, options.collections ?? 4);
    print(`source: ${(workload.bytes / MiB).toFixed(1)} MB in ${workload.documents} documents on ${shards.join(', ')}`);
    const source: Source = { uri: cluster.uri, shards, parts };
    const measured: InstancesRun[] = [];
    for (let run = 0; run < runs; run++) {
      // Alternate who goes first: the machine warms up, and other work on it comes and goes.
      const order: ('one' | 'three')[] = run % 2 === 0 ? ['one', 'three'] : ['three', 'one'];
      const figures: Partial<Record<'one' | 'three', SetupMeasurement>> = {};
      for (const setup of order) {
        figures[setup] = await measureSetup(setup, source, workload, sampler);
        print(`run ${run + 1}: ${describe(figures[setup])}`);
      }
      measured.push({ one: figures.one!, three: figures.three!, ratio: round(figures.three!.MBps / figures.one!.MBps) });
    }
    const perInstance = Object.fromEntries(
      shards.map((id) => [id, round(median(measured.map((run) => run.three.instances.find((each) => each.id === id)!.cpuSeconds)))]),
    );
    const result: InstancesBenchmarkResult = {
      sizeMB,
      bytes: workload.bytes,
      documents: workload.documents,
      shards,
      runs: measured,
      median: {
        one: medianOf(measured, 'one'),
        three: medianOf(measured, 'three'),
        threePerInstanceCpuSeconds: perInstance,
        ratio: round(median(measured.map((run) => run.ratio))),
      },
    };
    print(
      `median of ${runs}: one ${result.median.one.MBps} MB/s, three ${result.median.three.MBps} MB/s (×${result.median.ratio}); ` +
        `Ferry CPU one ${result.median.one.cpuSeconds} s, three ${result.median.three.cpuSeconds} s ` +
        `(${Object.entries(perInstance)
          .map(([id, cpu]) => `${id} ${cpu}`)
          .join(', ')})`,
    );
    const path = writeResult(options.out ?? DEFAULT_RESULTS_DIR, 'instances', result);
    print(`→ ${path}`);
    return { ...result, path };
  } finally {
    sampler.close();
    await cluster.stop();
  }
}

async function main(argv: string[]): Promise<void> {
  const flags = new Command()
    .name('bench:instances')
    .description('Copy of a 3-shard source by one Ferry and by three (one per shard), side by side')
    .option('--sizeMB <n>', 'size of the source data, MiB', positiveInteger, 480)
    .option('--collections <n>', 'collections the data is spread over', positiveInteger, 4)
    .option('--runs <n>', 'side-by-side runs', positiveInteger, 3)
    .option('--out <dir>', 'directory of instances.json', DEFAULT_RESULTS_DIR)
    .parse(argv)
    .opts<InstancesBenchmarkOptions>();
  await runInstancesBenchmark(flags);
}

runIfEntryPoint(import.meta.url, 'bench:instances', main);
