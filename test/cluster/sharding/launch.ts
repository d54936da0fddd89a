/**
 * Starting a sharded test cluster: a config server replica set (`configRepl`), `shards` shard
 * replica sets (`shard01`, `shard02`, … as in MongoDB's examples) and one router (mongos), each
 * a one-member replica set node or router of its own — in its own process (`spawnShardedCluster`,
 * `npm run cluster -- --shards n`) or all in this one (`startShardedCluster`). The shards are
 * added through the router with `addShard`, as an operator would. Ports are consecutive from
 * `port` (the router's; the config server next, then the shards), or any free ones with 0.
 * With users, every process gets them through a private temporary file, and the members share
 * a generated key (mongod's keyFile): the internal user `__system` they authenticate as.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import type { UserSpec } from '../auth/users.js';
import { ClusterServer } from '../server.js';
import { RouterServer } from '../mongos/server.js';
import { NodeClient } from './node-client.js';
import { INTERNAL_USER } from './shard-views.js';
import type { InternalCredentials } from './scram-client.js';

/** Options of a sharded test cluster; every field but `shards` has a default. */
export interface ShardedClusterOptions {
  /** Number of shards (1 or more). */
  shards: number;
  /** The router's port; the config server gets the next, the shards the ones after (default 0: any free ports). */
  port?: number;
  /** Oplog capacity of every node, in MB (default 256). */
  oplogSizeMB?: number;
  /**
   * Period of every node's no-op writer, in ms (default 200; mongod's periodicNoopIntervalSecs is
   * 10 s): an idle shard's no-ops let merged change streams move on, so this bounds their latency.
   */
  noopIntervalMs?: number;
  /** Period of every node's TTL monitor, in ms (default 60000). */
  ttlIntervalMs?: number;
  /** Users of the cluster (on the router and every node); giving any turns access control on. */
  users?: UserSpec[];
  /** Access control (default: on iff users are given). */
  auth?: boolean;
  /** Seconds a donor shard keeps a moved range's documents (mongod's orphanCleanupDelaySecs; default 900). */
  orphanCleanupDelaySecs?: number;
  /** Period of the balancer's rounds while it is on, in ms (default 10000). */
  balancerIntervalMs?: number;
  /**
   * Serve `configureFailPoint`/`waitForFailPoint` on every shard and the config server (mongod's
   * `--setParameter enableTestCommands=1`; default false). The router has no fail points.
   */
  enableTestCommands?: boolean;
}

/** One process of the cluster. */
export interface ClusterMember {
  /** `mongodb://127.0.0.1:<port>/?replicaSet=<name>` (the router: `mongodb://127.0.0.1:<port>/`). */
  uri: string;
  port: number;
  /** The process id (spawned clusters). */
  pid?: number;
}

export interface ShardMember extends ClusterMember {
  /** The shard id and its replica set name: `shard01`, `shard02`, … */
  id: string;
  /** `shard01/127.0.0.1:<port>`, as `listShards` shows it. */
  connectionString: string;
}

export interface ShardedClusterHandle {
  /** The router's connection string: `mongodb://127.0.0.1:<port>/` (no replicaSet). */
  uri: string;
  port: number;
  mongos: ClusterMember;
  /** The config server replica set (`configRepl`). */
  configServer: ClusterMember;
  shards: ShardMember[];
  /** Stops every process (the router first). */
  stop(): Promise<void>;
}

export const CONFIG_REPL_SET = 'configRepl';
export const DEFAULT_SHARDED_NOOP_INTERVAL_MS = 200;

export function shardId(index: number): string {
  return `shard${String(index + 1).padStart(2, '0')}`;
}

function portOf(options: ShardedClusterOptions, offset: number): number {
  return options.port ? options.port + offset : 0;
}

/** The users every node gets: the cluster's and the internal user holding the key. */
function nodeUsers(options: ShardedClusterOptions, key: string | undefined): UserSpec[] | undefined {
  if (!key) return options.users;
  return [...(options.users ?? []), { user: INTERNAL_USER, db: 'local', password: key, roles: [{ role: '__system', db: 'admin' }] }];
}

function accessOn(options: ShardedClusterOptions): boolean {
  return options.auth ?? (options.users !== undefined && options.users.length > 0);
}

