/**
 * Draws the concurrency sweep of a `bench:scale` result as an SVG chart (bench/lib/sweep-chart.ts).
 * `bench:scale` writes `<out>/sweep.svg` itself after a sweep; this redraws one from its JSON.
 *
 *   node dist/bench/sweep-chart.js [bench/results/scale.json] [--out bench/results/sweep.svg]
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { Command } from 'commander';
import { runIfEntryPoint } from '../scripts/lib/entry-point.js';
import { sweepChartSvg, sweepSubtitle } from './lib/sweep-chart.js';
import { DEFAULT_RESULTS_DIR } from './lib/results.js';
import type { ScaleBenchmarkResult } from './scale.js';
import type { MachineInfo } from './lib/results.js';

async function main(argv: string[]): Promise<void> {
  const program = new Command()
    .name('sweep-chart')
    .description("Draws bench:scale's concurrency sweep as an SVG chart")
    .argument('[scale.json]', 'a bench:scale result with a sweep', `${DEFAULT_RESULTS_DIR}scale.json`)
    .option('--out <file>', 'the SVG to write', `${DEFAULT_RESULTS_DIR}sweep.svg`)
    .parse(argv);
  const [file] = program.args as [string];
  const result = JSON.parse(readFileSync(file, 'utf8')) as ScaleBenchmarkResult & { machine?: MachineInfo; command?: string };
  if (result.sweep === undefined)
    throw new Error(`${file} holds no concurrency sweep (run bench:scale with --sweepCopyWorkers and --sweepBatchBytesMB)`);
  const { out } = program.opts<{ out: string }>();
  writeFileSync(out, sweepChartSvg(result.sweep.cells, sweepSubtitle(result.sweep, result.machine, result.command)));
  console.log(`→ ${out}`);
}

runIfEntryPoint(import.meta.url, 'sweep-chart', main);
