/**
 * The fault matrix (issue 18): the real `ferry` process syncing a pair of test clusters while
 * faults hit it, each case ending with the destination equal to the source, or with a named error
 * and no COMMITTED: never a wrong destination reported as committed. (Not a test file: the cases
 * run in fault-matrix.test.ts, a larger sweep in bench/faults.ts.)
 *
 * Three kinds of scenario, each one sync on small data:
 * - `failCommand` (mongod's fail point, test/cluster/failpoints/): a queue of cases, each one
 *   command of one of Ferry's clients (`appName` ferry, ferry-copy, ferry-apply; often one
 *   namespace) failing once with a transient error (mongod's labels), a dropped connection, a
 *   blocked connection or a write concern error, armed in turn at start, during the copy, during
 *   change-event application (with the source change that makes Ferry issue the command) and
 *   during the commit. Cases a scenario does not reach are carried to the next.
 * - restarts: each cluster killed (SIGKILL) and started again with its data (`dbPath`) mid-copy,
 *   mid-application and during COMMITTING.
 * - SIGKILL of Ferry at seeded random moments, with a seeded workload writing to the source; the
 *   seed is printed with every failure and set by `FERRY_FAULT_SEED`.
 *
 * What each case came to is recorded (`CaseResult`): absorbed (Ferry carried on), paused (Ferry
 * paused itself with a named error in `warnings`; the scenario resumes it, as an operator would),
 * refused (an API request answered a named error; the scenario asks again), not reached. The
 * scenario ends with COMMITTED and the destination compared with the source.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Int32, type Document } from 'bson';
import { MongoClient } from 'mongodb';
import { compareClusters, temporaryIndexForm, type ClusterDifference } from '../../scripts/lib/compare-clusters.js';
import { temporaryCollectionOptions } from '../../src/plan/collection-options.js';
import { METADATA_DATABASE } from '../../src/domain/namespaces.js';
import type { NamespaceFilter } from '../../src/domain/start-request.js';
import { createNamespaceSelector } from '../../src/plan/namespaces.js';
import { spawnCluster, type ClusterProcess } from '../cluster/index.js';
import { playOperations, sampleOperations, seed as seedCollections } from './cea-workload.js';
import { emptyDestination, startFerry, type FerryProcess, type Progress } from './ferry-process.js';

export type NodeName = 'source' | 'destination';
export type Phase = 'start' | 'copy' | 'cea' | 'commit';
export type FaultKind = 'error' | 'closeConnection' | 'blockConnection' | 'writeConcernError';
/** Ferry's clients, by the `appName` each connects with (src/cluster/connect.ts and the worker threads). */
export type FerryApp = 'ferry' | 'ferry-copy' | 'ferry-apply';

/** What the scenario does on the source so that Ferry issues a command during change-event application. */
export type Trigger =
  'none' | 'crud' | 'create' | 'createIndexes' | 'collMod' | 'dropIndexes' | 'drop' | 'rename' | 'renameInto' | 'pauseResume';

/** One command of one of Ferry's clients, at one phase of the sync. */
export interface FaultTarget {
  phase: Phase;
  node: NodeName;
  command: string;
  app: FerryApp;
  /** The namespace, `<db>` standing for the scenario's database and `<meta>` for Ferry's metadata database. */
  namespace?: string;
  /** CEA only: what makes Ferry issue it (default `none`: it comes by itself). */
  trigger?: Trigger;
  /** Copy only: the part of the initial copy that issues it (a case waits armed until that part is over). */
  moment?: Moment;
}

/**
 * The parts of the initial copy: planning (catalog, partitions, creation), copying the
 * partitions, after the copy (index builds, the completion note).
 */
export type Moment = 'planning' | 'copying' | 'copied';

export interface FaultCase {
  target: FaultTarget;
  kind: FaultKind;
  /** Which error code of the kind (default: the scenario's seeded choice). */
  variant?: number;
}

export type Outcome = 'absorbed' | 'paused' | 'refused' | 'not reached';

export interface CaseResult {
  case: FaultCase;
  outcome: Outcome;
  /** The named error Ferry showed (pause warning, API error), if any. */
  error?: string;
}

/** What a scenario ended with. */
export interface ScenarioResult {
  name: string;
  results: CaseResult[];
  /** COMMITTED reached. */
  committed: boolean;
  /** How the committed destination differs from the source (empty when equal). */
  differences: ClusterDifference[];
  /** Faults injected by other means than fail points (restarts, kills). */
  injected: string[];
  /** Named errors seen (pauses, refusals) other than the cases'. */
  errors: string[];
  /** The named error a sync kept pausing on until the step's deadline (never COMMITTED), if it did. */
  stuck?: string;
}

/** A sync that kept pausing itself on a named error until a step's deadline: the "named error and no COMMITTED" outcome. */
export class StuckPaused extends Error {
  constructor(
    readonly id: string,
    readonly warning: string,
  ) {
    super(`${id}: paused again and again until the deadline: ${warning}`);
  }
}

/** Transient server errors a failover or an overloaded server gives, with mongod's labels. */
const TRANSIENT_CODES = [
  { code: 10107, name: 'NotWritablePrimary' },
  { code: 11602, name: 'InterruptedDueToReplStateChange' },
  { code: 189, name: 'PrimarySteppedDown' },
  { code: 91, name: 'ShutdownInProgress' },
  { code: 6, name: 'HostUnreachable' },
];

/** Write concern errors: a majority not reached in time, and a member shutting down. */
const WRITE_CONCERN_ERRORS = [
  { code: 64, codeName: 'WriteConcernFailed', errmsg: 'waiting for replication timed out', errInfo: { wtimeout: true } },
  { code: 91, codeName: 'ShutdownInProgress', errmsg: 'Replication is being shut down' },
];

/** Commands that take a write concern (a write concern error can only be added to these). */
const WRITES = new Set([
  'insert',
  'update',
  'delete',
  'create',
  'createIndexes',
  'collMod',
  'dropIndexes',
  'drop',
  'renameCollection',
  'setUserWriteBlockMode',
  'findAndModify',
]);

