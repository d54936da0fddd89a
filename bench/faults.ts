/**
 * The whole fault matrix (issue 18), larger than the seeded part `npm test` runs
 * (test/e2e/fault-matrix.test.ts): every fault kind on every command Ferry issues at start, copy,
 * change-event application and commit (`failCommand`); each cluster restarted with its data
 * mid-copy, mid-application and during COMMITTING, once per seed; Ferry SIGKILLed at seeded moments
 * under a workload, once per seed. Each sync ends COMMITTED and its destination is compared with
 * the source; a difference, or a pause or refusal without a named error, fails the run.
 *
 *   npm run bench:faults -- [--seed 1] [--seeds 3] [--kills 5] [--out bench/results]
 *
 * Prints what the cases came to (the README's reliability figures) and writes `<out>/faults.json`.
 */
import { Command } from 'commander';
import { integer, positiveInteger } from '../scripts/lib/cli-numbers.js';
import { runIfEntryPoint } from '../scripts/lib/entry-point.js';
import {
  allCases,
  describeCase,
  runFailCommandCases,
  runKillScenario,
  runRestartScenario,
  startMatrixClusters,
  summarize,
  type ScenarioResult,
} from '../test/e2e/fault-matrix.js';
import { DEFAULT_RESULTS_DIR, writeResult } from './lib/results.js';

/** Options of `runFaultMatrix`. */
export interface FaultMatrixOptions {
  /** First seed (workloads, fault variants, kill moments). Default 1. */
  seed?: number;
  /** Seeds of the restart and kill scenarios (seed, seed+1, ...). Default 3. */
  seeds?: number;
  /** Kills of Ferry per kill scenario (one more during COMMITTING). Default 5. */
  kills?: number;
  /** Directory of `faults.json`. Default `bench/results/`. */
  out?: string;
}

export async function runFaultMatrix(options: FaultMatrixOptions = {}): Promise<void> {
  const seed = options.seed ?? 1;
  const seeds = options.seeds ?? 3;
  const kills = options.kills ?? 5;
  const started = Date.now();
  const clusters = await startMatrixClusters();
  const scenarios: ScenarioResult[] = [];
  try {
    const cases = allCases();
    const failCommand = await runFailCommandCases(clusters, `b${seed}_`, cases, { seed, maxScenarios: 12 });
    scenarios.push(...failCommand.scenarios);
    for (let s = seed; s < seed + seeds; s++) {
      scenarios.push(await runRestartScenario(clusters, `br${s}`, s));
      scenarios.push(await runKillScenario(clusters, `bk${s}`, s, kills));
    }
    const summary = summarize(scenarios, failCommand.unreached);
    console.log(summary);
    const results = scenarios.flatMap((s) => s.results);
    const unnamed = results.filter(
      (r) => (r.outcome === 'paused' || r.outcome === 'refused') && !/\b[A-Z][a-z]+[A-Z][A-Za-z]+\b/.test(r.error ?? ''),
    );
    const wrong = scenarios.filter((s) => s.differences.length > 0);
    const path = writeResult(options.out ?? DEFAULT_RESULTS_DIR, 'faults', {
      seed,
      seeds,
      kills,
      seconds: Math.round((Date.now() - started) / 1000),
      syncs: scenarios.length,
      committed: scenarios.filter((s) => s.committed).length,
      wrongDestinations: wrong.map((s) => ({ name: s.name, differences: s.differences })),
      failPointCases: results.length,
      outcomes: Object.fromEntries(['absorbed', 'paused', 'refused'].map((o) => [o, results.filter((r) => r.outcome === o).length])),
      notReached: failCommand.unreached.map(describeCase),
      otherFaults: scenarios.flatMap((s) => s.injected.map((i) => `${s.name}: ${i}`)),
      namedErrors: scenarios.flatMap((s) => s.errors.map((e) => `${s.name}: ${e}`)),
      summary,
    });
    console.log(`→ ${path}`);
    if (wrong.length > 0 || unnamed.length > 0) {
      throw new Error(
        `${wrong.length} sync(s) with a wrong destination (${wrong.map((s) => s.name).join(', ')}), ` +
          `${unnamed.length} pause(s) or refusal(s) without a named error`,
      );
    }
  } finally {
    await clusters.stop();
  }
}

async function main(argv: string[]): Promise<void> {
  const flags = new Command()
    .name('bench:faults')
    .description('the whole fault matrix: every fault kind on every command, restarts and kills over several seeds')
    .option('--seed <n>', 'first seed', integer, 1)
    .option('--seeds <n>', 'seeds of the restart and kill scenarios', positiveInteger, 3)
    .option('--kills <n>', 'kills of Ferry per kill scenario', positiveInteger, 5)
    .option('--out <dir>', 'directory of faults.json', DEFAULT_RESULTS_DIR)
    .parse(argv)
    .opts<FaultMatrixOptions>();
  await runFaultMatrix(flags);
}

runIfEntryPoint(import.meta.url, 'bench:faults', main);
