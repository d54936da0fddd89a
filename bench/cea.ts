/**
 * Change-event application benchmark. Two test clusters (own processes), the generator's data on
 * the source, the real `ferry` process syncing it; once the sync can commit (copy done, caught up):
 *
 * 1. Sustained load: the write workload (scripts/workload.ts) at `--opsPerSecond` for `--seconds`.
 *    Reported: events Ferry applied per second over the window; lag p50/p99/max measured by a
 *    probe (bench/lib/lag-probe.ts: a source write's time until the destination holds it), and
 *    Ferry's own lag and apply-latency histograms (`GET /metrics`).
 * 2. Capacity: the sync is paused, a backlog of `--backlogSeconds` of the workload at full speed is
 *    written, the sync resumed; events applied per second while draining the backlog is the
 *    application rate Ferry sustains when it has work queued (`eventsPerSecond`).
 * 3. Ramp: the workload at rising rates (from `--rampFrom`, ×1.5 per step of `--stepSeconds`, at most `--maxSteps`)
 *    until the probe's p99 lag exceeds 2 s or the workload cannot reach the rate (the clusters or
 *    the generator are the limit, not Ferry): `maxSustainedOpsPerSecond` is the highest rate
 *    reached with p99 lag under 2 s, with what stopped the ramp.
 *
 *   npm run bench:cea -- [--seconds 30] [--opsPerSecond 3000] [--sizeMB 20] [--backlogSeconds 10]
 *                        [--stepSeconds 10] [--maxSteps 6] [--rampFrom 1000] [--loadLevel n] [--out bench/results]
 *                        [--cpuProf dir]
 *
 * Ferry's own CPU and peak RSS and the clusters' CPU are sampled from /proc. Writes `<out>/cea.json`.
 */
import { rm } from 'node:fs/promises';
import { dirname } from 'node:path';
import { performance } from 'node:perf_hooks';
import { Command } from 'commander';
import { generateDataset } from '../scripts/generate.js';
import { integer, positiveInteger, positiveNumber } from '../scripts/lib/cli-numbers.js';
import { readApplyHistograms, type Summary } from '../scripts/lib/ferry-metrics.js';
import { assertAppliesChanges, watchProgress } from '../scripts/lib/sync-watch.js';
import { runIfEntryPoint } from '../scripts/lib/entry-point.js';
import { startWorkload, type WorkloadStats } from '../scripts/workload.js';
import { spawnCluster } from '../test/cluster/index.js';
import { startFerry, type FerryProcess, type Progress } from '../test/e2e/ferry-process.js';
import { LagProbe } from './lib/lag-probe.js';
import { UsageSampler } from './lib/process-usage.js';
import { DEFAULT_RESULTS_DIR, percentile, round, writeResult } from './lib/results.js';

/** Options of `runCeaBenchmark`. */
export interface CeaBenchmarkOptions {
  /** Length of the sustained-load window, s. Default 30. */
  seconds?: number;
  /** Workload rate of the sustained window, writes/s. Default 3000. */
  opsPerSecond?: number;
  /** Size of the generated data the sync starts from, MiB. Default 20. */
  sizeMB?: number;
  /** Generator and workload seed. Default 1. */
  seed?: number;
  /** Seconds of full-speed workload written while the sync is paused (the backlog). Default 10. */
  backlogSeconds?: number;
  /** Length of each ramp step, s. Default 10. */
  stepSeconds?: number;
  /** Ramp steps at most (0: no ramp). Default 6. */
  maxSteps?: number;
  /** Rate of the ramp's first step, writes/s. Default 1000. */
  rampFrom?: number;
  /** Ferry's `--loadLevel`. Default: Ferry's default. */
  loadLevel?: number;
  /** Directory of `cea.json`. Default `bench/results/`. */
  out?: string;
  /** Write CPU profiles of Ferry (every thread) here (`node --cpu-prof`). Default none. */
  cpuProf?: string;
  print?: (line: string) => void;
}

/** Lag figures of a window, seconds. */
export interface LagFigures {
  p50: number;
  p99: number;
  max: number;
  samples: number;
}

/** One step of load. */
export interface LoadStep {
  targetOpsPerSecond: number;
  achievedOpsPerSecond: number;
  /** Documents the source changed per second (its change events). */
  sourceEventsPerSecond: number;
  appliedEventsPerSecond: number;
  lag: LagFigures;
  workloadErrors: number;
}

