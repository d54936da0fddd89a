/**
 * Result files of the benchmarks (`bench/results/<name>.json`) and the small statistics they
 * quote. Every file carries the machine it was measured on and the command that produced it, so
 * a figure is never separated from its context.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, totalmem } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

export { median, percentile } from '../../scripts/lib/stats.js';

export const MiB = 1024 * 1024;
export const GiB = 1024 * MiB;

/** Where results go unless `--out` says otherwise: `bench/results/` of the checkout. */
export const DEFAULT_RESULTS_DIR = fileURLToPath(new URL('../../../bench/results/', import.meta.url));

/** The machine a result was measured on. */
export interface MachineInfo {
  cpuModel: string;
  cpus: number;
  memoryGB: number;
  node: string;
  platform: string;
  /** 1-minute load average when the file was written (other work competing for the cores). */
  loadAverage1m: number;
}

export function machineInfo(): MachineInfo {
  const cores = cpus();
  return {
    cpuModel: cores[0]?.model ?? 'unknown',
    cpus: cores.length,
    memoryGB: Math.round((totalmem() / 1024 ** 3) * 10) / 10,
    node: process.version,
    platform: `${process.platform} ${process.arch}`,
    loadAverage1m: loadavg()[0]!,
  };
}

/** Writes `<dir>/<name>.json` with the figures, the command line and the machine; returns its path. */
export function writeResult(dir: string, name: string, figures: object): string {
  mkdirSync(dir, { recursive: true });
  const path = join(dir, `${name}.json`);
  const record = {
    ...figures,
    measuredAt: new Date().toISOString(),
    command: ['node', ...process.argv.slice(1)].join(' '),
    machine: machineInfo(),
  };
  writeFileSync(path, JSON.stringify(record, null, 2) + '\n');
  return path;
}

/** Rounds to `digits` decimals (figures in result files need no more). */
export function round(value: number, digits = 2): number {
  const factor = 10 ** digits;
  return Math.round(value * factor) / factor;
}
