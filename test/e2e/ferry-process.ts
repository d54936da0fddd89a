/**
 * Driving the real `ferry` process as an operator would, for end-to-end tests: spawn the CLI
 * (`node dist/src/cli/main.js --port 0 --logPath <dir> ...`), POST to its control API, poll
 * progress, stop it with a signal. (Not a test file: helpers only.)
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { MongoClient } from 'mongodb';
import { isReservedDatabase } from '../../src/domain/namespaces.js';

const MAIN = fileURLToPath(new URL('../../src/cli/main.js', import.meta.url));

export type Progress = Record<string, any> & { state: string };

export interface FerryProcess {
  child: ChildProcess;
  base: string;
  logFile: string;
  exit: Promise<number | null>;
  /** Every log line so far, parsed. */
  log(): Record<string, any>[];
  post(path: string, body?: unknown): Promise<{ status: number; body: Record<string, any> }>;
  progress(): Promise<Progress>;
  /** `GET /api/v1/verification` (with `query`, e.g. `limit=5`): the verifier's report, or null. */
  verification(query?: string): Promise<Record<string, any> | null>;
  /** Polls the verifier's report until `done` holds; fails after `timeoutMs` with the last report seen. */
  waitForVerification(done: (report: Record<string, any>) => boolean, timeoutMs?: number): Promise<Record<string, any>>;
  /** Polls progress until `done` holds; fails after `timeoutMs` with the last progress seen. */
  waitForProgress(done: (progress: Progress) => boolean, timeoutMs?: number): Promise<Progress>;
  /** Sends a signal and waits for the exit code. */
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

function readLog(path: string): Record<string, any>[] {
  if (!existsSync(path)) return [];
  return readFileSync(path, 'utf8')
    .split('\n')
    .filter((line) => line.length > 0)
    .map((line) => JSON.parse(line) as Record<string, any>);
}

/** How the ferry process is spawned, besides its flags. */
export interface FerrySpawnOptions {
  /** Its working directory. Default: this process's. */
  cwd?: string;
  /** False: its environment is `env` and PATH only, nothing inherited from this process. Default true. */
  inheritEnv?: boolean;
  /** Ferry's entry point (another build's `dist/src/cli/main.js`, to compare builds). Default this build's. */
  main?: string;
}

/**
 * Starts ferry and resolves once its API listens and it has left INITIALIZING. `nodeArgs` are
 * flags for its node (benchmarks pass `--cpu-prof`, which NODE_OPTIONS does not allow).
 */