export interface CeaBenchmarkResult {
  sizeMB: number;
  opsPerSecond: number;
  seconds: number;
  /**
   * Events applied per second while draining a backlog, from the first applied event to the last:
   * Ferry's application rate with work queued (resuming, which reopens the stream and starts the
   * apply threads, is `backlogResumeSeconds`, apart).
   */
  eventsPerSecond: number;
  /** Events Ferry applied from the backlog (its own count), and the time from resume to the last of them. */
  backlogEvents: number;
  backlogDrainSeconds: number;
  /** From resume to the first backlog event seen applied (stream reopened, threads started). */
  backlogResumeSeconds: number;
  /** The sustained window. */
  sustained: LoadStep;
  lagP50Seconds: number;
  lagP99Seconds: number;
  lagMaxSeconds: number;
  /** How lag was measured. */
  lagSource: string;
  /** Ferry's own histograms at the end of the sustained window (lag and one batch's apply time), seconds. */
  ferryLag: Summary;
  applyLatency: Summary;
  /** Highest workload rate reached with p99 lag ≤ 2 s (0 if none). */
  maxSustainedOpsPerSecond: number;
  /** What ended the ramp. */
  rampStoppedBy: 'lag' | 'workload could not reach the rate' | 'maxSteps';
  ramp: LoadStep[];
  /** Ferry's CPU per 1,000 events applied during the sustained window. */
  ferryCpuSecondsPer1000Events: number;
  ferryPeakRssMB: number;
  /** The two test clusters' CPU during the sustained window, s (they share the cores with Ferry). */
  clustersCpuSeconds: number;
}

const LAG_LIMIT_SECONDS = 2;
/** A backlog is drained when no event has been applied for this long (and lag is 0). */
const DRAINED_QUIET_MS = 1000;
/** Below this share of its target rate the workload is the limit, not Ferry. */
const REACHED_SHARE = 0.9;

function lagFigures(samplesMs: readonly number[]): LagFigures {
  if (samplesMs.length === 0) return { p50: 0, p99: 0, max: 0, samples: 0 };
  return {
    p50: round(percentile(samplesMs, 50) / 1000, 3),
    p99: round(percentile(samplesMs, 99) / 1000, 3),
    max: round(Math.max(...samplesMs) / 1000, 3),
    samples: samplesMs.length,
  };
}

/** Events applied so far by this Ferry process. */
async function eventsApplied(ferry: FerryProcess): Promise<number> {
  return (await ferry.progress()).totalEventsApplied ?? 0;
}

