/**
 * One measured initial copy, by Ferry or by the baseline copier, from a source test cluster into
 * a fresh destination test cluster (each copier and each cluster in its own process).
 *
 * - Ferry: the real CLI; the clock runs from `POST /api/v1/start` until progress says the copy
 *   is complete (indexes built), or until `canCommit`; progress read every 100 ms near the copy's
 *   end and after it, every second before (`readPacing`).
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
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { performance } from 'node:perf_hooks';
import { MongoClient, type Document } from 'mongodb';
import { spawnCluster, type ClusterHandle } from '../../test/cluster/index.js';
import { copyFinished, startFerry, type Progress } from '../../test/e2e/ferry-process.js';
import { watchProgress } from '../../scripts/lib/sync-watch.js';
import type { GenerateReport } from '../../scripts/generate.js';
import type { UsageSampler } from './process-usage.js';
import { GiB, median, MiB, round } from './results.js';
import { redactUris } from '../../src/domain/credentials.js';
import { temporaryCollectionOptions } from '../../src/plan/collection-options.js';
import { compareClusters, temporaryIndexForm } from '../../scripts/lib/compare-clusters.js';

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
  /** `ferry`, `baseline`, or a peer's configuration (`mongodump|mongorestore ...`). */
  copier: string;
  seconds: number;
  MBps: number;
  documentsPerSecond: number;
  cpuSeconds: number;
  /** The part of `cpuSeconds` spent in the kernel. */
  systemCpuSeconds: number;
  cpuSecondsPerGB: number;
  peakRssMB: number;
  sourceClusterCpuSeconds: number;
  /** A sharded destination's: its mongos, config server and shards together. */
  destinationClusterCpuSeconds: number;
  /** `destinationClusterCpuSeconds` per GiB copied. */
  destinationCpuSecondsPerGB: number;
  /**
   * `destinationClusterCpuSeconds` over `seconds`: the share of the copy's time the destination
   * was busy (a sharded destination's processes summed, so it may pass 1). Where the destination
   * is the bound, 1 means the copier kept it busy all along.
   */
  destinationBusyShare: number;
  /** Ferry's: its window in stages (from progress), each with its time and the destination's CPU. */
  stages?: CopyStage[];
  /** With `verify`: the destination compared equal to the source (documents byte for byte, options, indexes). */
  equal?: boolean;
  /** A sharded destination's shards: each one's CPU over the copy and its share of the documents. */
  destinationShards?: { shard: string; cpuSeconds: number; documents: number; documentShare: number }[];
}

/**
 * A stage of Ferry's window, as its progress tells them apart (to 0.1 s, `readPacing`): `copy` until
 * every byte is copied, `indexBuilds` until the copy is complete (the indexes built after the data),
 * `untilCanCommit` from there to `canCommit` (the embedded verifier's first pass, change events).
 */