export function describeCase(c: FaultCase): string {
  const { target } = c;
  return `${target.phase} ${target.node} ${target.app} ${target.command}${target.namespace ? ` ${target.namespace}` : ''} ${c.kind}`;
}

/** The `failCommand` data of a case, `variant` choosing among error codes. */
export function failCommandData(c: FaultCase, db: string, seeded: number): Document {
  const { target } = c;
  const variant = c.variant ?? seeded;
  const data: Document = { failCommands: [target.command], appName: target.app };
  if (target.namespace !== undefined) data.namespace = target.namespace.replace('<db>', db).replace('<meta>', METADATA_DATABASE);
  switch (c.kind) {
    case 'error':
      data.errorCode = TRANSIENT_CODES[variant % TRANSIENT_CODES.length]!.code;
      break;
    case 'closeConnection':
      data.closeConnection = true;
      break;
    case 'blockConnection':
      data.blockConnection = true;
      data.blockTimeMS = 1200;
      break;
    case 'writeConcernError':
      data.writeConcernError = WRITE_CONCERN_ERRORS[variant % WRITE_CONCERN_ERRORS.length];
      break;
  }
  return data;
}

/** The targets of the matrix: the commands Ferry issues at each phase (found by logging them, see the README). */
export const TARGETS: readonly FaultTarget[] = [
  // Start: preflight, T0, the resume document, write blocking.
  { phase: 'start', node: 'source', command: 'appendOplogNote', app: 'ferry' },
  { phase: 'start', node: 'source', command: 'hello', app: 'ferry' },
  { phase: 'start', node: 'destination', command: 'listDatabases', app: 'ferry' },
  { phase: 'start', node: 'destination', command: 'insert', app: 'ferry', namespace: '<meta>.resume' },
  { phase: 'start', node: 'destination', command: 'setUserWriteBlockMode', app: 'ferry' },
  // Planning and copy.
  { phase: 'copy', node: 'source', command: 'listDatabases', app: 'ferry', moment: 'planning' },
  { phase: 'copy', node: 'source', command: 'listCollections', app: 'ferry', namespace: '<db>.$cmd', moment: 'planning' },
  { phase: 'copy', node: 'source', command: 'listIndexes', app: 'ferry', namespace: '<db>.c0', moment: 'planning' },
  { phase: 'copy', node: 'source', command: 'aggregate', app: 'ferry', namespace: '<db>.docs', moment: 'planning' },
  { phase: 'copy', node: 'source', command: 'aggregate', app: 'ferry', namespace: 'admin.$cmd', moment: 'copying' },
  { phase: 'copy', node: 'destination', command: 'create', app: 'ferry', namespace: '<db>.docs', moment: 'planning' },
  { phase: 'copy', node: 'destination', command: 'insert', app: 'ferry', namespace: '<meta>.partitions', moment: 'planning' },
  { phase: 'copy', node: 'source', command: 'find', app: 'ferry-copy', namespace: '<db>.docs', moment: 'copying' },
  { phase: 'copy', node: 'source', command: 'getMore', app: 'ferry-copy', namespace: '<db>.docs', moment: 'copying' },
  { phase: 'copy', node: 'destination', command: 'insert', app: 'ferry-copy', namespace: '<db>.docs', moment: 'copying' },
  { phase: 'copy', node: 'destination', command: 'update', app: 'ferry-copy', namespace: '<meta>.partitions', moment: 'copying' },
  { phase: 'copy', node: 'destination', command: 'insert', app: 'ferry-apply', namespace: '<meta>.tombstones', moment: 'copying' },
  { phase: 'copy', node: 'destination', command: 'createIndexes', app: 'ferry', namespace: '<db>.c0', moment: 'copied' },
  { phase: 'copy', node: 'destination', command: 'update', app: 'ferry', namespace: '<meta>.resume', moment: 'copied' },
  { phase: 'copy', node: 'source', command: 'appendOplogNote', app: 'ferry', moment: 'copied' },
  // Change-event application.
  { phase: 'cea', node: 'source', command: 'getMore', app: 'ferry', namespace: 'admin.$cmd.aggregate' },
  { phase: 'cea', node: 'source', command: 'aggregate', app: 'ferry', namespace: 'admin.$cmd', trigger: 'pauseResume' },
  { phase: 'cea', node: 'destination', command: 'update', app: 'ferry-apply', trigger: 'crud' },
  { phase: 'cea', node: 'destination', command: 'delete', app: 'ferry-apply', trigger: 'crud' },
  { phase: 'cea', node: 'destination', command: 'update', app: 'ferry', namespace: '<meta>.changeStream', trigger: 'crud' },
  { phase: 'cea', node: 'destination', command: 'create', app: 'ferry', trigger: 'create' },
  { phase: 'cea', node: 'destination', command: 'createIndexes', app: 'ferry', trigger: 'createIndexes' },
  { phase: 'cea', node: 'destination', command: 'update', app: 'ferry', namespace: '<meta>.namespaces', trigger: 'createIndexes' },
  { phase: 'cea', node: 'destination', command: 'collMod', app: 'ferry', trigger: 'collMod' },
  { phase: 'cea', node: 'destination', command: 'dropIndexes', app: 'ferry', trigger: 'dropIndexes' },
  { phase: 'cea', node: 'destination', command: 'drop', app: 'ferry', trigger: 'drop' },
  { phase: 'cea', node: 'destination', command: 'delete', app: 'ferry', namespace: '<meta>.namespaces', trigger: 'drop' },
  { phase: 'cea', node: 'destination', command: 'renameCollection', app: 'ferry', trigger: 'rename' },
  { phase: 'cea', node: 'source', command: 'listCollections', app: 'ferry', trigger: 'renameInto' },
  { phase: 'cea', node: 'source', command: 'find', app: 'ferry', trigger: 'renameInto' },
  { phase: 'cea', node: 'destination', command: 'update', app: 'ferry', trigger: 'renameInto' },
  // Commit.
  { phase: 'commit', node: 'source', command: 'appendOplogNote', app: 'ferry' },
  { phase: 'commit', node: 'destination', command: 'update', app: 'ferry', namespace: '<meta>.commit' },
  { phase: 'commit', node: 'destination', command: 'find', app: 'ferry', namespace: '<meta>.namespaces' },
  { phase: 'commit', node: 'destination', command: 'listIndexes', app: 'ferry' },
  { phase: 'commit', node: 'destination', command: 'listCollections', app: 'ferry' },
  { phase: 'commit', node: 'destination', command: 'collMod', app: 'ferry' },
  { phase: 'commit', node: 'destination', command: 'setUserWriteBlockMode', app: 'ferry' },
  { phase: 'commit', node: 'destination', command: 'update', app: 'ferry', namespace: '<meta>.resume' },
];

