/**
 * The test cluster's programmatic API, shared by tests, the demo and the benchmarks:
 * start a node in this process (`startCluster`) or in a child process (`spawnCluster`).
 */
import { fileURLToPath } from 'node:url';
import { ClusterServer, type ServerOptions } from './server.js';
import { ClusterProcess } from './process.js';
import { type ShardedClusterHandle, type ShardedClusterOptions, spawnShardedCluster, startShardedCluster } from './sharding/launch.js';

export { ClusterProcess, type RestartOptions } from './process.js';
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
  if (options.enableTestCommands) args.push('--setParameter', 'enableTestCommands=1');
  if (options.dbPath !== undefined) args.push('--dbpath', options.dbPath);
  if (options.journalCheckpointMB !== undefined) args.push('--journalCheckpointMB', String(options.journalCheckpointMB));
  return args;
}

/** Path of the compiled entry point that `npm run cluster` runs. */
export const CLUSTER_MAIN = fileURLToPath(new URL('../../scripts/cluster.js', import.meta.url));

/**
 * Starts a node in a child process; resolves once it accepts connections (its first stdout line
 * is the connection string). The handle (process.ts) also kills, restarts and freezes it:
 * `stop()` sends SIGTERM and waits for the exit; `kill(signal)`, `start()`, `restart({signal})`,
 * `freeze()`, `resume()`. `nodeArgs` are extra flags for the child's node (benchmarks pass `--cpu-prof`).
 */
export function spawnCluster(options: ShardedClusterOptions, nodeArgs?: string[]): Promise<ShardedClusterHandle>;
export function spawnCluster(options?: ClusterOptions, nodeArgs?: string[]): Promise<ClusterProcess>;
export async function spawnCluster(
  options: ClusterOptions | ShardedClusterOptions = {},
  nodeArgs: string[] = [],
): Promise<ShardedClusterHandle | ClusterProcess> {
  if ('shards' in options) return spawnShardedCluster(options, nodeArgs);
  const node = new ClusterProcess(CLUSTER_MAIN, clusterArgs({ ...options, port: undefined }), nodeArgs, options.port ?? 0, options.users);
  await node.start();
  return node;
}