export async function runCeaBenchmark(options: CeaBenchmarkOptions = {}): Promise<CeaBenchmarkResult & { path: string }> {
  const seconds = options.seconds ?? 30;
  const opsPerSecond = options.opsPerSecond ?? 3000;
  const sizeMB = options.sizeMB ?? 20;
  const seed = options.seed ?? 1;
  const print = options.print ?? ((line: string) => console.log(line));
  const sampler = new UsageSampler();
  const [source, destination] = [await spawnCluster(), await spawnCluster()];
  let ferry: FerryProcess | undefined;
  let probe: LagProbe | undefined;
  let measured = false;
  try {
    sampler.watch('source', source.pid);
    sampler.watch('destination', destination.pid);
    await generateDataset({ uri: source.uri, sizeMB, seed });
    probe = new LagProbe({ sourceUri: source.uri, destinationUri: destination.uri });
    await probe.prepare();
    const flags = ['--cluster0', source.uri, '--cluster1', destination.uri, '--id', 'bench-cea'];
    if (options.loadLevel !== undefined) flags.push('--loadLevel', String(options.loadLevel));
    ferry = await startFerry(
      flags,
      {},
      undefined,
      options.cpuProf === undefined ? [] : ['--cpu-prof', `--cpu-prof-dir=${options.cpuProf}`],
    );
    sampler.watch('ferry', ferry.child.pid!);
    const reply = await ferry.post('start', { source: 'cluster0', destination: 'cluster1' });
    if (reply.status !== 200) throw new Error(`ferry refused start: ${JSON.stringify(reply.body)}`);
    const canCommit = (p: Progress) => {
      assertAppliesChanges(p);
      return p.canCommit === true;
    };
    await watchProgress(ferry, canCommit, { what: 'the copy to complete and events to catch up (canCommit)', timeoutMs: 30 * 60_000 });
    print(`${sizeMB} MB copied; Ferry applies change events (canCommit)`);
    probe.start();
    // Each workload inserts in its own _id range; its choices follow the seed.
    let idRange = 0;

    /** Runs the workload at `rate` for `length` seconds and measures what Ferry did meanwhile. */
    const loadStep = async (rate: number, length: number): Promise<LoadStep> => {
      probe!.takeSamples();
      const appliedBefore = await eventsApplied(ferry!);
      const started = performance.now();
      const workload = await startWorkload({ uri: source.uri, opsPerSecond: rate, seed, idRange: ++idRange, seconds: length });
      const stats: WorkloadStats = await workload.finished;
      // Waits for the window's outstanding probe (see takeWindowSamples), so the window ends once
      // Ferry applied at least the probe written during it.
      const lag = lagFigures(await probe!.takeWindowSamples());
      const elapsed = (performance.now() - started) / 1000;
      const applied = (await eventsApplied(ferry!)) - appliedBefore;
      return {
        targetOpsPerSecond: rate,
        achievedOpsPerSecond: Math.round(stats.writes / stats.seconds),
        sourceEventsPerSecond: Math.round(stats.changes / stats.seconds),
        // Two decimals: a short window on a loaded machine may apply only a few events.
        appliedEventsPerSecond: Number((applied / elapsed).toFixed(2)),
        lag,
        workloadErrors: stats.errors,
      };
    };

    // 1. Sustained load.
    sampler.restart('ferry');
    sampler.restart('source');
    sampler.restart('destination');
    const appliedAtStart = await eventsApplied(ferry);
    const sustained = await loadStep(opsPerSecond, seconds);
    const appliedInWindow = (await eventsApplied(ferry)) - appliedAtStart;
    const ferryCpu = sampler.usage('ferry').cpuSeconds;
    // Nothing was applied before the window but the probe's first writes: these are the window's.
    const histograms = await readApplyHistograms(ferry.base);
    const clustersCpu = sampler.usage('source').cpuSeconds + sampler.usage('destination').cpuSeconds;
    print(
      `sustained ${seconds} s at ${opsPerSecond} writes/s: reached ` +
        `${sustained.achievedOpsPerSecond}/s, applied ${sustained.appliedEventsPerSecond} events/s, ` +
        `lag p50 ${sustained.lag.p50} s, p99 ${sustained.lag.p99} s, max ${sustained.lag.max} s (probe); ` +
        `Ferry's histogram: lag p50 ${histograms.lag.p50.toFixed(3)} s, p99 ` +
        `${histograms.lag.p99.toFixed(3)} s, max ${histograms.lag.max.toFixed(3)} s, ` +
        `apply p50 ${(histograms.applyLatency.p50 * 1000).toFixed(1)} ms, p99 ${(histograms.applyLatency.p99 * 1000).toFixed(1)} ms`,
    );

    // 2. Capacity: drain a backlog written while paused.
    await probe.stop();
    const paused = await ferry.post('pause');
    if (paused.status !== 200) throw new Error(`ferry refused pause: ${JSON.stringify(paused.body)}`);
    await watchProgress(ferry, (p) => p.state === 'PAUSED', { what: 'the sync to pause', timeoutMs: 120_000, pausedIsFailure: false });
    const backlog = await startWorkload({
      uri: source.uri,
      opsPerSecond: 1_000_000,
      seed,
      idRange: ++idRange,
      seconds: options.backlogSeconds ?? 10,
    });
    const backlogStats = await backlog.finished;
    const appliedBeforeResume = await eventsApplied(ferry);
    const resumed = await ferry.post('resume');
    if (resumed.status !== 200) throw new Error(`ferry refused resume: ${JSON.stringify(resumed.body)}`);
    const resumedAt = performance.now();
    // Drained: the applied count has stopped growing and Ferry reports no lag. The count is
    // Ferry's own (it may coalesce events the workload counted apart). A resumed applier may
    // count from zero again: count from whichever base the counter shows.
    let base: number | undefined;
    let applied = 0;
    let lastGrowth = resumedAt;
    // The first progress call that shows events applied: the rate is measured from there.
    let firstSeen: { at: number; applied: number } | undefined;
    await watchProgress(
      ferry,
      (p) => {
        const total = p.totalEventsApplied ?? 0;
        base ??= total < appliedBeforeResume ? 0 : appliedBeforeResume;
        if (total - base > applied) {
          applied = total - base;
          lastGrowth = performance.now();
          firstSeen ??= { at: lastGrowth, applied };
        }
        return applied > 0 && p.lagTimeSeconds === 0 && performance.now() - lastGrowth >= DRAINED_QUIET_MS;
      },
      { what: `the ${backlogStats.changes}-event backlog to be applied`, timeoutMs: 30 * 60_000, intervalMs: 50 },
    );
    const drainSeconds = (lastGrowth - resumedAt) / 1000;
    const resumeSeconds = (firstSeen!.at - resumedAt) / 1000;
    // A backlog applied between two progress calls has no rate of its own: fall back to resume → end.
    const steady =
      lastGrowth > firstSeen!.at
        ? { events: applied - firstSeen!.applied, seconds: (lastGrowth - firstSeen!.at) / 1000 }
        : { events: applied, seconds: drainSeconds };
    const eventsPerSecond = Math.round(steady.events / steady.seconds);
    print(
      `backlog of ${backlogStats.changes} source changes (written at ${Math.round(backlogStats.writesPerSecond)} writes/s while paused): ` +
        `${applied} events applied ${drainSeconds.toFixed(2)} s after resume (first seen after ${resumeSeconds.toFixed(2)} s); ` +
        `${steady.events} in ${steady.seconds.toFixed(2)} s from there = ${eventsPerSecond} events/s`,
    );

    // 3. Ramp.
    probe.start();
    const ramp: LoadStep[] = [];
    let rampStoppedBy: CeaBenchmarkResult['rampStoppedBy'] = 'maxSteps';
    let maxSustained = 0;
    let rate = options.rampFrom ?? 1000;
    for (let step = 0; step < (options.maxSteps ?? 6); step++, rate = Math.round(rate * 1.5)) {
      const result = await loadStep(rate, options.stepSeconds ?? 10);
      ramp.push(result);
      print(
        `ramp ${rate} writes/s: reached ${result.achievedOpsPerSecond}/s, applied ${result.appliedEventsPerSecond} events/s, ` +
          `lag p99 ${result.lag.p99} s`,
      );
      if (result.lag.p99 > LAG_LIMIT_SECONDS) {
        rampStoppedBy = 'lag';
        break;
      }
      maxSustained = Math.max(maxSustained, result.achievedOpsPerSecond);
      if (result.achievedOpsPerSecond < rate * REACHED_SHARE) {
        rampStoppedBy = 'workload could not reach the rate';
        break;
      }
    }
    await probe.stop();

    const result: CeaBenchmarkResult = {
      sizeMB,
      opsPerSecond,
      seconds,
      eventsPerSecond,
      backlogEvents: applied,
      backlogDrainSeconds: round(drainSeconds, 2),
      backlogResumeSeconds: round(resumeSeconds, 2),
      sustained,
      lagP50Seconds: sustained.lag.p50,
      lagP99Seconds: sustained.lag.p99,
      lagMaxSeconds: sustained.lag.max,
      lagSource: 'probe: a source write until the destination holds it, every 250 ms',
      ferryLag: histograms.lag,
      applyLatency: histograms.applyLatency,
      maxSustainedOpsPerSecond: maxSustained,
      rampStoppedBy,
      ramp,
      ferryCpuSecondsPer1000Events: round(ferryCpu / Math.max(1, appliedInWindow / 1000), 3),
      ferryPeakRssMB: round(sampler.usage('ferry').peakRssMB, 1),
      clustersCpuSeconds: round(clustersCpu),
    };
    const path = writeResult(options.out ?? DEFAULT_RESULTS_DIR, 'cea', result);
    measured = true;
    print(`max sustained with p99 lag ≤ ${LAG_LIMIT_SECONDS} s: ${maxSustained} writes/s (ramp stopped by: ${rampStoppedBy}) → ${path}`);
    return { ...result, path };
  } finally {
    sampler.close();
    await probe?.close();
    await ferry?.stop();
    // Ferry's log is only worth keeping when something went wrong.
    if (measured && ferry !== undefined) await rm(dirname(ferry.logFile), { recursive: true, force: true });
    await Promise.all([source.stop(), destination.stop()]);
  }
}