export const FAULT_KINDS: readonly FaultKind[] = ['error', 'closeConnection', 'blockConnection', 'writeConcernError'];

/** Every case of the matrix: each target with each kind that applies to it. */
export function allCases(targets: readonly FaultTarget[] = TARGETS): FaultCase[] {
  return targets.flatMap((target) =>
    FAULT_KINDS.filter((kind) => kind !== 'writeConcernError' || WRITES.has(target.command)).map((kind) => ({ target, kind })),
  );
}

/** A small deterministic random generator (mulberry32), for seeded choices. */
export function random(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** `FERRY_FAULT_TRACE=1` prints each case as it ends. */
function trace(line: string): void {
  if (process.env.FERRY_FAULT_TRACE === '1') console.log(`[faults] ${line}`);
}

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** The two clusters the scenarios run on, with test commands and data directories (restarts keep the data). */
export interface MatrixClusters {
  source: ClusterProcess;
  destination: ClusterProcess;
  sourceClient: MongoClient;
  destinationClient: MongoClient;
  node(name: NodeName): ClusterProcess;
  client(name: NodeName): MongoClient;
  stop(): Promise<void>;
}

export async function startMatrixClusters(): Promise<MatrixClusters> {
  const options = (name: string) => ({ enableTestCommands: true, dbPath: mkdtempSync(join(tmpdir(), `ferry-faults-${name}-`)) });
  const [source, destination] = await Promise.all([spawnCluster(options('source')), spawnCluster(options('destination'))]);
  const sourceClient = await MongoClient.connect(source.uri);
  const destinationClient = await MongoClient.connect(destination.uri);
  return {
    source,
    destination,
    sourceClient,
    destinationClient,
    node: (name) => (name === 'source' ? source : destination),
    client: (name) => (name === 'source' ? sourceClient : destinationClient),
    stop: async () => {
      await Promise.allSettled([sourceClient.close(), destinationClient.close()]);
      await Promise.all([source.stop(), destination.stop()]);
    },
  };
}

/** Ferry's tuning in the scenarios: small batches (many commands to fault), quick checkpoints and commit retries. */
const FERRY_FLAGS = ['--copyWorkers', '2', '--batchesInFlight', '1', '--batchBytes', '4096', '--applyLanes', '2'];
const FERRY_ENV = {
  FERRY_CHECKPOINT_INTERVAL_MS: '100',
  FERRY_CEA_CHECKPOINT_INTERVAL_MS: '100',
  FERRY_COMMIT_RETRY_INTERVAL_MS: '200',
};

/**
 * `uri` with the driver checking each server every 500 ms instead of every 10 s. An injected
 * "not primary" or "shutting down" error, or a closed connection, marks the server unknown, and the
 * driver then waits for the check of the server it has in progress: a real failover changes the
 * server's topology version, which answers that check at once; a fail point does not, so each such
 * case cost the scenario up to 10 s of waiting.
 */
function quickMonitoring(uri: string): string {
  const url = new URL(uri);
  url.searchParams.set('heartbeatFrequencyMS', '500');
  return url.toString();
}

/** Longest wait for any one step of a scenario. */
const STEP_TIMEOUT_MS = 60_000;

/**
 * The source data of a scenario: the CEA workload's collections (unique, TTL, hidden, partial
 * indexes), more to copy, a capped collection, and collections outside the filter.
 */
async function seedSource(client: MongoClient, db: string, documents: number): Promise<void> {
  await seedCollections(client, db, 100);
  await client
    .db(db)
    .collection('docs')
    .insertMany(Array.from({ length: documents }, (_, i) => ({ _id: i, n: new Int32(i), pad: 'd'.repeat(200) })) as Document[]);
  await client.db(db).createCollection('capped', { capped: true, size: 65536, max: 100 });
  await client
    .db(db)
    .collection('capped')
    .insertMany(Array.from({ length: 50 }, (_, i) => ({ _id: i })) as Document[]);
  for (let i = 0; i < 4; i++) {
    await client
      .db(db)
      .collection(`outside${i}`)
      .insertMany(Array.from({ length: 300 }, (_, k) => ({ _id: k, k })) as Document[]);
  }
}

/**
 * The filter of every scenario: the database, but the `outside*` and `skip` collections (renames
 * bring them in or take synced ones out).
 */
export function scenarioFilter(db: string): { includeNamespaces: NamespaceFilter[]; excludeNamespaces: NamespaceFilter[] } {
  return {
    includeNamespaces: [{ database: db }],
    excludeNamespaces: [{ database: db, collectionsRegex: { pattern: '^(outside|skip)' } }],
  };
}

/**
 * One sync driven as an operator would: started, resumed when it pauses itself, restarted when
 * its process is gone, committed; every named error it shows is collected.
 */
export class SyncDriver {
  ferry!: FerryProcess;
  readonly errors: string[] = [];
  readonly #args: string[];
  readonly #logDir = mkdtempSync(join(tmpdir(), 'ferry-faults-log-'));
  #markers = 0;

  constructor(
    readonly clusters: MatrixClusters,
    readonly id: string,
    readonly db: string,
  ) {
    this.#args = [
      '--cluster0',
      quickMonitoring(clusters.source.uri),
      '--cluster1',
      quickMonitoring(clusters.destination.uri),
      '--id',
      id,
      ...FERRY_FLAGS,
    ];
  }

  get logFile(): string {
    return join(this.#logDir, 'ferry.log');
  }

  async launch(): Promise<void> {
    this.ferry = await startFerry(this.#args, FERRY_ENV, this.#logDir);
  }

  /** Whether the process is still running. */
  get alive(): boolean {
    return this.ferry.child.exitCode === null && this.ferry.child.signalCode === null;
  }

  async kill(): Promise<void> {
    this.ferry.child.kill('SIGKILL');
    await this.ferry.exit;
  }

  /** Progress; a process found gone is started again (it recovers its sync). */
  async progress(): Promise<Progress> {
    if (!this.alive) {
      this.errors.push(`ferry exited (code ${this.ferry.child.exitCode ?? this.ferry.child.signalCode})`);
      await this.launch();
    }
    try {
      return await this.ferry.progress();
    } catch (error) {
      if (this.alive) throw error;
      return this.progress();
    }
  }

  /** POSTs until the answer is 200 (a named error in between is recorded, NotReadyToCommit asked again); returns the errors seen. */
  async post(path: string, body: Document, ready: (p: Progress) => boolean = () => true): Promise<string[]> {
    const refused: string[] = [];
    const deadline = Date.now() + STEP_TIMEOUT_MS;
    for (;;) {
      await this.until(ready);
      const answer = await this.ferry
        .post(path, body)
        .catch((error: Error) => ({ status: 0, body: { error: error.message } as Record<string, unknown> }));
      if (answer.status === 200) return refused;
      const error = `${path}: ${answer.status} ${String(answer.body.error)}: ${String(answer.body.errorDescription ?? '')}`;
      // No answer (status 0): the process went (a kill); `until` starts it again and the request is asked again.
      if (answer.status !== 0 && answer.status < 500 && answer.body.error !== 'NotReadyToCommit') {
        throw new Error(`${this.id}: ${error}`);
      }
      // canCommit may fall back between the progress read and the commit (lag grows while a fault
      // lasts): asked again, as an operator would, and not a refusal caused by a fault.
      if (answer.body.error !== 'NotReadyToCommit') refused.push(error);
      if (Date.now() > deadline) throw new Error(`${this.id}: ${path} refused until the deadline: ${refused.join('; ')}`);
      await pause(200);
    }
  }

  /**
   * Waits until `done` holds; a sync found PAUSED is resumed (its warnings recorded and returned
   * through `onPaused`), a sync in IDLE after a restart means the start never took.
   */
  async until(done: (p: Progress) => boolean, onPaused?: (warnings: string[]) => void, timeoutMs = STEP_TIMEOUT_MS): Promise<Progress> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const progress = await this.progress();
      if (progress.state === 'PAUSED') {
        const warnings = (progress.warnings ?? []) as string[];
        // Each pause once (an index build's UUID aside, the same pause reads the same).
        for (const warning of warnings) if (!this.errors.some((e) => sameWarning(e, warning))) this.errors.push(warning);
        onPaused?.(warnings);
        const resumed = await this.ferry.post('resume', {});
        if (resumed.status !== 200) this.errors.push(`resume: ${resumed.status} ${String(resumed.body.error)}`);
      } else if (done(progress)) {
        return progress;
      }
      if (Date.now() > deadline) {
        if (progress.state === 'PAUSED' && this.errors.length > 0) throw new StuckPaused(this.id, this.errors.at(-1)!);
        throw new Error(`${this.id}: timed out; last progress ${JSON.stringify(progress)}`);
      }
      await pause(50);
    }
  }

  async start(): Promise<string[]> {
    await emptyDestination(this.clusters.destination.uri);
    return this.post('start', { source: 'cluster0', destination: 'cluster1', ...scenarioFilter(this.db) });
  }

  /** Writes a marker on the source and waits until the destination has it: everything before it is applied. */
  async caughtUp(onPaused?: (warnings: string[]) => void): Promise<void> {
    const _id = `${this.id}-m${++this.#markers}`;
    await this.clusters.sourceClient
      .db(this.db)
      .collection('markers')
      .insertOne({ _id } as Document);
    const markers = this.clusters.destinationClient.db(this.db).collection('markers');
    const deadline = Date.now() + STEP_TIMEOUT_MS;
    while ((await markers.countDocuments({ _id } as Document)) === 0) {
      await this.until(() => true, onPaused);
      if (Date.now() > deadline)
        throw new Error(`${this.id}: marker ${_id} not applied; progress ${JSON.stringify(await this.progress())}`);
      await pause(50);
    }
  }

  /** Commits (asking again after a named refusal) and waits for COMMITTED. */
  async commit(onPaused?: (warnings: string[]) => void): Promise<string[]> {
    const refused = await this.post('commit', {}, (p) => p.canCommit === true);
    await this.until((p) => p.state === 'COMMITTED', onPaused);
    return refused;
  }

  /** How the destination differs from the source over the scenario's namespaces; `midSync`: with indexes and options in temporary form. */
  differences(midSync = false): Promise<ClusterDifference[]> {
    const filter = scenarioFilter(this.db);
    return compareClusters(this.clusters.source.uri, this.clusters.destination.uri, {
      selector: createNamespaceSelector(filter.includeNamespaces, filter.excludeNamespaces),
      ...(midSync ? { expectedIndex: temporaryIndexForm, expectedOptions: temporaryCollectionOptions } : {}),
    });
  }

  async stop(): Promise<void> {
    if (this.alive) await this.ferry.stop();
  }
}

