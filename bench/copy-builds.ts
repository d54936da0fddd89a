/**
 * Two or more builds of Ferry side by side: whole copies of one generated source into fresh
 * destinations, each build's `dist/src/cli/main.js` in turn, round after round in a rotated order
 * (the machine is shared and noisy: alternating puts both builds under the same noise). Ferry's
 * time and CPU run from `start` until the copy is complete, as in bench:scale. This is how a change
 * to the copy's CPU per GB is measured before it lands: build the old commit into a directory of
 * its own (`git worktree add /tmp/old <commit> && cd /tmp/old && npm ci`), then
 *
 *   npm run build && node dist/bench/copy-builds.js --builds old=/tmp/old,new=. [--sizeMB 800] [--runs 3]
 *
 * The clusters are this build's. Prints each run and each build's medians (CPU s/GB, kernel share,
 * peak RSS, MB/s) and the ratio of each build's median CPU per GB to the first's; writes
 * bench/results/copy-builds.json (or `--out`). With `--until canCommit` Ferry's clock runs on to
 * `canCommit` (the embedded verifier's first pass included, as in bench:copy with MongoDB's tools),
 * and each run's stages (copy, index builds, until canCommit) are printed: how a change to the
 * verifier is measured.
 */
import { existsSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join, resolve } from 'node:path';
import { Command, InvalidArgumentError } from 'commander';
import { generateDataset } from '../scripts/generate.js';
import { integer, positiveInteger, positiveNumber } from '../scripts/lib/cli-numbers.js';
import { runIfEntryPoint } from '../scripts/lib/entry-point.js';
import { spawnCluster } from '../test/cluster/index.js';
import { copyWorkload, describeMeasurement, measureFerryCopy, stageMedians, type CopyMeasurement } from './lib/copy-runs.js';
import { UsageSampler } from './lib/process-usage.js';
import { DEFAULT_RESULTS_DIR, GiB, median, MiB, round, writeResult } from './lib/results.js';

/** A build compared: its label and the entry point of its ferry process. */
export interface Build {
  label: string;
  main: string;
}

/** `label=dir` (or `dir`, labelled by itself) entries, each a checkout whose `dist/` is built. */
export function parseBuilds(value: string): Build[] {
  const builds = value.split(',').map((entry): Build => {
    const at = entry.indexOf('=');
    const dir = at < 0 ? entry : entry.slice(at + 1);
    const main = join(resolve(dir), 'dist', 'src', 'cli', 'main.js');
    if (!existsSync(main)) throw new InvalidArgumentError(`${dir} holds no build (${main} is missing: run npm ci there)`);
    return { label: at < 0 ? dir : entry.slice(0, at), main };
  });
  if (builds.length < 2) throw new InvalidArgumentError('name at least two builds');
  return builds;
}

function untilStage(value: string): 'copy' | 'canCommit' {
  if (value !== 'copy' && value !== 'canCommit') throw new InvalidArgumentError('copy or canCommit');
  return value;
}

interface Run extends CopyMeasurement {
  build: string;
  round: number;
  loadAverage: number;
}

async function main(argv: string[]): Promise<void> {
  const flags = new Command()
    .name('bench:copy-builds')
    .requiredOption('--builds <list>', 'label=dir,... (each dir a built checkout; the first is the reference)', parseBuilds)
    .option('--sizeMB <n>', 'data size, MiB', positiveNumber, 800)
    .option('--runs <n>', 'rounds (each build once per round)', positiveInteger, 3)
    .option('--seed <n>', 'generator seed', integer, 1)
    .option('--until <stage>', "where Ferry's clock stops: copy or canCommit", untilStage, 'copy')
    .option('--out <dir>', 'results directory', DEFAULT_RESULTS_DIR)
    .parse(argv)
    .opts<{ builds: Build[]; sizeMB: number; runs: number; seed: number; until: 'copy' | 'canCommit'; out: string }>();
  const { builds } = flags;
  const sampler = new UsageSampler();
  const source = await spawnCluster();
  try {
    sampler.watch('source', source.pid);
    const report = await generateDataset({ uri: source.uri, sizeMB: flags.sizeMB, seed: flags.seed });
    const workload = copyWorkload(report);
    console.log(`${flags.sizeMB} MB: ${(report.totalBytes / MiB).toFixed(1)} MB in ${report.totalDocuments} documents`);
    const runs: Run[] = [];
    for (let round = 0; round < flags.runs; round++) {
      for (const build of builds.map((_, i) => builds[(i + round) % builds.length]!)) {
        const loadAverage = Math.round(loadavg()[0]! * 100) / 100;
        const measured = await measureFerryCopy({ source, workload, sampler, ferryMain: build.main, until: flags.until });
        runs.push({ ...measured, build: build.label, round, loadAverage });
        const stages = (measured.stages ?? []).map((stage) => `${stage.stage} ${stage.seconds.toFixed(2)} s`).join(', ');
        console.log(`  round ${round + 1} ${build.label.padEnd(10)} load ${loadAverage}  ${describeMeasurement(measured)}  [${stages}]`);
      }
    }
    const medians = builds.map(({ label }) => {
      const mine = runs.filter((run) => run.build === label);
      const of = (pick: (run: Run) => number) => round(median(mine.map(pick)));
      return {
        build: label,
        cpuSecondsPerGB: of((run) => run.cpuSecondsPerGB),
        systemCpuSecondsPerGB: of((run) => run.systemCpuSeconds / (report.totalBytes / GiB)),
        peakRssMB: of((run) => run.peakRssMB),
        MBps: of((run) => run.MBps),
        seconds: of((run) => run.seconds),
        stages: stageMedians(mine.map((run) => run.stages ?? [])),
        runs: mine.map((run) => run.cpuSecondsPerGB),
      };
    });
    for (const m of medians) {
      const ratio = round(m.cpuSecondsPerGB / medians[0]!.cpuSecondsPerGB);
      console.log(
        `  median ${m.build.padEnd(10)} ${m.cpuSecondsPerGB} CPU-s/GB (${m.systemCpuSecondsPerGB} kernel, ×${ratio} the first's), ` +
          `peak RSS ${m.peakRssMB} MB, ${m.MBps} MB/s, ${m.seconds} s  [runs ${m.runs.join(' · ')}]`,
      );
      console.log(`         stages ${m.stages.map((stage) => `${stage.stage} ${stage.seconds} s`).join(', ')}`);
    }
    console.log(
      `→ ${writeResult(flags.out, 'copy-builds', { sizeMB: flags.sizeMB, until: flags.until, bytes: report.totalBytes, builds, runs, medians })}`,
    );
  } finally {
    sampler.close();
    await source.stop();
  }
}

runIfEntryPoint(import.meta.url, 'bench:copy-builds', main);