export async function startFerry(
  args: string[],
  env: Record<string, string> = {},
  logDir?: string,
  nodeArgs: string[] = [],
  options: FerrySpawnOptions = {},
): Promise<FerryProcess> {
  const dir = logDir ?? mkdtempSync(join(tmpdir(), 'ferry-e2e-'));
  const logFile = join(dir, 'ferry.log');
  const inherited = options.inheritEnv === false ? { PATH: process.env.PATH ?? '' } : process.env;
  const child = spawn(process.execPath, [...nodeArgs, options.main ?? MAIN, '--port', '0', '--logPath', dir, ...args], {
    stdio: ['ignore', 'ignore', 'pipe'],
    env: { ...inherited, ...env },
    ...(options.cwd === undefined ? {} : { cwd: options.cwd }),
  });
  let stderr = '';
  child.stderr!.on('data', (chunk) => (stderr += chunk));
  const exit = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  let exited = false;
  void exit.then(() => (exited = true));
  // Ferry renames an earlier run's ferry.log aside when it starts; until it has, the file holds
  // that run's lines: look only at what this process wrote, from its first line on.
  const ownLog = () => {
    const lines = readLog(logFile);
    return lines[0]?.pid === child.pid ? lines : [];
  };
  let port: number | undefined;
  let host = '127.0.0.1';
  const startupDeadline = Date.now() + 30_000;
  while (port === undefined) {
    if (exited) throw new Error(`ferry exited during startup: ${stderr}`);
    if (Date.now() > startupDeadline) {
      child.kill('SIGKILL');
      throw new Error(`ferry did not start listening within 30 s: ${stderr}`);
    }
    const listening = ownLog().find((line) => String(line.message).startsWith('Control API listening'));
    port = listening?.port as number | undefined;
    if (typeof listening?.host === 'string') host = listening.host.includes(':') ? `[${listening.host}]` : listening.host;
    await pause(20);
  }
  const base = `http://${host}:${port}`;
  const progress = async (): Promise<Progress> => {
    const response = await fetch(`${base}/api/v1/progress`);
    return ((await response.json()) as { progress: Progress }).progress;
  };
  const waitForProgress = async (done: (progress: Progress) => boolean, timeoutMs = 60_000): Promise<Progress> => {
    const deadline = Date.now() + timeoutMs;
    let last: Progress | undefined;
    for (;;) {
      if (exited) throw new Error(`ferry exited while waiting: ${stderr}`);
      try {
        last = await progress();
      } catch (error) {
        // A refused connection from a process on its way out: say why it went, not that fetch failed.
        await Promise.race([exit, pause(2000)]);
        if (exited) throw new Error(`ferry exited while waiting: ${stderr}`, { cause: error });
        throw error;
      }
      if (done(last)) return last;
      if (Date.now() > deadline) throw new Error(`timed out waiting for progress; last: ${JSON.stringify(last)}`);
      // Every test waits here most of its time: a request each 100 ms (not 50) halves what waiting
      // costs the machine's CPU, which a full run of the suite is short of.
      await pause(100);
    }
  };
  const verification = async (query?: string): Promise<Record<string, any> | null> => {
    const response = await fetch(`${base}/api/v1/verification${query === undefined ? '' : `?${query}`}`);
    const body = (await response.json()) as { success: boolean; verification?: Record<string, any> | null };
    if (!body.success) throw new Error(`verification report refused: ${JSON.stringify(body)}`);
    return body.verification ?? null;
  };
  const waitForVerification = async (done: (report: Record<string, any>) => boolean, timeoutMs = 60_000): Promise<Record<string, any>> => {
    const deadline = Date.now() + timeoutMs;
    let last: Record<string, any> | null = null;
    for (;;) {
      if (exited) throw new Error(`ferry exited while waiting: ${stderr}`);
      last = await verification();
      if (last !== null && done(last)) return last;
      if (Date.now() > deadline) throw new Error(`timed out waiting for the verification report; last: ${JSON.stringify(last)}`);
      await pause(100);
    }
  };
  await waitForProgress((p) => p.state !== 'INITIALIZING', 30_000).catch((error: unknown) => {
    child.kill('SIGKILL'); // a caller that gets no handle cannot stop it
    throw error;
  });
  return {
    child,
    base,
    logFile,
    exit,
    log: ownLog,
    post: async (path, body = {}) => {
      const response = await fetch(`${base}/api/v1/${path}`, { method: 'POST', body: JSON.stringify(body) });
      return { status: response.status, body: (await response.json()) as Record<string, any> };
    },
    progress,
    waitForProgress,
    verification,
    waitForVerification,
    stop: async (signal = 'SIGTERM') => {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      const code = await exit;
      // A stop that failed is asserted by its caller as a bare exit code: say here what Ferry said.
      if (signal !== 'SIGKILL' && code !== 0) {
        const said = ownLog().filter((line) => line.level !== 'info' && line.level !== 'debug');
        process.stderr.write(
          `ferry (pid ${child.pid}) exited with ${code} on ${signal}; its last warnings: ${JSON.stringify(said.slice(-3))}\n${stderr}`,
        );
      }
      return code;
    },
  };
}

/** The copy has finished (the initial copy's last phase reached). */
export const copyFinished = (progress: Progress): boolean =>
  (typeof progress.info === 'string' && progress.info.startsWith('copy complete')) || progress.info === 'change event application';

/**
 * Asks for the commit once progress says `canCommit`, and again on NotReadyToCommit, as an operator
 * would: canCommit can fall back between the progress read and the commit (lag over 30 s after a
 * burst of writes or a restart). Returns the last answer (at most `tries` asked).
 */
export async function commitWhenReady(ferry: FerryProcess, tries = 6): Promise<{ status: number; body: Record<string, any> }> {
  for (let tried = 1; ; tried++) {
    await ferry.waitForProgress((p) => p.canCommit === true, 120_000);
    const committed = await ferry.post('commit', {});
    if (committed.status !== 409 || committed.body.error !== 'NotReadyToCommit' || tried >= tries) return committed;
  }
}

/**
 * Drops every database on the cluster at `uri` but admin, local, config and Ferry's metadata, so
 * that a sync can start there: mongosync's rule, which Ferry follows, is that a destination holds
 * no namespace at all unless the start sets `preExistingDestinationData`.
 */
export async function emptyDestination(uri: string): Promise<void> {
  const client = await MongoClient.connect(uri);
  try {
    const { databases } = await client.db('admin').command({ listDatabases: 1, nameOnly: true });
    for (const { name } of databases as { name: string }[]) if (!isReservedDatabase(name)) await client.db(name).dropDatabase();
  } finally {
    await client.close();
  }
}