/** Whether two warnings say the same (UUIDs, which differ from one try to the next, aside). */
function sameWarning(a: string, b: string): boolean {
  const uuid = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/g;
  return a.replace(uuid, '') === b.replace(uuid, '');
}

/** The end of a scenario whose sync kept pausing on a named error: no COMMITTED (checked), nothing compared. */
async function stuckEnd(
  driver: SyncDriver,
  error: unknown,
  name: string,
  results: CaseResult[],
  injected: string[],
): Promise<ScenarioResult> {
  if (!(error instanceof StuckPaused)) throw error;
  const { state } = await driver.progress();
  if (state === 'COMMITTED') throw new Error(`${name}: COMMITTED after pausing on ${error.warning}`, { cause: error });
  return { name, results, committed: false, differences: [], injected, errors: driver.errors, stuck: error.warning };
}

/** Turns the fail point off on a node (a node restarted since has it off anyway). */
async function disarm(client: MongoClient): Promise<void> {
  await client
    .db('admin')
    .command({ configureFailPoint: 'failCommand', mode: 'off' })
    .catch(() => undefined);
}

/** Arms a case on its node: fires once; returns the fail point's activation count before it. */
async function arm(clusters: MatrixClusters, c: FaultCase, db: string, variant: number): Promise<number> {
  const reply = await clusters
    .client(c.target.node)
    .db('admin')
    .command({ configureFailPoint: 'failCommand', mode: { times: 1 }, data: failCommandData(c, db, variant) });
  return Number(reply.count);
}