/** Adds every shard through the router, as `sh.addShard` would. */
async function addShards(routerPort: number, shards: ShardMember[], credentials: InternalCredentials | undefined): Promise<void> {
  const client = new NodeClient(`127.0.0.1:${routerPort}`, { credentials });
  try {
    for (const shard of shards) await client.command('admin', { addShard: shard.connectionString });
  } finally {
    client.close();
  }
}

const CLUSTER_MAIN = fileURLToPath(new URL('../../../scripts/cluster.js', import.meta.url));
const MONGOS_MAIN = fileURLToPath(new URL('../mongos/main.js', import.meta.url));

interface Spawned {
  child: ChildProcess;
  uri: string;
  exited: Promise<void>;
}

/** Starts a child; resolves with the connection string it prints once it listens. */
async function spawnMember(main: string, args: string[], nodeArgs: string[]): Promise<Spawned> {
  const child = spawn(process.execPath, [...nodeArgs, main, ...args], { stdio: ['ignore', 'pipe', 'inherit'] });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const lines = createInterface({ input: child.stdout! });
  const uri = await new Promise<string>((resolve, reject) => {
    lines.once('line', resolve);
    child.once('exit', (code) => reject(new Error(`${main} exited with code ${String(code)} before listening`)));
  });
  lines.on('line', () => {});
  return { child, uri, exited };
}

async function stopMember(member: Spawned): Promise<void> {
  if (member.child.exitCode === null && member.child.signalCode === null) member.child.kill('SIGTERM');
  await member.exited;
}

/** Starts the cluster with each member in its own process. `nodeArgs` go to every child's node. */
export async function spawnShardedCluster(options: ShardedClusterOptions, nodeArgs: string[] = []): Promise<ShardedClusterHandle> {
  if (!Number.isInteger(options.shards) || options.shards < 1) throw new Error('shards must be a whole number of at least 1');
  const secured = accessOn(options);
  const key = secured ? randomBytes(24).toString('base64') : undefined;
  // Users and the key go through private files, never the command line (they would show in `ps`).
  const dir = secured || options.users ? await mkdtemp(join(tmpdir(), 'ferry-sharded-')) : undefined;
  const common: string[] = [];
  const nodeArgsCommon: string[] = [];
  if (options.oplogSizeMB !== undefined) nodeArgsCommon.push('--oplogSizeMB', String(options.oplogSizeMB));
  nodeArgsCommon.push('--noopIntervalMs', String(options.noopIntervalMs ?? DEFAULT_SHARDED_NOOP_INTERVAL_MS));
  if (options.ttlIntervalMs !== undefined) nodeArgsCommon.push('--ttlIntervalMs', String(options.ttlIntervalMs));
  if (options.enableTestCommands) nodeArgsCommon.push('--setParameter', 'enableTestCommands=1');
  const started: Spawned[] = [];
  try {
    if (dir) {
      const usersFile = join(dir, 'users.json');
      await writeFile(usersFile, JSON.stringify(nodeUsers(options, key) ?? []), { mode: 0o600 });
      common.push('--usersFile', usersFile);
      if (key) {
        const keyFile = join(dir, 'key');
        await writeFile(keyFile, key, { mode: 0o600 });
        common.push('--keyFile', keyFile);
      }
      common.push(secured ? '--auth' : '--noauth');
    }
    const configPort = portOf(options, 1);
    const shardIds = Array.from({ length: options.shards }, (_, i) => shardId(i));
    const nodes = await Promise.all([
      spawnMember(
        CLUSTER_MAIN,
        ['--port', String(configPort), '--replSet', CONFIG_REPL_SET, '--configsvr', ...nodeArgsCommon, ...common],
        nodeArgs,
      ),
      ...shardIds.map((id, i) =>
        spawnMember(
          CLUSTER_MAIN,
          [
            '--port',
            String(portOf(options, 2 + i)),
            '--replSet',
            id,
            '--shardsvr',
            ...(options.orphanCleanupDelaySecs === undefined ? [] : ['--orphanCleanupDelaySecs', String(options.orphanCleanupDelaySecs)]),
            ...nodeArgsCommon,
            ...common,
          ],
          nodeArgs,
        ),
      ),
    ]);
    started.push(...nodes);
    const [config, ...shardNodes] = nodes;
    const configAddress = new URL(config!.uri).host;
    const router = await spawnMember(
      MONGOS_MAIN,
      [
        '--port',
        String(portOf(options, 0)),
        '--configdb',
        `${CONFIG_REPL_SET}/${configAddress}`,
        ...(options.balancerIntervalMs === undefined ? [] : ['--balancerIntervalMs', String(options.balancerIntervalMs)]),
        ...common,
      ],
      nodeArgs,
    );
    started.unshift(router);
    const shards: ShardMember[] = shardNodes.map((node, i) => {
      const port = Number(new URL(node.uri).port);
      return { id: shardIds[i]!, uri: node.uri, port, pid: node.child.pid, connectionString: `${shardIds[i]!}/127.0.0.1:${port}` };
    });
    const routerPort = Number(new URL(router.uri).port);
    await addShards(routerPort, shards, key ? { user: INTERNAL_USER, password: key, db: 'local' } : undefined);
    return {
      uri: router.uri,
      port: routerPort,
      mongos: { uri: router.uri, port: routerPort, pid: router.child.pid },
      configServer: { uri: config!.uri, port: Number(new URL(config!.uri).port), pid: config!.child.pid },
      shards,
      stop: async () => {
        await stopMember(router);
        await Promise.all(nodes.map(stopMember));
      },
    };
  } catch (e) {
    await Promise.all(started.map(stopMember));
    throw e;
  } finally {
    if (dir) await rm(dir, { recursive: true, force: true });
  }
}

