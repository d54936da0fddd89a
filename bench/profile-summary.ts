/**
 * Where the time goes in V8 CPU profiles (`node --cpu-prof`, one `.cpuprofile` per thread): busy
 * time per thread, busy time by component (Ferry's own code, the MongoDB driver, bson, other
 * packages, Node's internals, garbage collection), and the functions with the most self time.
 *
 *   node dist/bench/profile-summary.js <dir with .cpuprofile files> [--top 20]
 *
 * `bench:copy -- --cpuProf <dir>` writes such a directory for the ferry process.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { Command } from 'commander';
import { positiveInteger } from '../scripts/lib/cli-numbers.js';

/** A node of a V8 CPU profile's call tree. */
export interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}

/** A `.cpuprofile` file: the call tree, and which node each sample hit (times in µs on the monotonic clock). */
export interface CpuProfile {
  nodes: ProfileNode[];
  startTime: number;
  samples: number[];
  timeDeltas: number[];
}

/** Self time of one function, ms. */
export interface FunctionTime {
  name: string;
  component: string;
  ms: number;
}

export interface ThreadSummary {
  file: string;
  /** Sampled time that was not idle, ms. */
  busyMs: number;
  idleMs: number;
  byComponent: Record<string, number>;
}

export interface ProfileSummary {
  threads: ThreadSummary[];
  busyMs: number;
  byComponent: Record<string, number>;
  top: FunctionTime[];
}

/** The part of the program a function belongs to, from its script URL. */
export function componentOf(frame: ProfileNode['callFrame']): string {
  const { url, functionName } = frame;
  if (functionName === '(garbage collector)') return 'garbage collection';
  if (functionName === '(idle)') return 'idle';
  if (functionName === '(program)' || functionName === '(root)') return 'V8 / native (program)';
  const packageMatch = /node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(url);
  if (packageMatch !== null) return packageMatch[1] === 'mongodb' ? 'mongodb driver' : packageMatch[1]!;
  if (url.startsWith('node:') || url === '') return 'node internals';
  if (/\/dist\/(src|workers)\//.test(url)) return 'ferry';
  return 'other';
}

function shortUrl(url: string): string {
  const index = url.search(/node_modules\/|dist\//);
  return index >= 0 ? url.slice(index).replace(/^node_modules\//, '') : url;
}

/** Summarizes every `.cpuprofile` in `dir`. */
export function summarizeProfiles(dir: string): ProfileSummary {
  const files = readdirSync(dir)
    .filter((name) => name.endsWith('.cpuprofile'))
    .sort();
  const functionTimes = new Map<string, FunctionTime>();
  const threads: ThreadSummary[] = [];
  const byComponent: Record<string, number> = {};
  for (const file of files) {
    const profile = JSON.parse(readFileSync(join(dir, file), 'utf8')) as CpuProfile;
    const nodes = new Map(profile.nodes.map((node) => [node.id, node]));
    const thread: ThreadSummary = { file, busyMs: 0, idleMs: 0, byComponent: {} };
    profile.samples.forEach((id, i) => {
      const ms = (profile.timeDeltas[i] ?? 0) / 1000;
      const frame = nodes.get(id)!.callFrame;
      const component = componentOf(frame);
      if (component === 'idle') {
        thread.idleMs += ms;
        return;
      }
      thread.busyMs += ms;
      thread.byComponent[component] = (thread.byComponent[component] ?? 0) + ms;
      byComponent[component] = (byComponent[component] ?? 0) + ms;
      const name = `${frame.functionName || '(anonymous)'} ${frame.url ? `${shortUrl(frame.url)}:${frame.lineNumber + 1}` : ''}`.trim();
      const entry = functionTimes.get(name) ?? { name, component, ms: 0 };
      entry.ms += ms;
      functionTimes.set(name, entry);
    });
    threads.push(thread);
  }
  return {
    threads,
    busyMs: threads.reduce((sum, t) => sum + t.busyMs, 0),
    byComponent,
    top: [...functionTimes.values()].sort((a, b) => b.ms - a.ms),
  };
}

function main(argv: string[]): void {
  const program = new Command()
    .name('profile-summary')
    .description('Where the time goes in a directory of .cpuprofile files')
    .argument('<dir>', 'directory of .cpuprofile files')
    .option('--top <n>', 'functions to list', positiveInteger, 20)
    .parse(argv);
  const { top } = program.opts<{ top: number }>();
  const summary = summarizeProfiles(program.args[0]!);
  const share = (ms: number) => `${((ms / summary.busyMs) * 100).toFixed(1).padStart(5)}%`;
  console.log(`busy CPU in profiles: ${(summary.busyMs / 1000).toFixed(2)} s over ${summary.threads.length} threads`);
  for (const thread of summary.threads) {
    console.log(`  ${thread.file}: busy ${(thread.busyMs / 1000).toFixed(2)} s, idle ${(thread.idleMs / 1000).toFixed(2)} s`);
  }
  console.log('by component:');
  for (const [component, ms] of Object.entries(summary.byComponent).sort((a, b) => b[1] - a[1])) {
    console.log(`  ${share(ms)} ${(ms / 1000).toFixed(2).padStart(7)} s  ${component}`);
  }
  console.log(`top ${top} functions by self time:`);
  for (const entry of summary.top.slice(0, top)) {
    console.log(`  ${share(entry.ms)} ${(entry.ms / 1000).toFixed(2).padStart(7)} s  [${entry.component}] ${entry.name}`);
  }
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) main(process.argv);