async function main(argv: string[]): Promise<void> {
  const flags = new Command()
    .name('bench:cea')
    .description('Change-event application under a sustained write load: events/s, lag, highest sustained load')
    .option('--seconds <n>', 'length of the sustained-load window', positiveNumber, 30)
    .option('--opsPerSecond <n>', 'workload rate of the sustained window', positiveNumber, 3000)
    .option('--sizeMB <n>', 'size of the generated data the sync starts from, MiB', positiveNumber, 20)
    .option('--seed <n>', 'generator and workload seed', integer, 1)
    .option('--backlogSeconds <n>', 'seconds of full-speed writes while the sync is paused', positiveNumber, 10)
    .option('--stepSeconds <n>', 'length of each ramp step', positiveNumber, 10)
    .option('--maxSteps <n>', 'ramp steps at most', integer, 6)
    .option('--rampFrom <n>', 'rate of the first ramp step', positiveNumber, 1000)
    .option('--loadLevel <n>', "Ferry's --loadLevel (default: Ferry's default)", positiveInteger)
    .option('--out <dir>', 'directory of cea.json', DEFAULT_RESULTS_DIR)
    .option('--cpuProf <dir>', "write CPU profiles of Ferry's threads here (node --cpu-prof)")
    .parse(argv)
    .opts<CeaBenchmarkOptions>();
  await runCeaBenchmark(flags);
}

runIfEntryPoint(import.meta.url, 'bench:cea', main);
