/**
 * The real `ferry` process (node dist/src/cli/main.js): startup errors, the running daemon over
 * HTTP, its logs, SIGUSR1 log reopening and a clean stop on SIGTERM/SIGINT; and preflight through
 * the daemon against real clusters.
 */
import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, before, describe, it } from 'node:test';
import { MongoClient } from 'mongodb';
import { startClusterPair, type ClusterPair } from '../helpers/clusters.js';

const MAIN = fileURLToPath(new URL('../../src/cli/main.js', import.meta.url));
// These hosts do not exist: the recovery every start begins with gives up after the strings' own
// 0.5 s server selection timeout instead of Ferry's 10 s. Fine for everything but preflight.
const URI0 = 'mongodb://ferry:pw-zero-secret@db0.example.net:27018/?replicaSet=rs0&serverSelectionTimeoutMS=500';
const URI1 = 'mongodb://ferry:pw-one-secret@db1.example.net:27019/?replicaSet=rs1&serverSelectionTimeoutMS=500';

function runToExit(args: string[], env: Record<string, string> = {}) {
  // A bound on the wait: a Ferry that starts instead of refusing would otherwise never exit.
  const result = spawnSync(process.execPath, [MAIN, ...args], { encoding: 'utf8', env: { ...process.env, ...env }, timeout: 20_000 });
  return { code: result.status, stdout: result.stdout, stderr: result.stderr };
}

type LogLine = Record<string, unknown> & { message: string; level: string };

function readLog(path: string): LogLine[] {
  if (!existsSync(path)) return [];
  return readFileSync(path, 'utf8')
    .split('\n')
    .filter((line) => line.length > 0)
    .map((line) => JSON.parse(line) as LogLine);
}

const pause = () => new Promise((resolve) => setTimeout(resolve, 20));

interface Daemon {
  child: ChildProcess;
  logFile: string;
  base: string;
  exit: Promise<number | null>;
  log(): LogLine[];
  /** Waits until a log line matches. */
  waitFor(match: (line: LogLine) => boolean): Promise<LogLine>;
}

