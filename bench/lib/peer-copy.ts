/**
 * MongoDB's own tools as the yardstick: `mongodump --archive | mongorestore --archive` copies the
 * source into a fresh destination, as a user would for a one-time copy. The two tools run at once
 * (a pipe between them), so the copier's CPU is theirs together and its peak memory their peaks
 * summed. Their usage is sampled from /proc every 250 ms: CPU spent after a process's last sample
 * (under one interval) is not counted.
 *
 * The tools are not part of Ferry: the benchmark uses them only when given their directory
 * (`--mongoTools`, or `MONGO_TOOLS_DIR`).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { existsSync } from 'node:fs';
import { basename, join } from 'node:path';
import { createInterface } from 'node:readline';
import { performance } from 'node:perf_hooks';
import { redactUris } from '../../src/domain/credentials.js';
import {
  checkCounts,
  measurement,
  monotonicMicros,
  recordProfileWindow,
  verifyCopy,
  withFreshDestination,
  type CopyMeasurement,
  type CopyRunOptions,
} from './copy-runs.js';
import { round } from './results.js';

/** One way to run the tools. */
export interface PeerConfiguration {
  /** How results name it. */
  name: string;
  /** Extra flags of `mongorestore`. */
  restoreFlags: string[];
  /** Whether it builds the source's indexes (the fair comparison for a copier that does). */
  buildsIndexes: boolean;
}

/** The three configurations issue 17 compares against: default flags, parallel, parallel without indexes. */
export const PEER_CONFIGURATIONS: readonly PeerConfiguration[] = [
  { name: 'dump|restore default', restoreFlags: [], buildsIndexes: true },
  {
    name: 'dump|restore -j4 -w4',
    restoreFlags: ['--numParallelCollections', '4', '--numInsertionWorkersPerCollection', '4'],
    buildsIndexes: true,
  },
  {
    name: 'dump|restore -j4 -w4 --noIndexRestore',
    restoreFlags: ['--numParallelCollections', '4', '--numInsertionWorkersPerCollection', '4', '--noIndexRestore'],
    buildsIndexes: false,
  },
];

const TOOLS = ['mongodump', 'mongorestore'] as const;

/** The directory's tools are there and executable; else a one-line reason. */
export function missingTools(dir: string): string | undefined {
  const missing = TOOLS.filter((tool) => !existsSync(join(dir, tool)));
  return missing.length === 0 ? undefined : `${missing.join(' and ')} not found in ${dir}`;
}

/** A peer's figures: the copy's, its configuration, whether the destination compared equal. */
export interface PeerMeasurement extends CopyMeasurement {
  restoreFlags: string[];
  buildsIndexes: boolean;
  equal: boolean;
  /** Why the tools failed (their exit codes and the log lines that say so); the figures then only say how long they ran. */
  error?: string;
}

/** `mongodump | mongorestore` in `configuration` copies the source into a fresh destination, verified after. */
export function measurePeerCopy(options: CopyRunOptions, toolsDir: string, configuration: PeerConfiguration): Promise<PeerMeasurement> {
  const { source, sampler, workload } = options;
  return withFreshDestination(options, async (destination) => {
    // Each tool's lines that say what went wrong (mongodump's own failure is what ends a restore early).
    const failed: string[] = [];
    const collect = (child: ChildProcess) =>
      createInterface({ input: child.stderr! }).on('line', (line) => {
        if (/Failed|error/i.test(line)) failed.push(`${basename(child.spawnfile)}: ${line.replace(/^\S+\t/, '')}`);
      });
    const exited = (child: ChildProcess) =>
      once(child, 'exit').then(([code, signal]) => (code === 0 ? undefined : `${basename(child.spawnfile)} exited ${code ?? signal}`));
    sampler.restart('source');
    sampler.restart('destination');
    const started = performance.now();
    const from = monotonicMicros();
    const dump = spawn(join(toolsDir, 'mongodump'), [`--uri=${source.uri}`, '--archive'], { stdio: ['ignore', 'pipe', 'pipe'] });
    const restore = spawn(join(toolsDir, 'mongorestore'), [`--uri=${destination.uri}`, '--archive', ...configuration.restoreFlags], {
      stdio: ['pipe', 'ignore', 'pipe'],
    });
    try {
      sampler.watch('mongodump', dump.pid!);
      sampler.watch('mongorestore', restore.pid!);
      collect(dump);
      collect(restore);
      dump.stdout!.pipe(restore.stdin!);
      restore.stdin!.on('error', () => {}); // a failed restore closes the pipe: the exit codes say so
      const failures = (await Promise.all([exited(dump), exited(restore)])).filter((failure) => failure !== undefined);
      const result = measurement(configuration.name, (performance.now() - started) / 1000, workload, sampler, destination.shards, TOOLS);
      if (options.destinationCpuProfileDir !== undefined) {
        recordProfileWindow(options.destinationCpuProfileDir, {
          copier: configuration.name,
          pid: destination.pid,
          from,
          to: monotonicMicros(),
        });
      }
      const identity = { restoreFlags: configuration.restoreFlags, buildsIndexes: configuration.buildsIndexes };
      // A failed configuration is recorded, not fatal: the other copiers' figures still stand.
      if (failures.length > 0) {
        const why = redactUris(failed.slice(0, 4).join(' | '));
        return { ...result, ...identity, equal: false, error: `${failures.join(', ')}: ${why}` };
      }
      await checkCounts(destination.uri, workload, configuration.name);
      await verifyCopy(source.uri, destination.uri, configuration.name, configuration.buildsIndexes ? 'restored' : 'noIndexes');
      return { ...result, ...identity, equal: true };
    } finally {
      for (const tool of TOOLS) sampler.forget(tool);
      for (const child of [dump, restore]) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    }
  });
}

/** Ferry's throughput over the best peer's among `peers` (undefined when none qualify). */
export function ratioToBest(ferry: CopyMeasurement, peers: readonly PeerMeasurement[]): number | undefined {
  const succeeded = peers.filter((peer) => peer.error === undefined);
  const best = Math.max(...succeeded.map((peer) => peer.MBps));
  return succeeded.length === 0 ? undefined : round(ferry.MBps / best);
}