/** Whether the armed case fired (waiting at most `ms`). */
async function fired(clusters: MatrixClusters, node: NodeName, before: number, ms: number): Promise<boolean> {
  try {
    await clusters
      .client(node)
      .db('admin')
      .command({ waitForFailPoint: 'failCommand', timesEntered: before + 1, maxTimeMS: ms });
    return true;
  } catch {
    return false;
  }
}

/** Source changes that make Ferry issue a case's command during change-event application. */
async function trigger(driver: SyncDriver, kind: Trigger, n: number): Promise<void> {
  const db = driver.clusters.sourceClient.db(driver.db);
  const admin = driver.clusters.sourceClient.db('admin');
  switch (kind) {
    case 'none':
      return;
    case 'crud':
      await playOperations(driver.clusters.sourceClient, driver.db, sampleOperations(1000 + n, 30, 0));
      return;
    case 'create':
      await db.createCollection(`created${n}`, { validator: { n: { $exists: true } }, validationAction: 'warn' });
      return;
    case 'createIndexes':
      await db.collection('c1').createIndex({ [`f${n}`]: 1 }, { name: `fm_${n}` });
      return;
    case 'collMod':
      await db.command({ collMod: 'c2', validator: { n: { $gte: -n } }, validationAction: 'warn' });
      return;
    case 'dropIndexes':
      await db.collection('c1').createIndex({ [`d${n}`]: 1 }, { name: `fmd_${n}` });
      await driver.caughtUp();
      await db.collection('c1').dropIndex(`fmd_${n}`);
      return;
    case 'drop':
      await db.collection(`dropped${n}`).insertOne({ _id: n } as Document);
      await driver.caughtUp();
      await db.collection(`dropped${n}`).drop();
      return;
    case 'rename':
      await db.collection(`moving${n}`).insertMany([{ _id: 1 }, { _id: 2 }] as Document[]);
      await driver.caughtUp();
      await admin.command({ renameCollection: `${driver.db}.moving${n}`, to: `${driver.db}.moved${n}` });
      return;
    case 'renameInto': {
      const outside = `outside${n % 4}`;
      const exists = (await db.listCollections({ name: outside }).toArray()).length > 0;
      if (!exists) await db.collection(outside).insertMany(Array.from({ length: 300 }, (_, k) => ({ _id: k, k })) as Document[]);
      await admin.command({ renameCollection: `${driver.db}.${outside}`, to: `${driver.db}.into${n}` });
      return;
    }
    case 'pauseResume':
      // Raw requests: the driver's own waiting would resume the paused sync first.
      await driver.ferry.post('pause', {});
      await driver.ferry.post('resume', {});
      return;
  }
}

/** The moments of the initial copy, by the log line that ends each. */
const MOMENT_ENDS: Record<Moment, readonly string[]> = {
  planning: ['Initial copy: copying'],
  copying: ['Initial copy: buildingIndexes', 'Initial copy: copied'],
  copied: ['Initial copy complete: change events are now applied'],
};

/** Whether the sync has gone past the moment `c` is for (copy cases: by Ferry's log; others never). */
function momentPassed(driver: SyncDriver, c: FaultCase): boolean {
  const moment = c.target.moment;
  if (moment === undefined) return false;
  return driver.ferry.log().some((line) => MOMENT_ENDS[moment].some((end) => String(line.message).startsWith(end)));
}

/** How long after a case fired a pause is taken for its doing (a retried failure waits 250 ms and more first). */
const ATTRIBUTION_MS = 3000;

function traceResult(result: CaseResult): void {
  trace(`${describeCase(result.case)}: ${result.outcome}${result.error === undefined ? '' : ` (${result.error})`}`);
}

/**
 * Runs `cases` with one armed per node at a time, the next armed as soon as one fires, while
 * `inPhase` holds; `begin` (e.g. the start or commit request) runs once the first are armed. A
 * pause is put down to the cases fired shortly before it. Returns the cases not reached.
 */
