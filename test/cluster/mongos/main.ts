/**
 * The router's process: `node dist/test/cluster/mongos/main.js --port <p> --configdb
 * configRepl/127.0.0.1:<port> [--usersFile f] [--auth|--noauth] [--keyFile f]
 * [--balancerIntervalMs ms]`. Prints its connection string (`mongodb://127.0.0.1:<p>/`) as the
 * first stdout line once it accepts connections; SIGTERM/SIGINT stop it.
 */
import { readFile } from 'node:fs/promises';
import { Command, InvalidArgumentError } from 'commander';
import { parse as parseYaml } from 'yaml';
import type { UserSpec } from '../auth/users.js';
import { RouterServer } from './server.js';
import { INTERNAL_USER } from '../sharding/shard-views.js';

function integer(min: number) {
  return (value: string): number => {
    const n = Number(value);
    if (!Number.isInteger(n) || n < min) throw new InvalidArgumentError(`expected an integer >= ${min}`);
    return n;
  };
}

const program = new Command('mongos')
  .description('Runs the router (mongos) of a sharded test cluster.')
  .requiredOption('--configdb <rs/host:port>', 'the config server replica set')
  .option('--port <port>', 'TCP port (0 = any free port)', integer(0), 0)
  .option('--usersFile <path>', 'JSON or YAML list of {user, db, password, roles}')
  .option('--auth', 'turn access control on (also implied by --usersFile)')
  .option('--noauth', 'keep access control off even with --usersFile')
  .option('--keyFile <path>', "the cluster's shared secret: the internal user's password")
  .option('--balancerIntervalMs <ms>', 'period of the balancer rounds', integer(1), 10_000)
  .parse();

const opts = program.opts<{
  configdb: string;
  port: number;
  usersFile?: string;
  auth?: boolean;
  noauth?: boolean;
  keyFile?: string;
  balancerIntervalMs: number;
}>();
const users = opts.usersFile ? (parseYaml(await readFile(opts.usersFile, 'utf8')) as UserSpec[]) : undefined;
const key = opts.keyFile ? (await readFile(opts.keyFile, 'utf8')).trim() : undefined;
const server = new RouterServer({
  port: opts.port,
  configdb: opts.configdb,
  users,
  auth: opts.noauth ? false : opts.auth ? true : undefined,
  internalCredentials: key ? { user: INTERNAL_USER, password: key, db: 'local' } : undefined,
  balancerIntervalMs: opts.balancerIntervalMs,
});
const port = await server.listen();
process.stdout.write(`mongodb://127.0.0.1:${port}/\n`);

let stopping = false;
async function stop() {
  if (stopping) return;
  stopping = true;
  await server.close();
  process.exit(0);
}
process.on('SIGTERM', () => void stop());
process.on('SIGINT', () => void stop());
