/**
 * The copy's read paths side by side (src/cluster/reply-reader.ts): whole Ferry copies of one
 * generated source into fresh destinations, per size, in three configurations:
 * - `driver+raw`: the driver reads and writes (today's default),
 * - `driver+wire`: the driver reads, Ferry's own connections write (FERRY_COPY_WRITE_PATH=wire),
 * - `wire+wire`: Ferry's own connections read and write, each reply's documents written from the
 *   buffer they were received in (FERRY_COPY_READ_PATH=wire as well).
 * Each round runs the three in a rotated order (the machine is shared and noisy); each run records
 * the 1-minute load average at its start. Ferry's time runs from `start` until the copy is complete.
 *
 *   npm run build && node dist/bench/copy-read-path.js [--sizes 200,800] [--runs 3] [--verifyUpTo 200]
 *
 * Prints each run and each configuration's medians (CPU s/GB, kernel share, peak RSS, MB/s);
 * writes bench/results/copy-read-path.json (or `--out`).
 */
import { loadavg } from 'node:os';
import { Command } from 'commander';
import { generateDataset } from '../scripts/generate.js';
import { integer, positiveInteger, positiveNumberList } from '../scripts/lib/cli-numbers.js';
import { runIfEntryPoint } from '../scripts/lib/entry-point.js';
import { spawnCluster } from '../test/cluster/index.js';
import { copyWorkload, describeMeasurement, measureFerryCopy, type CopyMeasurement } from './lib/copy-runs.js';
import { UsageSampler } from './lib/process-usage.js';
import { DEFAULT_RESULTS_DIR, median, MiB, round, writeResult } from './lib/results.js';

/** The configurations compared, by the environment of the ferry process. */
export const READ_PATH_CONFIGURATIONS: Readonly<Record<string, Record<string, string>>> = Object.freeze({
  'driver+raw': { FERRY_COPY_READ_PATH: 'driver', FERRY_COPY_WRITE_PATH: 'raw' },
  'driver+wire': { FERRY_COPY_READ_PATH: 'driver', FERRY_COPY_WRITE_PATH: 'wire' },
  'wire+wire': { FERRY_COPY_READ_PATH: 'wire', FERRY_COPY_WRITE_PATH: 'wire' },
});

interface Run extends CopyMeasurement {
  configuration: string;
  round: number;
  loadAverage: number;
}

async function main(argv: string[]): Promise<void> {
  const flags = new Command()
    .name('bench:copy-read-path')
    .option('--sizes <list>', 'data sizes, MiB', positiveNumberList, [200, 800])
    .option('--runs <n>', 'rounds (each configuration once per round)', positiveInteger, 3)
    .option('--verifyUpTo <MiB>', 'compare each destination with the source up to this size', integer, 200)
    .option('--seed <n>', 'generator seed', integer, 1)
    .option('--out <dir>', 'results directory', DEFAULT_RESULTS_DIR)
    .parse(argv)
    .opts<{ sizes: number[]; runs: number; verifyUpTo: number; seed: number; out: string }>();
  const names = Object.keys(READ_PATH_CONFIGURATIONS);
  const sampler = new UsageSampler();
  const results: { sizeMB: number; bytes: number; runs: Run[]; medians: Record<string, Record<string, number>> }[] = [];
  try {
    for (const sizeMB of flags.sizes) {
      const source = await spawnCluster();
      try {
        sampler.watch('source', source.pid);
        const report = await generateDataset({ uri: source.uri, sizeMB, seed: flags.seed });
        const workload = copyWorkload(report);
        console.log(`${sizeMB} MB: ${(report.totalBytes / MiB).toFixed(1)} MB in ${report.totalDocuments} documents`);
        const runs: Run[] = [];
        for (let round = 0; round < flags.runs; round++) {
          const order = names.map((_, i) => names[(i + round) % names.length]!);
          for (const configuration of order) {
            const loadAverage = round2(loadavg()[0]!);
            const measured = await measureFerryCopy({
              source,
              workload,
              sampler,
              ferryEnv: READ_PATH_CONFIGURATIONS[configuration]!,
              verify: sizeMB <= flags.verifyUpTo,
            });
            runs.push({ ...measured, configuration, round, loadAverage });
            console.log(`  round ${round + 1} ${configuration.padEnd(11)} load ${loadAverage}  ${describeMeasurement(measured)}`);
          }
        }
        const medians: Record<string, Record<string, number>> = {};
        for (const configuration of names) {
          const mine = runs.filter((run) => run.configuration === configuration);
          const of = (pick: (run: Run) => number) => round(median(mine.map(pick)));
          medians[configuration] = {
            cpuSecondsPerGB: of((run) => run.cpuSecondsPerGB),
            systemCpuSecondsPerGB: of((run) => run.systemCpuSeconds / (report.totalBytes / 1024 ** 3)),
            peakRssMB: of((run) => run.peakRssMB),
            MBps: of((run) => run.MBps),
          };
          const m = medians[configuration]!;
          console.log(
            `  median ${configuration.padEnd(11)} ${m.cpuSecondsPerGB} CPU-s/GB (${m.systemCpuSecondsPerGB} kernel), ` +
              `peak RSS ${m.peakRssMB} MB, ${m.MBps} MB/s  [runs ${mine.map((run) => run.cpuSecondsPerGB).join(' · ')}]`,
          );
        }
        results.push({ sizeMB, bytes: report.totalBytes, runs, medians });
      } finally {
        sampler.forget('source');
        await source.stop();
      }
    }
  } finally {
    sampler.close();
  }
  console.log(`→ ${writeResult(flags.out, 'copy-read-path', { configurations: READ_PATH_CONFIGURATIONS, results })}`);
}

const round2 = (value: number) => Math.round(value * 100) / 100;

runIfEntryPoint(import.meta.url, 'bench:copy-read-path', main);