async function runParallelCases(
  driver: SyncDriver,
  cases: readonly FaultCase[],
  inPhase: (p: Progress) => boolean,
  results: CaseResult[],
  variant: () => number,
  begin: () => Promise<string[]> = async () => [],
): Promise<FaultCase[]> {
  const { clusters, db } = driver;
  const queues: Record<NodeName, FaultCase[]> = {
    source: cases.filter((c) => c.target.node === 'source'),
    destination: cases.filter((c) => c.target.node === 'destination'),
  };
  const armed: Partial<Record<NodeName, { c: FaultCase; before: number; at: number }>> = {};
  const skipped: FaultCase[] = [];
  const fresh: { result: CaseResult; at: number }[] = [];
  const armNext = async (node: NodeName) => {
    const c = queues[node].shift();
    if (c === undefined) delete armed[node];
    else {
      armed[node] = { c, before: await arm(clusters, c, db, variant()), at: Date.now() };
      trace(`armed ${describeCase(c)} (${(await driver.progress()).info})`);
    }
  };
  const onPaused = (warnings: string[]) => {
    const recent = fresh.filter((f) => Date.now() - f.at < ATTRIBUTION_MS);
    for (const { result } of recent) {
      result.outcome = 'paused';
      result.error = warnings.join(' | ');
    }
  };
  const check = async (node: NodeName, waitMs: number) => {
    const current = armed[node];
    if (current === undefined) return;
    if (!(await fired(clusters, node, current.before, waitMs))) {
      // Its moment has passed: let the next one have a chance.
      if (momentPassed(driver, current.c)) {
        await disarm(clusters.client(node));
        skipped.push(current.c);
        await armNext(node);
      }
      return;
    }
    const result: CaseResult = { case: current.c, outcome: 'absorbed' };
    results.push(result);
    fresh.push({ result, at: Date.now() });
    await armNext(node);
  };
  await armNext('source');
  await armNext('destination');
  const request = begin();
  let refusals: string[] = [];
  void request.then(
    (refused) => (refusals = refused),
    () => undefined,
  );
  const deadline = Date.now() + STEP_TIMEOUT_MS;
  while ((armed.source !== undefined || armed.destination !== undefined) && Date.now() < deadline) {
    await check('source', 15);
    await check('destination', 15);
    if (!inPhase(await driver.until(() => true, onPaused))) break;
  }
  // Give the last ones time to show a pause.
  const settleUntil = Date.now() + 800;
  while (Date.now() < settleUntil) {
    await check('source', 10);
    await check('destination', 10);
    await driver.until(() => true, onPaused);
    await pause(40);
  }
  await request;
  if (refusals.length > 0) {
    const first = fresh[0]?.result;
    if (first !== undefined && first.outcome === 'absorbed') {
      first.outcome = 'refused';
      first.error = refusals.join(' | ');
    } else driver.errors.push(...refusals);
  }
  const left: FaultCase[] = [...skipped];
  for (const node of ['source', 'destination'] as const) {
    const current = armed[node];
    if (current !== undefined) {
      await disarm(clusters.client(node));
      left.push(current.c);
    }
    left.push(...queues[node]);
  }
  for (const { result } of fresh) traceResult(result);
  for (const c of left) trace(`${describeCase(c)}: not reached`);
  return left;
}

/** Runs change-event application `cases` one at a time, each with the source change that makes Ferry issue its command. */
async function runApplicationCases(
  driver: SyncDriver,
  cases: readonly FaultCase[],
  results: CaseResult[],
  variant: () => number,
): Promise<FaultCase[]> {
  const { clusters, db } = driver;
  const left: FaultCase[] = [];
  for (const c of cases) {
    const result: CaseResult = { case: c, outcome: 'absorbed' };
    const onPaused = (warnings: string[]) => {
      result.outcome = 'paused';
      result.error = warnings.join(' | ');
    };
    const before = await arm(clusters, c, db, variant());
    await trigger(driver, c.target.trigger ?? 'none', results.length + left.length);
    if (!(await fired(clusters, c.target.node, before, 5000))) {
      await disarm(clusters.client(c.target.node));
      left.push(c);
      trace(`${describeCase(c)}: not reached`);
      continue;
    }
    await driver.caughtUp(onPaused);
    results.push(result);
    traceResult(result);
  }
  return left;
}

/**
 * One sync with `cases` armed in turn at their phases; returns what each came to and the cases
 * it did not reach (to carry to the next scenario).
 */
export async function runFailCommandScenario(
  clusters: MatrixClusters,
  name: string,
  cases: readonly FaultCase[],
  options: { documents?: number; seed?: number } = {},
): Promise<{ scenario: ScenarioResult; left: FaultCase[] }> {
  const db = `fm_${name}`;
  // Enough to copy for the copy's cases to meet the copy under way.
  await seedSource(clusters.sourceClient, db, cases.some((c) => c.target.phase === 'copy') ? (options.documents ?? 10_000) : 500);
  const driver = new SyncDriver(clusters, `faults-${name}`, db);
  const results: CaseResult[] = [];
  const left: FaultCase[] = [];
  const pick = random(options.seed ?? 1);
  const variant = () => Math.floor(pick() * 1000);
  const ofPhase = (phase: Phase) => cases.filter((c) => c.target.phase === phase);
  await driver.launch();
  try {
    // Planning and the copy, with a workload writing meanwhile (its deletes leave tombstones).
    let copyDone = false;
    const workload = (async () => {
      for (let round = 0; !copyDone; round++) {
        await playOperations(clusters.sourceClient, db, sampleOperations((options.seed ?? 1) * 1000 + round, 20, 0));
      }
    })();
    const copying = (p: Progress) => p.state !== 'IDLE' && p.info !== 'change event application' && p.canCommit !== true;
    left.push(
      ...(await runParallelCases(
        driver,
        ofPhase('copy'),
        (p) => p.state === 'IDLE' || copying(p),
        results,
        variant,
        () => driver.start(),
      )),
    );
    copyDone = true;
    await workload;
    await driver.until((p) => p.canCommit === true);
    // Change-event application.
    left.push(...(await runApplicationCases(driver, ofPhase('cea'), results, variant)));
    await driver.caughtUp();
    // Commit.
    left.push(
      ...(await runParallelCases(
        driver,
        ofPhase('commit'),
        (p) => p.state !== 'COMMITTED',
        results,
        variant,
        () => driver.post('commit', {}, (p) => p.canCommit === true),
      )),
    );
    await driver.until((p) => p.state === 'COMMITTED');
    const differences = await driver.differences();
    return { scenario: { name, results, committed: true, differences, injected: [], errors: driver.errors }, left };
  } catch (error) {
    // The cases not yet come to are left for the next scenario.
    return { scenario: await stuckEnd(driver, error, name, results, []), left: cases.filter((c) => !results.some((r) => r.case === c)) };
  } finally {
    await disarm(clusters.sourceClient);
    await disarm(clusters.destinationClient);
    await driver.stop();
  }
}

/**
 * Runs every case, scenario after scenario: a scenario takes at most one case of each target (a
 * command issued once per sync, at planning or commit, can be hit once), and cases a scenario did
 * not reach go to the next; at most `maxScenarios` of them.
 */
