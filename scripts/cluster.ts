/**
 * `npm run cluster -- --port <p> [--replSet <name>] [--oplogSizeMB <n>] [--auth] [--usersFile <f>]
 * [--setParameter enableTestCommands=1] [--dbpath <dir>]`: runs one test-cluster
 * node in this process. Prints its connection string as the first stdout line once it accepts
 * connections; exits cleanly on SIGTERM/SIGINT.
 * With `--shards <n>`: a sharded cluster instead (config server, n shards, mongos; each its own
 * process, see test/cluster/sharding/launch.ts); the first line is the mongos connection string.
 * `--shardsvr` / `--configsvr` give a node its role in one (the launcher passes them).
 */
import { Command, InvalidArgumentError } from 'commander';
import { readFile } from 'node:fs/promises';
import { parse as parseYaml } from 'yaml';
import { startCluster } from '../test/cluster/index.js';
import { spawnShardedCluster } from '../test/cluster/sharding/launch.js';
import { INTERNAL_USER } from '../test/cluster/sharding/shard-views.js';
import type { UserSpec } from '../test/cluster/auth/users.js';

function integer(min: number) {
  return (value: string): number => {
    const n = Number(value);
    if (!Number.isInteger(n) || n < min) throw new InvalidArgumentError(`expected an integer >= ${min}`);
    return n;
  };
}

/** The server parameters `--setParameter` may set (mongod's names). */
interface ServerParameters {
  enableTestCommands?: boolean;
}

function serverParameter(value: string, previous: ServerParameters): ServerParameters {
  const [name, setting] = value.split('=', 2);
  if (name !== 'enableTestCommands') throw new InvalidArgumentError(`unknown server parameter '${name}' (only enableTestCommands)`);
  if (!['0', '1', 'true', 'false'].includes(setting ?? '')) throw new InvalidArgumentError(`expected enableTestCommands=1 or =0`);
  return { ...previous, enableTestCommands: setting === '1' || setting === 'true' };
}

const program = new Command('cluster')
  .description('Runs a MongoDB-wire-compatible test cluster node (a one-member replica set).')
  .option('--port <port>', 'TCP port (0 = any free port)', integer(0), 0)
  .option('--replSet <name>', 'replica set name', 'rs0')
  .option('--oplogSizeMB <n>', 'oplog size in MB', integer(1), 256)
  .option('--noopIntervalMs <ms>', 'period of the no-op writer (0 = off)', integer(0), 10_000)
  .option('--ttlIntervalMs <ms>', 'period of the TTL monitor (0 = off)', integer(0), 60_000)
  .option('--auth', 'turn access control on (also implied by --usersFile)')
  .option('--noauth', 'keep access control off even with --usersFile')
  .option('--dbpath <dir>', "directory that keeps the node's data across restarts (default: in memory only)")
  .option('--journalCheckpointMB <n>', 'with --dbpath: journal size that triggers a checkpoint', integer(1), 64)
  .option('--usersFile <path>', 'JSON or YAML list of {user, db, password, roles} created at start')
  .option('--setParameter <name=value>', "server parameter, as mongod's (only enableTestCommands=1)", serverParameter, {})
  .option('--shards <n>', 'start a sharded cluster with n shards (config server, shards, mongos)', integer(1))
  .option('--shardsvr', 'this node is a shard of a sharded cluster')
  .option('--configsvr', 'this node is the config server of a sharded cluster')
  .option('--orphanCleanupDelaySecs <s>', "seconds a donor shard keeps a moved range's documents", integer(0))
  .option('--balancerIntervalMs <ms>', 'sharded: period of the balancer rounds', integer(1))
  .option('--keyFile <path>', "the sharded cluster's shared secret (the internal user's password)")
  .parse();

const opts = program.opts<{
  port: number;
  replSet: string;
  oplogSizeMB: number;
  noopIntervalMs: number;
  ttlIntervalMs: number;
  auth?: boolean;
  noauth?: boolean;
  usersFile?: string;
  setParameter: ServerParameters;
  dbpath?: string;
  journalCheckpointMB: number;
  shards?: number;
  shardsvr?: boolean;
  configsvr?: boolean;
  orphanCleanupDelaySecs?: number;
  balancerIntervalMs?: number;
  keyFile?: string;
}>();
const users = opts.usersFile ? (parseYaml(await readFile(opts.usersFile, 'utf8')) as UserSpec[]) : undefined;
if (users !== undefined && !Array.isArray(users)) throw new InvalidArgumentError(`${opts.usersFile}: expected a list of users`);
const key = opts.keyFile ? (await readFile(opts.keyFile, 'utf8')).trim() : undefined;
const explicitNoop = program.getOptionValueSource('noopIntervalMs') === 'cli';
const cluster = opts.shards
  ? await spawnShardedCluster({
      shards: opts.shards,
      port: opts.port,
      oplogSizeMB: opts.oplogSizeMB,
      noopIntervalMs: explicitNoop ? opts.noopIntervalMs : undefined,
      ttlIntervalMs: opts.ttlIntervalMs,
      users,
      auth: opts.noauth ? false : opts.auth ? true : undefined,
      orphanCleanupDelaySecs: opts.orphanCleanupDelaySecs,
      balancerIntervalMs: opts.balancerIntervalMs,
    })
  : await startCluster({
      port: opts.port,
      replSetName: opts.replSet,
      oplogSizeMB: opts.oplogSizeMB,
      noopIntervalMs: opts.noopIntervalMs,
      ttlIntervalMs: opts.ttlIntervalMs,
      users,
      auth: opts.noauth ? false : opts.auth ? true : undefined,
      clusterRole: opts.shardsvr ? 'shardsvr' : opts.configsvr ? 'configsvr' : undefined,
      orphanCleanupDelaySecs: opts.orphanCleanupDelaySecs,
      internalCredentials: key ? { user: INTERNAL_USER, password: key, db: 'local' } : undefined,
      enableTestCommands: opts.setParameter.enableTestCommands,
      dbPath: opts.dbpath,
      journalCheckpointMB: opts.journalCheckpointMB,
    });
process.stdout.write(`${cluster.uri}\n`);

let stopping = false;
async function stop() {
  if (stopping) return;
  stopping = true;
  await cluster.stop();
  process.exit(0);
}
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
