/**
 * A test-cluster node in a child process that tests can kill, restart and freeze, the way an
 * operator's or a machine's trouble would hit a mongod: `kill('SIGKILL')` then `start()` (or
 * `restart({signal: 'SIGKILL'})`) brings the same node back on the same port, and with a `dbPath`
 * with its data; `freeze()`/`resume()` (SIGSTOP/SIGCONT) leave its connections open but
 * unanswered, as a stalled server's.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { UserSpec } from './auth/users.js';

export interface RestartOptions {
  /** The signal that ends the running process first (default SIGTERM: a clean shutdown). */
  signal?: NodeJS.Signals;
}

export class ClusterProcess {
  private child: ChildProcess | undefined;
  private exited: Promise<void> = Promise.resolve();
  /** Set by `freeze()` until `resume()`. */
  frozen = false;
  uri = '';
  port: number;

  /**
   * `args`: the entry point's flags except `--port`; `port` 0 picks a free port at the first
   * start, kept for every restart. `users` go through a private temporary file, never the command line.
   */
  constructor(
    private readonly main: string,
    private readonly args: string[],
    private readonly nodeArgs: string[],
    port: number,
    private readonly users?: UserSpec[],
  ) {
    this.port = port;
  }

  /** The running process's id (a new one after each start). */
  get pid(): number {
    return this.child?.pid ?? 0;
  }

  /** Whether the process is running (frozen counts as running). */
  get running(): boolean {
    return this.child !== undefined && this.child.exitCode === null && this.child.signalCode === null;
  }

  /** Starts the node (again) on its port; resolves once it accepts connections. */
  async start(): Promise<void> {
    if (this.running) throw new Error(`test cluster on port ${this.port} is already running (pid ${this.pid})`);
    const args = [...this.args, '--port', String(this.port)];
    const usersDir = this.users ? await mkdtemp(join(tmpdir(), 'ferry-cluster-users-')) : undefined;
    try {
      if (usersDir) {
        const file = join(usersDir, 'users.json');
        await writeFile(file, JSON.stringify(this.users), { mode: 0o600 });
        args.push('--usersFile', file);
      }
      const child = spawn(process.execPath, [...this.nodeArgs, this.main, ...args], { stdio: ['ignore', 'pipe', 'inherit'] });
      this.child = child;
      this.frozen = false;
      this.exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
      const lines = createInterface({ input: child.stdout! });
      this.uri = await new Promise<string>((resolve, reject) => {
        lines.once('line', resolve);
        child.once('exit', (code, signal) => reject(new Error(`test cluster exited (${signal ?? `code ${code}`}) before listening`)));
      });
      lines.on('line', () => {}); // keep draining stdout
      this.port = Number(new URL(this.uri).port);
    } finally {
      if (usersDir) await rm(usersDir, { recursive: true, force: true });
    }
  }

  /**
   * Sends `signal` (default SIGTERM) and waits for the process to exit. A frozen process is
   * continued after the signal is sent, so that it can take it (SIGKILL needs no such help).
   */
  async kill(signal: NodeJS.Signals = 'SIGTERM'): Promise<void> {
    const child = this.child;
    if (child && this.running) {
      child.kill(signal);
      if (this.frozen && signal !== 'SIGKILL') child.kill('SIGCONT');
    }
    await this.exited;
    this.frozen = false;
  }

  /** Ends the process with `signal` and starts the node again on the same port (and data directory). */
  async restart(options: RestartOptions = {}): Promise<void> {
    await this.kill(options.signal ?? 'SIGTERM');
    await this.start();
  }

  /** Stops the process (SIGSTOP): connections stay open, nothing is answered until `resume()`. */
  freeze(): void {
    if (!this.running) throw new Error('test cluster is not running');
    this.child!.kill('SIGSTOP');
    this.frozen = true;
  }

  /** Continues a frozen process (SIGCONT). */
  resume(): void {
    if (this.running) this.child!.kill('SIGCONT');
    this.frozen = false;
  }

  /** A clean shutdown (SIGTERM, continuing a frozen process), waited for; `start()` may follow. */
  async stop(): Promise<void> {
    await this.kill('SIGTERM');
  }
}