export async function runFailCommandCases(
  clusters: MatrixClusters,
  prefix: string,
  cases: readonly FaultCase[],
  options: { maxScenarios?: number; seed?: number } = {},
): Promise<{ scenarios: ScenarioResult[]; unreached: FaultCase[] }> {
  const scenarios: ScenarioResult[] = [];
  let pending = cases.filter((c) => c.target.phase !== 'start');
  for (let i = 0; pending.length > 0 && i < (options.maxScenarios ?? 4); i++) {
    const chosen: FaultCase[] = [];
    const later: FaultCase[] = [];
    for (const c of pending) (chosen.some((other) => other.target === c.target) ? later : chosen).push(c);
    const { scenario, left } = await runFailCommandScenario(clusters, `${prefix}${i}`, chosen, { seed: (options.seed ?? 1) + i });
    scenarios.push(scenario);
    pending = [...left, ...later];
    // Nothing more can be reached: no case of this scenario fired, and the later ones are of the same targets.
    if (left.length === chosen.length && later.every((c) => chosen.some((other) => other.target === c.target))) break;
  }
  const starts = cases.filter((c) => c.target.phase === 'start');
  if (starts.length > 0) {
    const { scenario, left } = await runStartCases(clusters, `${prefix}s`, starts, options.seed ?? 1);
    scenarios.push(scenario);
    pending.push(...left);
  }
  return { scenarios, unreached: pending };
}

/**
 * Start cases, each armed before one start request: a refused request must leave the sync IDLE
 * (the next case is tried on it); an accepted one must give a sync that reaches `canCommit` with
 * the destination equal to the source (indexes and options in their temporary form), after which
 * it is abandoned (Ferry stopped, its metadata and the destination's data dropped) for the next.
 */
export async function runStartCases(
  clusters: MatrixClusters,
  name: string,
  cases: readonly FaultCase[],
  seed: number,
): Promise<{ scenario: ScenarioResult; left: FaultCase[] }> {
  const db = `fm_${name}`;
  await seedSource(clusters.sourceClient, db, 300);
  const results: CaseResult[] = [];
  const left: FaultCase[] = [];
  const differences: ClusterDifference[] = [];
  const errors: string[] = [];
  const pick = random(seed);
  let attempt = 0;
  let driver: SyncDriver | undefined;
  try {
    for (const c of cases) {
      if (driver === undefined) {
        driver = new SyncDriver(clusters, `faults-${name}-${attempt++}`, db);
        await driver.launch();
      }
      await emptyDestination(clusters.destination.uri);
      const before = await arm(clusters, c, db, Math.floor(pick() * 1000));
      const answer = await driver.ferry.post('start', { source: 'cluster0', destination: 'cluster1', ...scenarioFilter(db) });
      const hit = await fired(clusters, c.target.node, before, 1500);
      await disarm(clusters.client(c.target.node));
      if (!hit && answer.status !== 200) {
        left.push(c);
        trace(`${describeCase(c)}: not reached`);
        continue;
      }
      const result: CaseResult = { case: c, outcome: 'absorbed' };
      if (answer.status !== 200) {
        result.outcome = 'refused';
        result.error = `start: ${answer.status} ${String(answer.body.error)}: ${String(answer.body.errorDescription ?? '')}`;
        // A refused start changes nothing: the sync IDLE, no metadata of it, the destination writable.
        const state = (await driver.progress()).state;
        if (state !== 'IDLE')
          differences.push({ kind: 'missingNamespace', ns: `a refused start left the sync ${state}`, missingOn: 'destination' });
        const resume = clusters.destinationClient.db(METADATA_DATABASE).collection('resume');
        if ((await resume.countDocuments({ _id: driver.id } as Document)) > 0)
          differences.push({ kind: 'missingNamespace', ns: `a refused start left its resume document`, missingOn: 'destination' });
      } else {
        // The sync started: it must copy and apply as it would have without the fault.
        await driver.until(
          (p) => p.canCommit === true,
          (warnings) => {
            result.outcome = 'paused';
            result.error = warnings.join(' | ');
          },
        );
        await driver.caughtUp();
        differences.push(...(await driver.differences(true)));
        errors.push(...driver.errors);
        await driver.stop();
        await forgetSync(clusters, driver);
        driver = undefined;
      }
      if (hit) {
        results.push(result);
        traceResult(result);
      } else left.push(c);
    }
  } finally {
    await disarm(clusters.sourceClient);
    await disarm(clusters.destinationClient);
    if (driver !== undefined) {
      errors.push(...driver.errors);
      await driver.stop();
      await forgetSync(clusters, driver);
    }
  }
  return { scenario: { name, results, committed: false, differences, injected: [], errors }, left };
}

/** Drops an abandoned sync: its destination data and its metadata (write blocking lifted). */
async function forgetSync(clusters: MatrixClusters, driver: SyncDriver): Promise<void> {
  const destination = clusters.destinationClient;
  await destination.db('admin').command({ setUserWriteBlockMode: 1, global: false });
  await destination.db(driver.db).dropDatabase();
  const meta = destination.db(METADATA_DATABASE);
  for (const name of ['resume', 'changeStream', 'commit']) await meta.collection(name).deleteMany({ _id: driver.id } as Document);
  for (const name of ['partitions', 'namespaces', 'tombstones']) await meta.collection(name).deleteMany({ instance: driver.id });
}

/** One case per target, the kinds taking turns (shifted by `seed`): every target and every kind, in one or two syncs. */
export function rotatedCases(seed: number, targets: readonly FaultTarget[] = TARGETS): FaultCase[] {
  return targets.map((target, i) => {
    const kinds = allCases([target]).map((c) => c.kind);
    return { target, kind: kinds[(i + seed) % kinds.length]! };
  });
}

/**
 * Restarts: each cluster SIGKILLed and started again with its data, mid-copy, mid-application
 * and during COMMITTING, with a workload writing to the source.
 */