/** Starts ferry with logs in a fresh directory; resolves once the API listens. */
async function startDaemon(args: string[], logDir?: string): Promise<Daemon> {
  const dir = logDir ?? mkdtempSync(join(tmpdir(), 'ferry-cli-'));
  const logFile = join(dir, 'ferry.log');
  const child = spawn(process.execPath, [MAIN, '--port', '0', '--logPath', dir, ...args], { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr!.on('data', (chunk) => (stderr += chunk));
  const exit = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  let exited = false;
  void exit.then(() => (exited = true));
  // Each file Ferry opens begins with a line carrying its pid: until this one's is there, the file is an earlier run's.
  const own = () => {
    const lines = readLog(logFile);
    return lines[0]?.pid === child.pid ? lines : [];
  };
  const waitFor = async (match: (line: LogLine) => boolean) => {
    for (;;) {
      const found = own().find(match);
      if (found !== undefined) return found;
      if (exited) throw new Error(`ferry exited before logging what was expected: ${stderr}`);
      await pause();
    }
  };
  const listening = await waitFor((line) => line.message.startsWith('Control API listening'));
  await waitFor((line) => line.message === 'State INITIALIZING → IDLE');
  return { child, logFile, base: `http://127.0.0.1:${listening.port}`, exit, log: own, waitFor };
}

async function stopDaemon(daemon: Daemon, signal: NodeJS.Signals = 'SIGTERM'): Promise<number | null> {
  if (daemon.child.exitCode === null) daemon.child.kill(signal);
  return daemon.exit;
}

async function post(base: string, path: string, body: unknown) {
  const response = await fetch(`${base}/api/v1/${path}`, { method: 'POST', body: JSON.stringify(body) });
  return { status: response.status, body: (await response.json()) as Record<string, any> };
}

async function progress(base: string) {
  return ((await (await fetch(`${base}/api/v1/progress`)).json()) as { progress: Record<string, unknown> }).progress;
}

describe('startup errors: one line, non-zero exit, nothing started', () => {
  const dir = mkdtempSync(join(tmpdir(), 'ferry-cli-config-'));
  const cases: [string, string[], RegExp][] = [
    ['unknown flag', ['--cluster0', URI0, '--cluster1', URI1, '--clusterO', 'x'], /unknown option '--clusterO'/],
    ['missing --cluster1', ['--cluster0', URI0], /--cluster1 is required/],
    ['flag without its value', ['--cluster0', URI0, '--cluster1', URI1, '--port'], /option '--port <port>' argument missing/],
    ['stray argument', ['--cluster0', URI0, '--cluster1', URI1, 'extra'], /too many arguments/],
    [
      'invalid URI (password not echoed)',
      ['--cluster0', 'mongodb://ferry:pw-zero-secret@h/?bogusOption=1', '--cluster1', URI1],
      /--cluster0 is not a valid MongoDB connection string: option bogusoption is not supported/,
    ],
    [
      'out-of-range --loadLevel',
      ['--cluster0', URI0, '--cluster1', URI1, '--loadLevel', '9'],
      /--loadLevel must be an integer from 1 to 4, got "9"/,
    ],
    ['unreadable config', ['--config', join(dir, 'nope.yaml')], /cannot read config file .*nope\.yaml: ENOENT/],
    [
      'bad value in config',
      ['--config', (writeFileSync(join(dir, 'bad.yaml'), 'cluster0: x\ncluster1: y\nverbosity: LOUD\n'), join(dir, 'bad.yaml'))],
      /"verbosity" in .*bad\.yaml must be one of TRACE/,
    ],
    ['unusable --logPath', ['--cluster0', URI0, '--cluster1', URI1, '--logPath', MAIN], /--logPath .* cannot be used/],
    // mongosync's --hotDocIDs form: {"db", "collection", "ids": [{"_id": <canonical extended JSON>}]}.
    ['--hotDocIDs not JSON', ['--cluster0', URI0, '--cluster1', URI1, '--hotDocIDs', '{db: shop}'], /--hotDocIDs is not valid JSON/],
    [
      '--hotDocIDs without ids',
      ['--cluster0', URI0, '--cluster1', URI1, '--hotDocIDs', '{"db": "shop", "collection": "counters"}'],
      /hotDocIDs: "ids" must be a non-empty array/,
    ],
    [
      '--hotDocIDs with a bare id',
      ['--cluster0', URI0, '--cluster1', URI1, '--hotDocIDs', '{"db": "shop", "collection": "counters", "ids": [7]}'],
      /hotDocIDs: ids\[0\] must be \{"_id": <canonical extended JSON>\}, got 7/,
    ],
    [
      '--hotDocIDs with a bad extended JSON value',
      ['--cluster0', URI0, '--cluster1', URI1, '--hotDocIDs', '{"db": "s", "collection": "c", "ids": [{"_id": {"$oid": "nope"}}]}'],
      /hotDocIDs: ids\[0\] is not valid extended JSON/,
    ],
    [
      '--hotDocIDs with an unknown field (mongosync names it "collection")',
      ['--cluster0', URI0, '--cluster1', URI1, '--hotDocIDs', '{"db": "s", "coll": "c", "ids": [{"_id": 1}]}'],
      /hotDocIDs: unknown field "coll"/,
    ],
  ];
  // Read at startup with every other option, never when first used (a bad one used to surface mid-run).
  const environment: [string, Record<string, string>, RegExp][] = [
    [
      'a commit retry interval of 0',
      { FERRY_COMMIT_RETRY_INTERVAL_MS: '0' },
      /FERRY_COMMIT_RETRY_INTERVAL_MS must be an integer from 1 to/,
    ],
    ['an unknown write path', { FERRY_COPY_WRITE_PATH: 'fast' }, /FERRY_COPY_WRITE_PATH must be one of raw, wire, decode, got "fast"/],
  ];
  for (const [what, env, message] of environment) {
    it(`${what} in the environment → exit 2 and ${message.source}`, () => {
      const { code, stdout, stderr } = runToExit(['--cluster0', URI0, '--cluster1', URI1], env);
      assert.equal(code, 2, stderr);
      assert.equal(stdout, '');
      assert.match(stderr, /^ferry: error: [^\n]+\n$/, 'exactly one line');
      assert.match(stderr, message);
    });
  }
  for (const [what, args, message] of cases) {
    it(`${what} → exit 2 and ${message.source}`, () => {
      const { code, stdout, stderr } = runToExit(args);
      assert.equal(code, 2);
      assert.equal(stdout, '');
      assert.match(stderr, /^ferry: error: [^\n]+\n$/, 'exactly one line');
      assert.match(stderr, message);
      assert.doesNotMatch(stderr, /pw-zero-secret|pw-one-secret/);
    });
  }

  it("-v and --version print the version and exit 0, as mongosync's do", () => {
    const { version } = JSON.parse(readFileSync(fileURLToPath(new URL('../../../package.json', import.meta.url)), 'utf8')) as {
      version: string;
    };
    for (const flag of ['-v', '--version']) {
      const { code, stdout } = runToExit([flag]);
      assert.equal(code, 0, flag);
      assert.equal(stdout.trim(), version, flag);
    }
  });

  it('--verbosity takes any case and the --name=value form; an unknown level → exit 2 naming the levels', () => {
    const { code, stderr } = runToExit(['--cluster0', URI0, '--cluster1', URI1, '--verbosity=loud']);
    assert.equal(code, 2);
    assert.match(stderr, /--verbosity must be one of TRACE, DEBUG, INFO, WARN, ERROR, FATAL, PANIC, got "loud"/);
  });

  it('--help prints usage and exits 0', () => {
    const { code, stdout } = runToExit(['--help']);
    assert.equal(code, 0);
    assert.match(stdout, /Usage: ferry \[options\]/);
    assert.match(stdout, /--loadLevel <1-4>/);
  });

  it('a port already in use → exit 1 with one line naming it', async () => {
    const server = createServer();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as { port: number };
    try {
      const result = await new Promise<{ code: number | null; stderr: string }>((resolve) => {
        const child = spawn(process.execPath, [MAIN, '--cluster0', URI0, '--cluster1', URI1, '--port', String(port)], {
          stdio: ['ignore', 'ignore', 'pipe'],
        });
        let stderr = '';
        child.stderr.on('data', (chunk) => (stderr += chunk));
        child.once('exit', (code) => resolve({ code, stderr }));
      });
      assert.equal(result.code, 1);
      assert.match(result.stderr, new RegExp(`^ferry: error: cannot listen on 127\\.0\\.0\\.1:${port}: [^\\n]*EADDRINUSE[^\\n]*\\n$`));
    } finally {
      server.close();
    }
  });
});

describe('the running daemon', () => {
  it("starts with the flags mongosync's launch scripts pass (no prompt, no telemetry, hot documents)", async () => {
    const daemon = await startDaemon([
      '--cluster0',
      URI0,
      '--cluster1',
      URI1,
      '--acceptDisclaimer',
      '--disableTelemetry',
      '--disableMetricsLogging',
      '--hotDocIDs',
      '{"db": "shop", "collection": "counters", "ids": [{"_id": {"$numberLong": "1"}}, {"_id": "sequence"}]}',
      '--verbosity=Info',
    ]);
    assert.equal((await progress(daemon.base)).state, 'IDLE');
    assert.equal(await stopDaemon(daemon), 0);
    assert.equal(daemon.log().at(-1)!.message, 'Stopped');
  });

  it('serves the API, logs JSON lines with its id and no password, and stops cleanly on SIGTERM', async () => {
    const daemon = await startDaemon(['--cluster0', URI0, '--cluster1', URI1, '--id', 'shard-a', '--verbosity', 'debug']);
    const idle = await progress(daemon.base);
    assert.equal(idle.state, 'IDLE');
    assert.equal(idle.canCommit, false);
    assert.equal(idle.directionMapping, null);
    for (const endpoint of ['pause', 'resume', 'commit', 'reverse']) {
      const refused = await post(daemon.base, endpoint, {});
      assert.equal(refused.status, 409, endpoint);
      assert.equal(refused.body.error, 'InvalidStateTransition');
    }
    const invalid = await post(daemon.base, 'start', { source: 'cluster0' });
    assert.equal(invalid.body.error, 'InvalidRequest');

    assert.equal(await stopDaemon(daemon), 0);
    const log = daemon.log();
    assert.ok(log.length > 0);
    for (const line of log) {
      assert.equal(line.mongosyncID, 'shard-a');
      assert.equal(typeof line.time, 'string');
    }
    const text = readFileSync(daemon.logFile, 'utf8');
    assert.doesNotMatch(text, /pw-zero-secret|pw-one-secret/);
    const startup = log.find((line) => line.message === 'Ferry starting')!;
    assert.equal((startup.options as Record<string, unknown>).cluster0, 'db0.example.net:27018');
    assert.ok(log.some((line) => line.message.includes('/api/v1/commit refused') && line.error === 'InvalidStateTransition'));
    assert.ok(log.some((line) => line.message === 'Received SIGTERM: stopping'));
    assert.equal(log.at(-1)!.message, 'Stopped');
    assert.ok(!log.some((line) => /unauthenticated|no authentication/.test(line.message)), 'no bind warning on loopback');
  });

  it('stops cleanly on SIGINT too', async () => {
    const daemon = await startDaemon(['--cluster0', URI0, '--cluster1', URI1]);
    assert.equal(await stopDaemon(daemon, 'SIGINT'), 0);
    assert.equal(daemon.log().at(-1)!.message, 'Stopped');
  });

  it('warns that the API has no authentication when bound beyond loopback', async () => {
    const daemon = await startDaemon(['--cluster0', URI0, '--cluster1', URI1, '--bindAddress', '0.0.0.0']);
    try {
      const warning = await daemon.waitFor((line) => line.level === 'warn' && /no authentication/.test(line.message));
      assert.equal(warning.bindAddress, '0.0.0.0');
    } finally {
      assert.equal(await stopDaemon(daemon), 0);
    }
  });

  it('rotates its log file on SIGUSR1: renamed to ferry-<time>.log, a new ferry.log naming it', async () => {
    const daemon = await startDaemon(['--cluster0', URI0, '--cluster1', URI1]);
    try {
      daemon.child.kill('SIGUSR1');
      const rotated = await daemon.waitFor((line) => line.message === 'Log file rotated');
      assert.match(String(rotated.previousFile), /ferry-\d{4}-\d\d-\d\dT\d\d-\d\d-\d\d\.\d{3}\.log$/);
      assert.ok(readLog(String(rotated.previousFile)).some((line) => line.message.startsWith('Control API listening')));
      assert.equal(daemon.log()[0]!.message, 'Log file rotated', 'the new file starts with the rotation');
    } finally {
      assert.equal(await stopDaemon(daemon), 0);
    }
  });

  it('after an external rotation (file moved away, then SIGUSR1) it opens a new ferry.log', async () => {
    const daemon = await startDaemon(['--cluster0', URI0, '--cluster1', URI1]);
    try {
      renameSync(daemon.logFile, `${daemon.logFile}.1`);
      daemon.child.kill('SIGUSR1');
      const rotated = await daemon.waitFor((line) => line.message === 'Log file rotated');
      assert.equal(rotated.previousFile, undefined);
      assert.ok(readLog(`${daemon.logFile}.1`).some((line) => line.message.startsWith('Control API listening')));
    } finally {
      assert.equal(await stopDaemon(daemon), 0);
    }
  });

  it("a second run in the same --logPath renames the first run's ferry.log aside and says so in its first line", async () => {
    const first = await startDaemon(['--cluster0', URI0, '--cluster1', URI1]);
    assert.equal(await stopDaemon(first), 0);
    const firstServer = first.log()[0]!.serverID;
    const second = await startDaemon(['--cluster0', URI0, '--cluster1', URI1], dirname(first.logFile));
    try {
      const [opening] = second.log();
      assert.equal(opening!.message, 'Log file started');
      assert.notEqual(opening!.serverID, firstServer, 'each run has its own serverID');
      const previous = readLog(String(opening!.previousFile));
      assert.equal(previous.at(-1)!.message, 'Stopped');
      assert.ok(
        previous.every((line) => line.serverID === firstServer),
        'nothing of the second run in the first file',
      );
    } finally {
      assert.equal(await stopDaemon(second), 0);
    }
  });

  it('SIGHUP applies live options from --config (logged, served); a bad value is refused by name and changes nothing', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'ferry-cli-reload-'));
    const config = join(dir, 'ferry.yaml');
    const write = (extra: string) => writeFileSync(config, `cluster0: "${URI0}"\ncluster1: "${URI1}"\n${extra}`);
    write('copyWorkers: 2\n');
    const daemon = await startDaemon(['--config', config, '--applyLanes', '3']);
    const served = async (name: string) => {
      const text = await (await fetch(`${daemon.base}/metrics`)).text();
      return Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(text)?.[1]);
    };
    try {
      assert.equal(await served('ferry_tuning_copy_workers'), 2);
      write('copyWorkers: 6\nbatchBytes: 65536\napplyLanes: 12\n');
      daemon.child.kill('SIGHUP');
      const reloaded = await daemon.waitFor((line) => line.message.startsWith('Configuration reloaded'));
      assert.match(reloaded.message, /copyWorkers 2 → 6/);
      assert.match(reloaded.message, /batchBytes 2097152 → 65536/);
      assert.doesNotMatch(reloaded.message, /applyLanes/, 'the flag still wins over the file');
      assert.equal(await served('ferry_tuning_copy_workers'), 6);
      assert.equal(await served('ferry_tuning_batch_bytes'), 65536);
      assert.equal(await served('ferry_tuning_apply_lanes'), 3);

      write('copyWorkers: 0\nbatchBytes: 4096\n');
      daemon.child.kill('SIGHUP');
      const refused = await daemon.waitFor((line) => line.message.startsWith('Configuration reload refused'));
      assert.match(refused.message, /nothing changed: "copyWorkers" in .*ferry\.yaml must be an integer from 1 to 256, got 0/);
      assert.equal(await served('ferry_tuning_copy_workers'), 6);
      assert.equal(await served('ferry_tuning_batch_bytes'), 65536, 'all or nothing: the good value beside the bad one is not applied');

      write('copyWorkers: 6\nbatchBytes: 65536\npartitionSizeMB: 32\n');
      daemon.child.kill('SIGHUP');
      const restart = await daemon.waitFor((line) => /take effect only when Ferry restarts/.test(line.message));
      assert.deepEqual(restart.options, ['partitionSizeMB']);
    } finally {
      assert.equal(await stopDaemon(daemon), 0);
    }
  });

  it('takes options from --config, with flags winning', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'ferry-cli-config-'));
    const config = join(dir, 'ferry.yaml');
    writeFileSync(config, `cluster0: "${URI0}"\ncluster1: "${URI1}"\nid: from-file\nloadLevel: 1\napplyLanes: 3\n`);
    const daemon = await startDaemon(['--config', config, '--loadLevel', '2']);
    try {
      const options = daemon.log().find((line) => line.message === 'Ferry starting')!.options as Record<string, unknown>;
      assert.equal(options.id, 'from-file');
      assert.equal(options.loadLevel, 2);
      assert.equal(options.applyLanes, 3);
      assert.equal(options.copyWorkers, 2);
    } finally {
      assert.equal(await stopDaemon(daemon), 0);
    }
  });
});