/** Starts the cluster with every member in this process (for debugging; tests use processes). */
export async function startShardedCluster(
  options: ShardedClusterOptions,
): Promise<ShardedClusterHandle & { router: RouterServer; nodes: ClusterServer[] }> {
  if (!Number.isInteger(options.shards) || options.shards < 1) throw new Error('shards must be a whole number of at least 1');
  const secured = accessOn(options);
  const key = secured ? randomBytes(24).toString('base64') : undefined;
  const credentials = key ? { user: INTERNAL_USER, password: key, db: 'local' } : undefined;
  const users = nodeUsers(options, key);
  const nodeOptions = {
    oplogSizeMB: options.oplogSizeMB,
    noopIntervalMs: options.noopIntervalMs ?? DEFAULT_SHARDED_NOOP_INTERVAL_MS,
    ttlIntervalMs: options.ttlIntervalMs,
    enableTestCommands: options.enableTestCommands,
    users,
    auth: secured,
    internalCredentials: credentials,
  };
  const config = new ClusterServer({ ...nodeOptions, port: portOf(options, 1), replSetName: CONFIG_REPL_SET, clusterRole: 'configsvr' });
  const shardIds = Array.from({ length: options.shards }, (_, i) => shardId(i));
  const shardServers = shardIds.map(
    (id, i) =>
      new ClusterServer({
        ...nodeOptions,
        port: portOf(options, 2 + i),
        replSetName: id,
        clusterRole: 'shardsvr',
        orphanCleanupDelaySecs: options.orphanCleanupDelaySecs,
      }),
  );
  const nodes = [config, ...shardServers];
  const ports = await Promise.all(nodes.map((n) => n.listen()));
  const router = new RouterServer({
    port: portOf(options, 0),
    configdb: `${CONFIG_REPL_SET}/127.0.0.1:${ports[0]!}`,
    users,
    auth: secured,
    internalCredentials: credentials,
    balancerIntervalMs: options.balancerIntervalMs,
  });
  const routerPort = await router.listen();
  const shards: ShardMember[] = shardIds.map((id, i) => ({
    id,
    uri: `mongodb://127.0.0.1:${ports[i + 1]!}/?replicaSet=${id}`,
    port: ports[i + 1]!,
    connectionString: `${id}/127.0.0.1:${ports[i + 1]!}`,
  }));
  await addShards(routerPort, shards, credentials);
  const uri = `mongodb://127.0.0.1:${routerPort}/`;
  return {
    uri,
    port: routerPort,
    mongos: { uri, port: routerPort },
    configServer: { uri: `mongodb://127.0.0.1:${ports[0]!}/?replicaSet=${CONFIG_REPL_SET}`, port: ports[0]! },
    shards,
    router,
    nodes,
    stop: async () => {
      await router.close();
      await Promise.all(nodes.map((n) => n.close()));
    },
  };
}