export async function runRestartScenario(clusters: MatrixClusters, name: string, seed: number): Promise<ScenarioResult> {
  const db = `fm_${name}`;
  await seedSource(clusters.sourceClient, db, 20_000);
  const driver = new SyncDriver(clusters, `faults-${name}`, db);
  const injected: string[] = [];
  const restart = async (node: NodeName, when: string) => {
    await clusters.node(node).restart({ signal: 'SIGKILL' });
    injected.push(`${node} restarted ${when}`);
  };
  await driver.launch();
  try {
    await driver.start();
    const workload = playOperations(clusters.sourceClient, db, sampleOperations(seed, 200, 1));
    // Mid-copy: as soon as the copy has written something, then again a little later.
    await driver.until((p) => (p.collectionCopy?.estimatedCopiedBytes ?? 0) > 0 || p.canCommit === true);
    if ((await driver.progress()).canCommit !== true) await restart('source', 'mid-copy');
    if ((await driver.progress()).canCommit !== true) await restart('destination', 'mid-copy');
    await workload.catch(() => undefined);
    await driver.until((p) => p.canCommit === true);
    // Mid-application, with events in flight.
    const events = playOperations(clusters.sourceClient, db, sampleOperations(seed + 1, 120, 1));
    await pause(150);
    await restart('source', 'mid-application');
    await pause(150);
    await restart('destination', 'mid-application');
    await events.catch(() => undefined);
    await driver.caughtUp();
    // During COMMITTING: the source restarted as soon as the commit is asked (Ferry is reading
    // towards the commit point), the destination while the commit restores indexes (held there
    // by a blocked listIndexes).
    await playOperations(clusters.sourceClient, db, sampleOperations(seed + 2, 40, 0));
    const { count } = await clusters.destinationClient.db('admin').command({
      configureFailPoint: 'failCommand',
      mode: { times: 1 },
      data: { failCommands: ['listIndexes'], appName: 'ferry', blockConnection: true, blockTimeMS: 3000 },
    });
    await driver.post('commit', {}, (p) => p.canCommit === true);
    const committing = async (node: NodeName) => {
      const { state } = await driver.progress();
      if (state === 'COMMITTING') await restart(node, 'during COMMITTING');
      else driver.errors.push(`${node} not restarted during COMMITTING: the sync was ${state}`);
    };
    await committing('source');
    if (await fired(clusters, 'destination', Number(count), 30_000)) await committing('destination');
    await driver.until((p) => p.state === 'COMMITTED');
    const differences = await driver.differences();
    return { name, results: [], committed: (await driver.progress()).state === 'COMMITTED', differences, injected, errors: driver.errors };
  } catch (error) {
    return await stuckEnd(driver, error, name, [], injected);
  } finally {
    await driver.stop();
  }
}

/**
 * SIGKILL of Ferry at seeded random moments (`kills` of them, anywhere from the start request to
 * the commit), with a seeded workload writing to the source throughout.
 */
export async function runKillScenario(clusters: MatrixClusters, name: string, seed: number, kills = 3): Promise<ScenarioResult> {
  const db = `fm_${name}`;
  const rng = random(seed);
  await seedSource(clusters.sourceClient, db, 8000);
  const driver = new SyncDriver(clusters, `faults-${name}`, db);
  const injected: string[] = [];
  let writing = true;
  const workload = (async () => {
    for (let round = 0; writing; round++) await playOperations(clusters.sourceClient, db, sampleOperations(seed * 100 + round, 20, 1));
  })();
  await emptyDestination(clusters.destination.uri);
  await driver.launch();
  try {
    // Each kill a seeded while (up to 2 s) after the last (re)start of the process, with the
    // sync's start request sent (again, if the sync is IDLE: a kill can cut the first one off).
    const startRequest = () => driver.ferry.post('start', { source: 'cluster0', destination: 'cluster1', ...scenarioFilter(db) });
    for (let k = 0; k < kills; k++) {
      if ((await driver.progress()).state === 'IDLE') void startRequest().catch(() => undefined);
      const at = Math.floor(rng() * 2000);
      await pause(at);
      const progress = await driver.progress();
      await driver.kill();
      injected.push(`ferry SIGKILLed ${at} ms after its start (${progress.state}, ${String(progress.info)})`);
      await driver.launch();
    }
    if ((await driver.progress()).state === 'IDLE') await driver.start();
    await driver.until((p) => p.canCommit === true);
    writing = false;
    await workload;
    await driver.caughtUp();
    // And once more while COMMITTING.
    await driver.post('commit', {}, (p) => p.canCommit === true);
    await pause(Math.floor(rng() * 300));
    const progress = await driver.progress();
    await driver.kill();
    injected.push(`ferry SIGKILLed after the commit request (${progress.state})`);
    await driver.launch();
    await driver.until((p) => p.state === 'COMMITTED');
    const differences = await driver.differences();
    return { name, results: [], committed: true, differences, injected, errors: driver.errors };
  } catch (error) {
    return await stuckEnd(driver, error, name, [], injected);
  } finally {
    writing = false;
    await workload.catch(() => undefined);
    await driver.stop();
  }
}

/** A table of what the cases came to, for people (the README's figures). */
export function summarize(scenarios: readonly ScenarioResult[], unreached: readonly FaultCase[] = []): string {
  const results = scenarios.flatMap((s) => s.results);
  const count = (outcome: Outcome) => results.filter((r) => r.outcome === outcome).length;
  const lines = [
    `scenarios (syncs): ${scenarios.length}, committed: ${scenarios.filter((s) => s.committed).length}, ` +
      `with a wrong destination: ${scenarios.filter((s) => s.differences.length > 0).length}`,
    `fail-point cases injected: ${results.length} (absorbed ${count('absorbed')}, paused then resumed ${count('paused')}, ` +
      `request refused then asked again ${count('refused')}); not reached: ${unreached.length}`,
    `other faults injected: ${scenarios.reduce((sum, s) => sum + s.injected.length, 0)}`,
    `syncs that kept pausing on a named error (never COMMITTED): ${scenarios.filter((s) => s.stuck !== undefined).length}`,
  ];
  for (const s of scenarios) if (s.stuck !== undefined) lines.push(`  ${s.name} kept pausing: ${s.stuck}`);
  for (const r of results.filter((x) => x.outcome !== 'absorbed')) lines.push(`  ${r.outcome}: ${describeCase(r.case)}: ${r.error ?? ''}`);
  for (const c of unreached) lines.push(`  not reached: ${describeCase(c)}`);
  for (const s of scenarios) for (const i of s.injected) lines.push(`  ${s.name}: ${i}`);
  for (const s of scenarios) for (const e of s.errors) lines.push(`  ${s.name} showed: ${e}`);
  return lines.join('\n');
}
