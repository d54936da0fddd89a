/**
 * Where a test cluster's CPU went in each copier's window: `bench:copy -- --clusterCpuProf <dir>`
 * writes the destinations' CPU profiles (`node --cpu-prof`, one per fresh destination) and
 * `<dir>/destination/windows.json` (each copier's window and, for Ferry, its stages, on the
 * profiles' monotonic clock). This cuts each profile to its copier's window (the checks after the
 * copy are left out) and sorts the samples by the work they did, from their stacks:
 *
 *   node dist/bench/cluster-profile.js <dir>/destination [--top 10]
 *
 * The shares are of sampled time, which counts time the process waited for a core (two cores
 * shared by several processes): read them as proportions, and the CPU seconds from bench:copy.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { Command } from 'commander';
import { positiveInteger } from '../scripts/lib/cli-numbers.js';
import type { ProfileWindow } from './lib/copy-runs.js';
import type { CpuProfile, ProfileNode } from './profile-summary.js';

/**
 * Kinds of work, tried in order on a sample's stack (leaf to root, first match wins per kind's
 * order here): a frame's script path under `dist/test/cluster/` and function name.
 */
const KINDS: { kind: string; matches: (file: string, fn: string) => boolean }[] = [
  { kind: 'index builds', matches: (file, fn) => file === 'storage/indexes.js' && fn === 'rebuild' },
  { kind: 'document inserts', matches: (file, fn) => file === 'commands/crud.js' && fn === 'insertCommand' },
  {
    kind: 'updates and deletes',
    matches: (file) => /^commands\/(update|delete|findandmodify)\.js$/.test(file) || file.startsWith('query/update/'),
  },
  { kind: 'change streams', matches: (file) => file.startsWith('changestream/') },
  { kind: 'reply encoding', matches: (file, fn) => file === 'raw.js' && fn === 'encodeDocument' },
  {
    kind: 'reads (find, getMore, aggregate, count)',
    matches: (file) => /^(query\/|cursor\.js|commands\/(cursors|aggregate|count|oplog-find)\.js)/.test(file),
  },
  { kind: 'hello, handshakes, auth', matches: (file) => /^(commands\/(handshake|auth)\.js|auth\/)/.test(file) },
  { kind: 'catalog, stats, admin', matches: (file) => /^commands\/(catalog|indexes|stats|admin|collmod)\.js$/.test(file) },
  { kind: 'request framing and dispatch', matches: (file) => /^(wire|server)\.js$|^commands\/dispatch\.js$/.test(file) },
];

/** The kind of work a sample's stack did. */
function kindOf(stack: readonly ProfileNode['callFrame'][]): string {
  const leaf = stack[0]!;
  if (leaf.functionName === '(garbage collector)') return 'garbage collection';
  const frames = stack.map((frame) => ({ file: /dist\/test\/cluster\/(.*)$/.exec(frame.url)?.[1], fn: frame.functionName }));
  for (const { kind, matches } of KINDS) {
    if (frames.some((frame) => frame.file !== undefined && matches(frame.file, frame.fn))) return kind;
  }
  return leaf.functionName === '(program)' ? 'V8 / native (program)' : 'other';
}

/** Sampled busy time of `[from, to]` (monotonic µs) by kind of work, ms. */
export function profileByKind(profile: CpuProfile, from: number, to: number): Map<string, number> {
  const nodes = new Map(profile.nodes.map((node) => [node.id, node]));
  const parents = new Map<number, number>();
  for (const node of profile.nodes) for (const child of node.children ?? []) parents.set(child, node.id);
  const kinds = new Map<number, string>();
  const byKind = new Map<string, number>();
  let at = profile.startTime;
  profile.samples.forEach((id, i) => {
    at += profile.timeDeltas[i]!;
    if (at < from || at > to || nodes.get(id)!.callFrame.functionName === '(idle)') return;
    let kind = kinds.get(id);
    if (kind === undefined) {
      const stack: ProfileNode['callFrame'][] = [];
      for (let node: number | undefined = id; node !== undefined; node = parents.get(node)) stack.push(nodes.get(node)!.callFrame);
      kind = kindOf(stack);
      kinds.set(id, kind);
    }
    // A sample's time is the gap to the next one (the last sample's, its own gap).
    const ms = (profile.timeDeltas[i + 1] ?? profile.timeDeltas[i]!) / 1000;
    byKind.set(kind, (byKind.get(kind) ?? 0) + ms);
  });
  return byKind;
}

function main(argv: string[]): void {
  const program = new Command()
    .name('cluster-profile')
    .description("Where a destination test cluster's CPU went in each copier's window (bench:copy --clusterCpuProf)")
    .argument('<dir>', 'the destination profiles and windows.json')
    .option('--top <n>', 'kinds of work to list per window', positiveInteger, 12)
    .parse(argv);
  const dir = program.args[0]!;
  const { top } = program.opts<{ top: number }>();
  const windows = JSON.parse(readFileSync(join(dir, 'windows.json'), 'utf8')) as ProfileWindow[];
  const files = readdirSync(dir).filter((name) => name.endsWith('.cpuprofile'));
  for (const window of windows) {
    const file = files.find((name) => name.split('.')[3] === String(window.pid));
    if (file === undefined) {
      console.log(`${window.copier}: no profile of pid ${window.pid} (it is written when the cluster stops)`);
      continue;
    }
    const profile = JSON.parse(readFileSync(join(dir, file), 'utf8')) as CpuProfile;
    const parts = [{ stage: 'whole window', from: window.from, to: window.to }, ...(window.stages ?? [])];
    for (const part of parts) {
      const byKind = profileByKind(profile, part.from, part.to);
      const busy = [...byKind.values()].reduce((sum, ms) => sum + ms, 0);
      const seconds = (part.to - part.from) / 1e6;
      console.log(`${window.copier}, ${part.stage}: ${seconds.toFixed(2)} s, sampled busy ${(busy / 1000).toFixed(2)} s`);
      for (const [kind, ms] of [...byKind].sort((a, b) => b[1] - a[1]).slice(0, top)) {
        console.log(`  ${((ms / busy) * 100).toFixed(1).padStart(5)}% ${(ms / 1000).toFixed(2).padStart(6)} s  ${kind}`);
      }
    }
  }
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) main(process.argv);
