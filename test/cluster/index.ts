/**
 * The test cluster's programmatic API, shared by tests, the demo and the benchmarks:
 * start a node in this process (`startCluster`) or in a child process (`spawnCluster`).
 */
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ClusterServer, type ServerOptions } from './server.js';
import { type ShardedClusterHandle, type ShardedClusterOptions, spawnShardedCluster, startShardedCluster } from './sharding/launch.js';

export type { ShardedClusterHandle, ShardedClusterOptions, ShardMember, ClusterMember } from './sharding/launch.js';

export type ClusterOptions = ServerOptions;

export interface ClusterHandle {
  /** `mongodb://127.0.0.1:<port>/?replicaSet=<name>` */
  uri: string;
  port: number;
  stop(): Promise<void>;
}

export function clusterUri(port: number, replSetName = 'rs0'): string {
  return `mongodb://127.0.0.1:${port}/?replicaSet=${replSetName}`;
}

/** Starts a node in this process; with `shards`, a whole sharded cluster (sharding/launch.ts). */
export function startCluster(options: ShardedClusterOptions): Promise<ShardedClusterHandle>;
export function startCluster(options?: ClusterOptions): Promise<ClusterHandle & { server: ClusterServer }>;
export async function startCluster(
  options: ClusterOptions | ShardedClusterOptions = {},
): Promise<ShardedClusterHandle | (ClusterHandle & { server: ClusterServer })> {
  if ('shards' in options) return startShardedCluster(options);
  const server = new ClusterServer(options);
  const port = await server.listen();
  return { uri: clusterUri(port, server.instance.replSetName), port, server, stop: () => server.close() };
}

/** Command-line flags of the cluster entry point for the given options. */
export function clusterArgs(options: ClusterOptions): string[] {
  const args: string[] = [];
  if (options.port !== undefined) args.push('--port', String(options.port));
  if (options.replSetName !== undefined) args.push('--replSet', options.replSetName);
  if (options.oplogSizeMB !== undefined) args.push('--oplogSizeMB', String(options.oplogSizeMB));
  if (options.noopIntervalMs !== undefined) args.push('--noopIntervalMs', String(options.noopIntervalMs));
  if (options.ttlIntervalMs !== undefined) args.push('--ttlIntervalMs', String(options.ttlIntervalMs));
  if (options.auth === true) args.push('--auth');
  if (options.auth === false) args.push('--noauth');
  return args;
}

/** Path of the compiled entry point that `npm run cluster` runs. */
export const CLUSTER_MAIN = fileURLToPath(new URL('../../scripts/cluster.js', import.meta.url));

/**
 * Starts a node in a child process; resolves once it accepts connections (its first stdout line
 * is the connection string). `stop()` sends SIGTERM and waits for the exit. `nodeArgs` are extra
 * flags for the child's node (benchmarks pass `--cpu-prof`).
 */
export function spawnCluster(options: ShardedClusterOptions, nodeArgs?: string[]): Promise<ShardedClusterHandle>;
export function spawnCluster(options?: ClusterOptions, nodeArgs?: string[]): Promise<ClusterHandle & { pid: number }>;
export async function spawnCluster(
  options: ClusterOptions | ShardedClusterOptions = {},
  nodeArgs: string[] = [],
): Promise<ShardedClusterHandle | (ClusterHandle & { pid: number })> {
  if ('shards' in options) return spawnShardedCluster(options, nodeArgs);
  const args = clusterArgs(options);
  // Users go through a private file rather than the command line, so passwords stay out of `ps`.
  const usersDir = options.users ? await mkdtemp(join(tmpdir(), 'ferry-cluster-users-')) : undefined;
  if (usersDir) {
    const file = join(usersDir, 'users.json');
    await writeFile(file, JSON.stringify(options.users), { mode: 0o600 });
    args.push('--usersFile', file);
  }
  const child = spawn(process.execPath, [...nodeArgs, CLUSTER_MAIN, ...args], { stdio: ['ignore', 'pipe', 'inherit'] });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const lines = createInterface({ input: child.stdout! });
  const uri = await new Promise<string>((resolve, reject) => {
    lines.once('line', resolve);
    child.once('exit', (code) => reject(new Error(`test cluster exited with code ${code} before listening`)));
  });
  if (usersDir) await rm(usersDir, { recursive: true, force: true });
  lines.on('line', () => {}); // keep draining stdout
  const port = Number(new URL(uri).port);
  return {
    uri,
    port,
    pid: child.pid!,
    stop: async () => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      await exited;
    },
  };
}