export interface CopyStage {
  stage: 'copy' | 'indexBuilds' | 'untilCanCommit';
  seconds: number;
  destinationCpuSeconds: number;
  /** `destinationCpuSeconds` per GiB copied (the whole copy's bytes, so the stages add up). */
  destinationCpuSecondsPerGB: number;
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

/** Each stage's medians over the runs that reached it (in stage order). */
export function stageMedians(runs: CopyStage[][]): CopyStage[] {
  const names = [...new Set(runs.flatMap((stages) => stages.map((stage) => stage.stage)))];
  return names.map((name) => {
    const reached = runs.flatMap((stages) => stages.filter((stage) => stage.stage === name));
    // Rounded: the median of an even number of runs is a mean (7.797499999999999 s is noise).
    const of = (field: 'seconds' | 'destinationCpuSeconds' | 'destinationCpuSecondsPerGB') =>
      round(median(reached.map((stage) => stage[field])), 3);
    return {
      stage: name,
      seconds: of('seconds'),
      destinationCpuSeconds: of('destinationCpuSeconds'),
      destinationCpuSecondsPerGB: of('destinationCpuSecondsPerGB'),
    };
  });
}

/**
 * One copier's runs as one measurement: each figure the median of its runs (rounded: the median of an
 * even number of runs is a mean), `equal` only when every run's was, stages by `stageMedians`.
 */
export function medianMeasurement<M extends CopyMeasurement>(runs: readonly M[]): M {
  const first = runs[0]!;
  const medians = { ...first } as Record<string, unknown>;
  for (const [field, value] of Object.entries(first)) {
    if (typeof value === 'number') medians[field] = round(median(runs.map((run) => run[field as keyof M] as number)), 3);
  }
  if (first.equal !== undefined) medians.equal = runs.every((run) => run.equal === true);
  if (first.stages !== undefined) medians.stages = stageMedians(runs.map((run) => run.stages ?? []));
  return medians as M;
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
  /** Entry point of the ferry process: another build's `dist/src/cli/main.js`. Default this build's. */
  ferryMain?: string;
  /**
   * Shards of each fresh destination (a sharded test cluster, reached through its mongos); 0 for a
   * replica set. Ferry shards the collections (`shardingFor`, with `createSupportingIndexes`);
   * the baseline writes through the mongos, unsharded. Default 0.
   */
  destinationShards?: number;
  /** Where Ferry's clock stops: the copy complete (indexes built), or `canCommit` as an operator waits for it. Default `copy`. */
  until?: 'copy' | 'canCommit';
  /**
   * After the copy (outside the clock), compare the destination with the source (`compareClusters`)
   * and record `equal`; a difference fails the run. Default false (document counts only).
   */
  verify?: boolean;
}

const BASELINE_MAIN = fileURLToPath(new URL('../baseline-copier.js', import.meta.url));

/** Fails if the destination does not hold as many documents per namespace as the source. */
export async function checkCounts(destinationUri: string, workload: CopyWorkload, copier: string): Promise<void> {
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

/** The names a sharded destination's processes are watched under, shards last. */
const DESTINATION_PARTS = ['destination', 'destination:config'];
const shardName = (id: string) => `destination:${id}`;

/** The destination's CPU seconds in the current window (a sharded one's processes summed). */
function destinationCpu(sampler: UsageSampler, shards: readonly string[]): number {
  const parts = shards.length === 0 ? ['destination'] : [...DESTINATION_PARTS, ...shards.map(shardName)];
  return parts.reduce((sum, name) => sum + sampler.usage(name).cpuSeconds, 0);
}

/** Now on the monotonic clock V8's CPU profiles stamp their samples with, µs. */
export function monotonicMicros(): number {
  return Number(process.hrtime.bigint() / 1000n);
}

/**
 * A copier's window in a destination's CPU profile, so that the profile can be cut to it
 * (`bench/profile-summary.ts --windows`): `from`/`to` and the stages' starts in `monotonicMicros`.
 */
export interface ProfileWindow {
  copier: string;
  /** The destination process whose profile this is (its file name holds the pid). */
  pid: number;
  from: number;
  to: number;
  stages?: { stage: string; from: number; to: number }[];
}

/** Adds `window` to `<dir>/windows.json` (created empty first). */
export function recordProfileWindow(dir: string, window: ProfileWindow): void {
  const path = join(dir, 'windows.json');
  const windows = existsSync(path) ? (JSON.parse(readFileSync(path, 'utf8')) as ProfileWindow[]) : [];
  windows.push(window);
  mkdirSync(dir, { recursive: true });
  writeFileSync(path, JSON.stringify(windows, null, 2) + '\n');
}

/**
 * Splits Ferry's window into its stages (`CopyStage`) from the progress it reports: each progress
 * read that shows a later stage closes the one before, with the destination's CPU read then.
 */
class StageClock {
  static readonly #ORDER: readonly CopyStage['stage'][] = ['copy', 'indexBuilds', 'untilCanCommit'];
  readonly #sampler: UsageSampler;
  readonly #shards: readonly string[];
  readonly #bytes: number;
  /** Where each stage reached began: the time, the destination's CPU then, the monotonic clock. */
  readonly #starts: { stage: CopyStage['stage']; at: number; cpu: number; micros: number }[] = [];

  constructor(sampler: UsageSampler, shards: readonly string[], bytes: number) {
    this.#sampler = sampler;
    this.#shards = shards;
    this.#bytes = bytes;
    this.#starts.push({ stage: 'copy', ...this.#now() });
  }

  /** The stage a progress record shows. */
  static stageOf(progress: Progress): CopyStage['stage'] {
    if (copyFinished(progress)) return 'untilCanCommit';
    if (progress.info !== 'collection copy') return 'copy';
    const copy = progress.collectionCopy as { estimatedCopiedBytes: number; estimatedTotalBytes: number } | null;
    return copy !== null && copy.estimatedTotalBytes > 1 && copy.estimatedCopiedBytes >= copy.estimatedTotalBytes ? 'indexBuilds' : 'copy';
  }

  /** Notes the stage `progress` shows (stages only move forward; one passed between two reads took no time). */
  observe(progress: Progress): void {
    const seen = StageClock.#ORDER.indexOf(StageClock.stageOf(progress));
    for (let next = StageClock.#ORDER.indexOf(this.#starts.at(-1)!.stage) + 1; next <= seen; next++) {
      this.#starts.push({ stage: StageClock.#ORDER[next]!, ...this.#now() });
    }
  }

  /** The window ends now: the stages reached, and their bounds on the monotonic clock. */
  finish(): { stages: CopyStage[]; profile: NonNullable<ProfileWindow['stages']> } {
    const bounds = [...this.#starts, { stage: 'copy' as const, ...this.#now() }];
    const stages = this.#starts.map((start, i): CopyStage => {
      const cpu = bounds[i + 1]!.cpu - start.cpu;
      return {
        stage: start.stage,
        seconds: round((bounds[i + 1]!.at - start.at) / 1000, 3),
        destinationCpuSeconds: round(cpu, 3),
        destinationCpuSecondsPerGB: round(cpu / (this.#bytes / GiB)),
      };
    });
    return { stages, profile: this.#starts.map((start, i) => ({ stage: start.stage, from: start.micros, to: bounds[i + 1]!.micros })) };
  }

  #now(): { at: number; cpu: number; micros: number } {
    return { at: performance.now(), cpu: destinationCpu(this.#sampler, this.#shards), micros: monotonicMicros() };
  }
}

/**
 * The figures of one copy. A copier of several processes (`processes`, as watched by the sampler;
 * default the copier's own name) counts their CPU together and their peaks summed: they run at once.
 */
export function measurement(
  copier: CopyMeasurement['copier'],
  seconds: number,
  workload: CopyWorkload,
  sampler: UsageSampler,
  shards: readonly string[],
  processes: readonly string[] = [copier],
): CopyMeasurement {
  const usages = processes.map((name) => sampler.usage(name));
  const own = {
    cpuSeconds: usages.reduce((sum, u) => sum + u.cpuSeconds, 0),
    systemCpuSeconds: usages.reduce((sum, u) => sum + u.systemCpuSeconds, 0),
    peakRssMB: usages.reduce((sum, u) => sum + u.peakRssMB, 0),
  };
  const destinationCpuSeconds = destinationCpu(sampler, shards);
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
    destinationClusterCpuSeconds: round(destinationCpuSeconds),
    destinationCpuSecondsPerGB: round(destinationCpuSeconds / (workload.bytes / GiB)),
    destinationBusyShare: round(destinationCpuSeconds / seconds, 3),
  };
}

/**
 * Compares the destination with the source after a copy; fails on any difference. Ferry's
 * destination before commit holds indexes and options in their temporary form; a restore told not
 * to build indexes holds none but `_id`'s.
 */
export async function verifyCopy(
  sourceUri: string,
  destinationUri: string,
  copier: string,
  form: 'restored' | 'midSync' | 'noIndexes' = 'restored',
): Promise<void> {
  const differences = (
    await compareClusters(sourceUri, destinationUri, {
      ...(form === 'midSync' ? { expectedIndex: temporaryIndexForm, expectedOptions: temporaryCollectionOptions } : {}),
    })
  ).filter((difference) => !(form === 'noIndexes' && difference.kind === 'index' && difference.destination === undefined));
  if (differences.length > 0) {
    throw new Error(`${copier}: the destination differs from the source: ${JSON.stringify(differences.slice(0, 3), bigintText)}`);
  }
}

const bigintText = (_key: string, value: unknown) => (typeof value === 'bigint' ? String(value) : value);

/** Each shard's documents of the copied namespaces (`$collStats` through the mongos: one entry per shard). */
async function documentsByShard(destinationUri: string, workload: CopyWorkload): Promise<Map<string, number>> {
  const client = await MongoClient.connect(destinationUri);
  const counts = new Map<string, number>();
  try {
    for (const ns of Object.keys(workload.documentsByNamespace)) {
      const dot = ns.indexOf('.');
      const stats = await client
        .db(ns.slice(0, dot))
        .collection(ns.slice(dot + 1))
        .aggregate([{ $collStats: { count: {} } }])
        .toArray();
      for (const entry of stats) counts.set(String(entry.shard), (counts.get(String(entry.shard)) ?? 0) + Number(entry.count));
    }
  } finally {
    await client.close();
  }
  return counts;
}

/** Node flags that make a process write its CPU profile into `dir` (none without a dir). */
export function cpuProfileArgs(dir: string | undefined): string[] {
  return dir === undefined ? [] : ['--cpu-prof', `--cpu-prof-dir=${dir}`];
}

/** A fresh destination: its URI, the shard ids (none for a replica set), the process watched as `destination`. */
export interface FreshDestination {
  uri: string;
  shards: string[];
  pid: number;
}

/**
 * Starts a fresh destination cluster, watched as `destination` (a sharded one's mongos; its config
 * server and shards as `destination:config`, `destination:<shard id>`), and runs `copy` against it.
 */
export async function withFreshDestination<T>(
  options: Pick<CopyRunOptions, 'sampler' | 'destinationShards' | 'destinationCpuProfileDir'>,
  copy: (destination: FreshDestination) => Promise<T>,
): Promise<T> {
  const { sampler } = options;
  const profile = cpuProfileArgs(options.destinationCpuProfileDir);
  if ((options.destinationShards ?? 0) > 0) {
    const cluster = await spawnCluster({ shards: options.destinationShards! }, profile);
    const shards = cluster.shards.map((shard) => shard.id);
    try {
      sampler.watch('destination', cluster.mongos.pid!);
      sampler.watch('destination:config', cluster.configServer.pid!);
      for (const shard of cluster.shards) sampler.watch(shardName(shard.id), shard.pid!);
      return await copy({ uri: cluster.uri, shards, pid: cluster.mongos.pid! });
    } finally {
      for (const name of [...DESTINATION_PARTS, ...shards.map(shardName)]) sampler.forget(name);
      await cluster.stop();
    }
  }
  const destination = await spawnCluster({}, profile);
  try {
    sampler.watch('destination', destination.pid);
    return await copy({ uri: destination.uri, shards: [], pid: destination.pid });
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
  destination: FreshDestination,
  copy: (stages: StageClock) => Promise<void>,
): Promise<CopyMeasurement> {
  const { sampler, workload } = options;
  const parts = destination.shards.length === 0 ? ['destination'] : [...DESTINATION_PARTS, ...destination.shards.map(shardName)];
  sampler.watch(copier, pid);
  sampler.restart('source');
  for (const name of parts) sampler.restart(name);
  const started = performance.now();
  const stages = new StageClock(sampler, destination.shards, workload.bytes);
  await copy(stages);
  const result = measurement(copier, (performance.now() - started) / 1000, workload, sampler, destination.shards);
  const staged = stages.finish();
  if (copier === 'ferry') result.stages = staged.stages;
  if (options.destinationCpuProfileDir !== undefined) {
    recordProfileWindow(options.destinationCpuProfileDir, {
      copier,
      pid: destination.pid,
      from: staged.profile[0]!.from,
      to: staged.profile.at(-1)!.to,
      ...(copier === 'ferry' ? { stages: staged.profile } : {}),
    });
  }
  await checkCounts(destination.uri, workload, copier);
  if (options.verify === true) {
    await verifyCopy(options.source.uri, destination.uri, copier, copier === 'ferry' ? 'midSync' : 'restored');
    result.equal = true;
  }
  if (destination.shards.length > 0) {
    const documents = await documentsByShard(destination.uri, workload);
    result.destinationShards = destination.shards.map((shard) => ({
      shard,
      cpuSeconds: round(sampler.usage(shardName(shard)).cpuSeconds),
      documents: documents.get(shard) ?? 0,
      documentShare: round((documents.get(shard) ?? 0) / workload.documents, 3),
    }));
  }
  return result;
}

/**
 * The `sharding` of a replica set → sharded copy: every collection on `{_id: "hashed"}`, except
 * one with a unique index (besides `_id`), which a sharded collection allows only when it starts
 * with the key: sharded on that index's fields (ranged) when it is the only one, else unsharded
 * (as are capped collections and views, which mongod does not shard).
 */
async function shardingFor(sourceUri: string, workload: CopyWorkload) {
  const client = await MongoClient.connect(sourceUri);
  try {
    const entries = [];
    for (const ns of Object.keys(workload.documentsByNamespace)) {
      const [database, collection] = [ns.slice(0, ns.indexOf('.')), ns.slice(ns.indexOf('.') + 1)];
      const [entry] = (await client.db(database).listCollections({ name: collection }).toArray()) as Document[];
      if (entry?.type !== 'collection' || (entry.options as Document | undefined)?.capped === true) continue;
      const unique = (await client.db(database).collection(collection).listIndexes().toArray()).filter(
        (index) => index.unique === true && index.name !== '_id_',
      );
      if (unique.length > 1) continue;
      const key =
        unique.length === 0 ? [{ _id: 'hashed' }] : Object.keys(unique[0]!.key as Record<string, unknown>).map((field) => ({ [field]: 1 }));
      entries.push({ database, collection, shardCollection: { key } });
    }
    return { createSupportingIndexes: true, shardingEntries: entries };
  } finally {
    await client.close();
  }
}

/** Progress reads while the copy is far from its end, and near it (and after: index builds, canCommit). */
const SLOW_READ_MS = 1000;
const FAST_READ_MS = 100;

/**
 * When to read Ferry's progress next, for one copy: every 100 ms within about two seconds of the
 * copy's end (by the rate seen so far) and after it, so that each stage's end is timed to 0.1 s;
 * every second before. A read costs Ferry's main thread ~0.2 ms on an idle machine and ~0.8 ms on
 * this one under a copy (the reply's socket write the largest part): read ten times a second
 * throughout, they were ~8 ms of every second of Ferry's CPU, ~0.25 s/GB of an 800 MB copy's
 * figure, a cost of the measurement that an operator reading progress every few seconds does not
 * see and that the other copiers, never asked, did not pay.
 */
export function readPacing(now: () => number = () => performance.now()): (progress: Progress) => number {
  let first: { at: number; bytes: number } | undefined;
  return (progress) => {
    const copy = progress.collectionCopy as { estimatedCopiedBytes: number; estimatedTotalBytes: number } | null | undefined;
    if (copyFinished(progress) || copy === null || copy === undefined || !(copy.estimatedCopiedBytes > 0)) return FAST_READ_MS;
    const at = now();
    first ??= { at, bytes: copy.estimatedCopiedBytes };
    const rate = (copy.estimatedCopiedBytes - first.bytes) / (at - first.at); // bytes per ms
    if (!(rate > 0)) return FAST_READ_MS;
    const remainingMs = (copy.estimatedTotalBytes - copy.estimatedCopiedBytes) / rate;
    return remainingMs > 2 * SLOW_READ_MS ? SLOW_READ_MS : FAST_READ_MS;
  };
}

/** Ferry copies the source into a fresh destination. */
export function measureFerryCopy(options: CopyRunOptions): Promise<CopyMeasurement> {
  const { source, sampler } = options;
  return withFreshDestination(options, async (destination) => {
    const nodeArgs = cpuProfileArgs(options.ferryCpuProfileDir);
    // One instance on a sharded cluster keeps the default id (as mongosync requires).
    const id = destination.shards.length > 0 ? [] : ['--id', 'bench-copy'];
    const flags = ['--cluster0', source.uri, '--cluster1', destination.uri, ...id, ...(options.ferryFlags ?? [])];
    const sharding = destination.shards.length === 0 ? {} : { sharding: await shardingFor(source.uri, options.workload) };
    // With profiles, Ferry's log is kept beside them (its phase lines say where the time went).
    const ferry = await startFerry(
      flags,
      options.ferryEnv ?? {},
      options.ferryCpuProfileDir,
      nodeArgs,
      options.ferryMain === undefined ? {} : { main: options.ferryMain },
    );
    let measured = false;
    try {
      const result = await measureCopy('ferry', ferry.child.pid!, options, destination, async (stages) => {
        const reply = await ferry.post('start', { source: 'cluster0', destination: 'cluster1', ...sharding });
        if (reply.status !== 200) throw new Error(`ferry refused start: ${JSON.stringify(reply.body)}`);
        const canCommit = options.until === 'canCommit';
        await watchProgress(ferry, canCommit ? (progress) => progress.canCommit === true : copyFinished, {
          what: canCommit ? 'canCommit' : 'the copy to complete',
          timeoutMs: options.timeoutMs ?? 30 * 60_000,
          intervalMs: readPacing(),
          onProgress: (progress) => stages.observe(progress),
        });
      });
      measured = true;
      return result;
    } finally {
      sampler.forget('ferry');
      const code = await ferry.stop();
      // Its log is only worth keeping when something went wrong (a failed stop included).
      if (measured && code === 0 && options.ferryCpuProfileDir === undefined)
        await rm(dirname(ferry.logFile), { recursive: true, force: true });
      else if (code !== 0) process.stderr.write(`Ferry's log is kept: ${ferry.logFile}\n`);
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
      return await measureCopy('baseline', child.pid!, options, destination, async () => {
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