describe('preflight through the daemon, against real clusters', () => {
  let pair: ClusterPair;
  let daemon: Daemon;
  const db = `ferry_cli_${process.pid}`;
  before(async () => {
    pair = await startClusterPair();
    daemon = await startDaemon(['--cluster0', pair.cluster0, '--cluster1', pair.cluster1]);
  });
  after(async () => {
    await stopDaemon(daemon);
    const client = await MongoClient.connect(pair.cluster1);
    await client.db(db).dropDatabase();
    await client.close();
    await pair.stop();
  });

  it('a destination holding selected documents → 422 DestinationNotEmpty', async () => {
    const client = await MongoClient.connect(pair.cluster1);
    try {
      await client.db(db).collection<{ _id: number }>('users').insertOne({ _id: 1 });
      const response = await post(daemon.base, 'start', { source: 'cluster0', destination: 'cluster1' });
      assert.equal(response.status, 422);
      assert.equal(response.body.error, 'DestinationNotEmpty');
      assert.match(response.body.errorDescription, new RegExp(`${db}\\.users`));
      assert.equal((await progress(daemon.base)).state, 'IDLE');
    } finally {
      await client.db(db).dropDatabase();
      await client.close();
    }
  });

  it('a start whose preflight passes starts the sync (after the refusal above, which changed nothing)', async () => {
    const response = await post(daemon.base, 'start', { source: 'cluster0', destination: 'cluster1' });
    assert.equal(response.status, 200);
    assert.equal(response.body.success, true);
    assert.equal((await progress(daemon.base)).state, 'RUNNING');
  });
});
