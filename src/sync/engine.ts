/**
 * Ferry's migration engine: what the state machine drives (src/state/engine.ts). It plans,
 * schedules and records on the main thread; copy workers touch the documents.
 *
 * - `start` takes T0 on the source, writes the resume document (state RUNNING, phase planning,
 *   the request, T0) to the metadata database on the destination, then runs the initial copy in
 *   the background (initial-copy.ts) and, when one is plugged in, change-event application.
 * - `recover` (process start) looks for this instance's resume document on both clusters; a sync
 *   found RUNNING continues in the background where its metadata says.
 * - `pause`/`close` stop the copy at a safe point (partitions checkpoint) and change-event
 *   application after recording its resume token; `resume` continues from both.
 * - A failure the copy or application cannot get past is recorded (state PAUSED, `lastError`)
 *   and reported as `failed`: the sync pauses, and `resume` retries from the checkpoints.
 * - With write blocking (`destinationOnly`, the default, or `sourceAndDestination`), the
 *   destination's user writes are blocked from start until the commit completes.
 * - `commit` (src/commit/) blocks the source if asked, records the commit point and state
 *   COMMITTING, then in the background applies events through the commit point, restores the
 *   temporary characteristics, lifts the destination's blocking and reports `commitCompleted`.
 *   A sync recovered COMMITTING finishes its commit the same way.
 * - Reverse is not in this engine.
 */
import type { Timestamp } from 'bson';
import { MongoServerError, type MongoClient } from 'mongodb';
import type { Logger } from '../log/logger.js';
import { NamespaceRecords } from '../meta/namespaces.js';
import { PartitionTable } from '../meta/partitions.js';
import { ResumeStore, type ResumeDocument } from '../meta/resume.js';
import { MetadataStore } from '../meta/store.js';
import { HistogramSet } from '../metrics/index.js';
import { asClusterError } from '../cluster/errors.js';
import { createNamespaceSelector } from '../plan/namespaces.js';
import { CommitProcess } from '../commit/commit.js';
import type { ChangeApplier, ChangeApplierFactory } from './applier.js';
import { CopyProgress } from './copy-progress.js';
import { InitialCopy } from './initial-copy.js';
import { type StartRequest, blocksDestination, blocksSource } from '../domain/start-request.js';
import { CLUSTER_NAMES, type ClusterEndpoint, type ClusterName } from '../domain/clusters.js';
import { redactUris } from '../domain/credentials.js';
import type { SyncPhase } from '../domain/states.js';
import type { SyncEvent, SyncSnapshot, RecoveredState, SyncControl } from '../domain/sync-control.js';
import {
  ClusterCommandFailed,
  ClusterUnreachable,
  FerryError,
  InsufficientPrivileges,
  InvalidStateTransition,
  NotImplemented,
  ChangeStreamHistoryLost,
} from '../errors/errors.js';
import { runPreflight } from '../plan/preflight.js';
import { missingWriteBlockingPrivileges, setUserWriteBlocking, appendOplogNote } from '../cluster/commands.js';
import { connect } from '../cluster/connect.js';
import type { SyncSettings } from '../config/settings.js';

export interface MigrationEngineOptions {
  /** The two clusters of `--cluster0` / `--cluster1`. */
  clusters: Record<ClusterName, ClusterEndpoint>;
  /** This instance's `--id`: the key of its metadata. */
  id: string;
  settings: SyncSettings;
  logger: Logger;
  /** Change-event application (src/cea/); without it the sync stops after the initial copy. */
  applier?: ChangeApplierFactory;
  /** Ferry's version, recorded in the resume document. Default `unknown`. */
  ferryVersion?: string;
}

/** Said in progress when the copy is complete but nothing applies change events. */
export const NO_CHANGE_APPLICATION =
  'The initial copy is complete, but this build of Ferry has no change-event application: writes made on the source since the sync started are not on the destination, and the sync cannot be committed.';

/** What the engine holds for the sync it runs. */
interface ActiveSync {
  request: StartRequest;
  source: MongoClient;
  destination: MongoClient;
  store: MetadataStore;
  resume: ResumeStore;
  /** Background work of the current run; undefined while paused. */
  copy?: InitialCopy;
  running?: Promise<void>;
  applier?: ChangeApplier;
  /** The commit, once requested (state COMMITTING), and its background work. */
  commit?: CommitProcess;
  committing?: Promise<void>;
}

function describe(endpoint: ClusterEndpoint): string {
  return `${endpoint.name} (${endpoint.address})`;
}

/**
 * What this build cannot do, refused before anything is touched. A `reversible` sync is refused
 * at start rather than at `reverse`: by then the operator would have committed, with the source
 * left write-blocked, counting on a way back that does not exist.
 */
function refuseUnsupported(request: StartRequest): void {
  if ((request.sharding?.shardingEntries.length ?? 0) > 0) {
    throw new NotImplemented(
      'sharding collections on the destination (sharding.shardingEntries) is not implemented in this build of Ferry',
    );
  }
  if (request.reversible) {
    throw new NotImplemented(
      'reversible syncs are not implemented in this build of Ferry (it cannot sync back from the destination); start with reversible false',
    );
  }
}

export class MigrationEngine implements SyncControl {
  readonly #options: MigrationEngineOptions;
  readonly #logger: Logger;
  readonly #clients = new Map<ClusterName, MongoClient>();
  readonly #progress = new CopyProgress();
  readonly #histograms = new HistogramSet();
  #report: (event: SyncEvent) => void = () => {};
  #sync: ActiveSync | undefined;
  #phase: SyncPhase | undefined;
  /** Why a sync recovered PAUSED had stopped (from its metadata), until it runs again. */
  #recoveredFailure: string | undefined;
  /** Said in progress after change-event application stopped for good (history lost). */
  #applicationStopped: string | undefined;
  /** Events applied by the appliers of this process that have stopped (pause, failure). */
  #eventsAppliedBefore = 0;
  /** A commit problem the engine retries (a cluster unreachable meanwhile). */
  #commitProblem: string | undefined;
  /** The commit has applied every event through its commit point: nothing lags any more. */
  #appliedThroughCommit = false;
  #closed = false;

  constructor(options: MigrationEngineOptions) {
    this.#options = options;
    this.#logger = options.logger.child({ component: 'engine' });
  }

  /** Copy histograms (read latency, write latency, batch bytes) merged from the workers. */
  get histograms(): HistogramSet {
    return this.#histograms;
  }

  attach(report: (event: SyncEvent) => void): void {
    this.#report = report;
  }

  #client(name: ClusterName): MongoClient {
    let client = this.#clients.get(name);
    if (client === undefined) {
      client = connect(this.#options.clusters[name]);
      this.#clients.set(name, client);
    }
    return client;
  }

  /** The clients and metadata stores of a sync in the direction `request` gives. */
  #syncFor(request: StartRequest): ActiveSync {
    const destination = this.#client(request.destination);
    const store = new MetadataStore(destination, this.#options.id);
    return { request, source: this.#client(request.source), destination, store, resume: new ResumeStore(store) };
  }

  async recover(): Promise<RecoveredState | undefined> {
    const found: { cluster: ClusterName; doc: ResumeDocument }[] = [];
    const unreachable: string[] = [];
    await Promise.all(
      CLUSTER_NAMES.map(async (cluster) => {
        // A short-lived client: a cluster that is down holds startup for the cluster timeout at most.
        const client = connect(this.#options.clusters[cluster]);
        try {
          const doc = await new ResumeStore(new MetadataStore(client, this.#options.id)).read();
          if (doc !== null) found.push({ cluster, doc });
        } catch (error) {
          if (error instanceof MongoServerError) {
            throw asClusterError(this.#options.clusters[cluster], `reading the metadata of instance "${this.#options.id}"`, error);
          }
          unreachable.push(describe(this.#options.clusters[cluster]));
        } finally {
          await client.close().catch(() => undefined);
        }
      }),
    );
    // The metadata lives on the destination of the sync it describes. Found only on the other
    // cluster, it is not this sync's to continue: the flags name the clusters the other way round
    // (continuing would write-block and write to the source), or its destination is elsewhere.
    const chosen = found.find(({ cluster, doc }) => doc.request.destination === cluster);
    const misplaced = found.find(({ cluster, doc }) => doc.request.destination !== cluster);
    if (chosen === undefined && misplaced !== undefined) {
      throw new InvalidStateTransition(
        `${describe(this.#options.clusters[misplaced.cluster])} (${misplaced.cluster}) holds the metadata of a sync with id "${this.#options.id}" ` +
          `whose destination is ${misplaced.doc.request.destination}: were --cluster0 and --cluster1 given the other way round? ` +
          'Ferry will not continue that sync against these flags; restart it with the clusters named as when the sync started, or with another --id',
      );
    }
    if (chosen === undefined) {
      if (unreachable.length > 0) {
        this.#logger.error(
          { unreachable },
          `Could not reach ${unreachable.join(' and ')} to look for an earlier sync with id "${this.#options.id}"; starting IDLE. ` +
            'If a sync was running, restart Ferry once the cluster is reachable: it continues from its metadata.',
        );
      }
      return undefined;
    }
    const { doc } = chosen;
    const sync = this.#syncFor(doc.request);
    this.#sync = sync;
    this.#phase = doc.phase;
    await this.#loadFigures(sync);
    this.#logger.info(
      { state: doc.state, phase: doc.phase, destination: chosen.cluster },
      `Recovered a sync in state ${doc.state}, phase ${doc.phase}`,
    );
    if (doc.state === 'PAUSED' && doc.lastError !== undefined) {
      this.#recoveredFailure = `The sync stopped on an error before Ferry restarted and is paused: ${doc.lastError}. Fix the cause, then POST /api/v1/resume.`;
    }
    if (doc.state === 'RUNNING') this.#launch(sync, doc);
    if (doc.state === 'COMMITTING') this.#finishCommit(sync, new CommitProcess(this.#commitContext(sync)), doc);
    return { state: doc.state, request: doc.request };
  }

  /** Progress figures from the metadata, for a sync this process did not start. */
  async #loadFigures(sync: ActiveSync): Promise<void> {
    const records = await new NamespaceRecords(sync.store).list();
    const summary = await new PartitionTable(sync.store).summary();
    this.#progress.countIndexes(records);
    if (this.#phase === 'copying') this.#progress.beginCopy(records, summary.copiedBytes, undefined);
    else if (this.#phase !== 'planning' && this.#phase !== undefined) this.#progress.finishCopy(summary.copiedBytes);
  }

  async preflight(request: StartRequest): Promise<void> {
    refuseUnsupported(request);
    await runPreflight(request, { clusters: this.#options.clusters });
  }

  async start(request: StartRequest): Promise<void> {
    refuseUnsupported(request);
    const sync = this.#syncFor(request);
    const destination = this.#options.clusters[request.destination];
    const existing = await sync.resume.read().catch((error: unknown) => {
      throw asClusterError(destination, 'reading the metadata', error);
    });
    if (existing !== null) {
      throw new InvalidStateTransition(
        `${describe(destination)} already holds the metadata of a sync with id "${this.#options.id}" (state ${existing.state}); start Ferry with another --id, or drop that sync's metadata`,
      );
    }
    const source = this.#options.clusters[request.source];
    await this.#checkWriteBlockingPrivileges(sync);
    await sync.store.forgetInstance().catch((error: unknown) => {
      throw asClusterError(destination, 'clearing metadata an earlier sync with this id left', error);
    });
    const startAtOperationTime = await appendOplogNote({ endpoint: source, client: sync.source }, 'sync start', this.#options.id).catch(
      (error: unknown) => {
        throw asClusterError(source, 'appendOplogNote (taking the start time)', error);
      },
    );
    const blockDestination = blocksDestination(request.enableUserWriteBlocking);
    if (blockDestination) {
      await setUserWriteBlocking(sync.destination, true).catch((error: unknown) => {
        throw asClusterError(destination, 'setUserWriteBlockMode (blocking user writes during the sync)', error);
      });
    }
    const doc = await sync.resume
      .create({ request, startAtOperationTime, ferryVersion: this.#options.ferryVersion ?? 'unknown' })
      .catch(async (error: unknown) => {
        // Not started: leave the destination as it was.
        if (blockDestination) await setUserWriteBlocking(sync.destination, false).catch(() => undefined);
        throw asClusterError(destination, 'writing the metadata', error);
      });
    this.#sync = sync;
    this.#phase = doc.phase;
    this.#logger.info({ startAtOperationTime: startAtOperationTime.toString() }, 'Sync started: start time recorded');
    this.#launch(sync, doc);
  }

  /**
   * Write blocking needs Ferry's user to bypass it and to set it on each cluster the mode blocks
   * (checked before anything is written; clusters without access control need nothing).
   */
  async #checkWriteBlockingPrivileges(sync: ActiveSync): Promise<void> {
    const mode = sync.request.enableUserWriteBlocking;
    const checks: [ClusterName, MongoClient][] = [];
    if (blocksDestination(mode)) checks.push([sync.request.destination, sync.destination]);
    if (blocksSource(mode)) checks.push([sync.request.source, sync.source]);
    for (const [name, client] of checks) {
      const endpoint = this.#options.clusters[name];
      const missing = await missingWriteBlockingPrivileges(client).catch((error: unknown) => {
        throw asClusterError(endpoint, 'connectionStatus (checking privileges)', error);
      });
      if (missing.length > 0) {
        throw new InsufficientPrivileges(
          `enableUserWriteBlocking "${mode}" needs Ferry's user on ${describe(endpoint)} to hold ${missing.join(' and ')} on the cluster (the built-in restore or root role has both); grant it, or start with enableUserWriteBlocking "none"`,
        );
      }
    }
  }

  /** A change-event applier for `doc`'s sync, or undefined when none is plugged in. */
  #applierFor(
    sync: ActiveSync,
    doc: ResumeDocument,
    selector = createNamespaceSelector(doc.request.includeNamespaces, doc.request.excludeNamespaces),
  ): ChangeApplier | undefined {
    return this.#options.applier?.({
      source: sync.source,
      destination: sync.destination,
      sourceUri: this.#options.clusters[doc.request.source].uri,
      sourceEndpoint: this.#options.clusters[doc.request.source],
      destinationUri: this.#options.clusters[doc.request.destination].uri,
      store: sync.store,
      resume: doc,
      request: doc.request,
      selector,
      histograms: this.#histograms,
      logger: this.#logger,
      // During a commit, a failure reaches the commit through applyThrough instead.
      fail: (error) => void (sync.commit === undefined ? this.#fail(sync, error) : undefined),
    });
  }

  /** Stops the applier (after it records its resume point) and keeps its event count. */
  async #retireApplier(sync: ActiveSync): Promise<void> {
    const applier = sync.applier;
    if (applier === undefined) return;
    await applier.stop().catch(() => undefined);
    if (sync.applier === applier) sync.applier = undefined;
    this.#eventsAppliedBefore += applier.snapshot().eventsApplied;
  }

  /** Runs the copy (and the applier, if any) in the background from `doc`. */
  #launch(sync: ActiveSync, doc: ResumeDocument): void {
    const selector = createNamespaceSelector(doc.request.includeNamespaces, doc.request.excludeNamespaces);
    const copy = new InitialCopy({
      source: sync.source,
      destination: sync.destination,
      sourceUri: this.#options.clusters[doc.request.source].uri,
      destinationUri: this.#options.clusters[doc.request.destination].uri,
      store: sync.store,
      request: doc.request,
      selector,
      settings: this.#options.settings,
      progress: this.#progress,
      histograms: this.#histograms,
      logger: this.#logger,
      onPhase: (phase) => {
        this.#phase = phase;
        sync.applier?.copyPhase(phase);
      },
    });
    sync.copy = copy;
    sync.applier = this.#applierFor(sync, doc, selector);
    this.#applicationStopped = undefined;
    sync.running = (async () => {
      // Blocking survives restarts on the server; asserting it again costs nothing.
      if (blocksDestination(doc.request.enableUserWriteBlocking)) await setUserWriteBlocking(sync.destination, true);
      await sync.applier?.start();
      if ((await copy.run(doc)) === 'copied') {
        const histograms = this.#histograms;
        this.#logger.info(
          {
            copiedBytes: this.#progress.copiedBytes,
            readLatencyMs: histograms.percentiles('copyReadLatencyMs'),
            writeLatencyMs: histograms.percentiles('copyWriteLatencyMs'),
            batchBytes: histograms.percentiles('copyBatchBytes'),
          },
          sync.applier === undefined ? 'Initial copy complete; no change-event application in this build' : 'Initial copy complete',
        );
      }
    })().catch((error: unknown) => this.#fail(sync, error as Error));
  }

  /** The copy or the applier failed: record it, stop the rest, and let the state machine pause. */
  async #fail(sync: ActiveSync, error: Error): Promise<void> {
    if (this.#sync !== sync || sync.copy === undefined) return; // already stopping or stopped
    this.#logger.error({ err: error }, 'The sync failed');
    if (error instanceof ChangeStreamHistoryLost)
      this.#applicationStopped = 'change event application stopped: the source change stream history was lost';
    sync.copy.stop();
    sync.copy = undefined;
    await this.#retireApplier(sync);
    try {
      await sync.resume.setState('PAUSED', redactUris(error.message));
    } catch (persistError) {
      this.#logger.error({ err: persistError }, 'Could not record the failure in the metadata');
    }
    this.#report({ type: 'failed', error });
  }

  /** Stops the background work at a safe point and waits for it. */
  async #halt(sync: ActiveSync): Promise<void> {
    const { copy, running } = sync;
    sync.copy = undefined;
    copy?.stop();
    await Promise.all([running, this.#retireApplier(sync)]);
    sync.running = undefined;
  }

  #requireSync(command: string): ActiveSync {
    if (this.#sync === undefined) throw new InvalidStateTransition(`${command}: no sync is running`);
    return this.#sync;
  }

  async pause(): Promise<void> {
    const sync = this.#requireSync('pause');
    await this.#halt(sync);
    await this.#recordState(sync, 'PAUSED');
  }

  async resume(): Promise<void> {
    const sync = this.#requireSync('resume');
    // A run that failed may still be winding down (workers checkpointing): never run two at once.
    await this.#halt(sync);
    await this.#recordState(sync, 'RUNNING');
    this.#recoveredFailure = undefined;
    const doc = await sync.resume.read();
    if (doc === null) throw new InvalidStateTransition('resume: the sync metadata has disappeared from the destination');
    this.#launch(sync, doc);
  }

  async #recordState(sync: ActiveSync, state: 'RUNNING' | 'PAUSED'): Promise<void> {
    await sync.resume.setState(state).catch((error: unknown) => {
      throw asClusterError(this.#options.clusters[sync.request.destination], `recording state ${state} in the metadata`, error);
    });
  }

  #commitContext(sync: ActiveSync) {
    return {
      source: sync.source,
      sourceEndpoint: this.#options.clusters[sync.request.source],
      destination: sync.destination,
      store: sync.store,
      request: sync.request,
      logger: this.#logger,
      retryIntervalMs: this.#options.settings.commit.retryIntervalMs,
    };
  }

  async commit(): Promise<void> {
    const sync = this.#requireSync('commit');
    if (sync.applier === undefined) throw new InvalidStateTransition('commit: change events are not being applied');
    const commit = new CommitProcess(this.#commitContext(sync));
    await commit.begin().catch((error: unknown) => {
      throw asClusterError(this.#options.clusters[sync.request.source], 'taking the commit point', error);
    });
    sync.commit = commit;
    await sync.resume.setState('COMMITTING').catch((error: unknown) => {
      sync.commit = undefined;
      throw asClusterError(this.#options.clusters[sync.request.destination], 'recording state COMMITTING in the metadata', error);
    });
    // COMMITTING is recorded: from here the commit finishes in the background whatever happens
    // (a restart finishes it too), so nothing after this point may fail the request.
    this.#finishCommit(sync, commit);
  }

  /**
   * Finishes a commit in the background (see the module comment); an error on the way (a
   * cluster unreachable) is reported in progress and the commit tried again, from its record.
   */
  #finishCommit(sync: ActiveSync, commit: CommitProcess, recovered?: ResumeDocument): void {
    sync.commit = commit;
    const applyThrough = async (commitPoint: Timestamp) => {
      if (sync.applier === undefined) {
        // Read here, inside the retried loop, when no applier runs (after a restart or a failed try).
        const doc = recovered ?? (await sync.resume.read());
        if (doc === null) throw new Error('the resume document has disappeared from the metadata');
        sync.applier = this.#applierFor(sync, doc);
        if (sync.applier === undefined) throw new Error('commit needs change-event application');
        await sync.applier.start();
      }
      await sync.applier.applyThrough(commitPoint);
      this.#appliedThroughCommit = true;
      await this.#retireApplier(sync);
    };
    sync.committing = (async () => {
      for (;;) {
        try {
          await commit.finish(applyThrough);
          await sync.resume.setState('COMMITTED');
          break;
        } catch (error) {
          if (this.#closed) return;
          const retryMs = this.#options.settings.commit.retryIntervalMs;
          this.#commitProblem = `The commit could not finish yet and is retried every ${retryMs / 1000} s: ${redactUris((error as Error).message)}`;
          this.#logger.error({ err: error }, 'The commit could not finish yet; retrying');
          await this.#retireApplier(sync);
          await new Promise((resolve) => setTimeout(resolve, retryMs).unref());
          if (this.#closed) return;
        }
      }
      this.#commitProblem = undefined;
      this.#logger.info('Commit completed: the destination is complete and writable');
      this.#report({ type: 'commitCompleted' });
    })().catch((error: unknown) => this.#logger.error({ err: error }, 'The commit stopped unexpectedly'));
  }

  async reverse(): Promise<void> {
    throw new NotImplemented(
      'reverse (syncing from the committed destination back to the source) is not implemented in this build of Ferry; the destination stays committed and writable',
    );
  }

  snapshot(): SyncSnapshot {
    const sync = this.#sync;
    if (sync === undefined) return { info: null, eventsApplied: 0, readyToCommit: false, warnings: [] };
    const applier = sync.applier?.snapshot();
    const copied = this.#phase === 'copied';
    const applies = this.#options.applier !== undefined;
    const snapshot: SyncSnapshot = {
      info:
        this.#applicationStopped ??
        (!copied ? 'collection copy' : applies ? 'change event application' : 'copy complete; change event application not available'),
      eventsApplied: this.#eventsAppliedBefore + (applier?.eventsApplied ?? 0),
      readyToCommit: copied && applier?.caughtUp === true,
      warnings: [
        ...(this.#recoveredFailure === undefined ? [] : [this.#recoveredFailure]),
        ...(copied && !applies ? [NO_CHANGE_APPLICATION] : []),
        ...(applier?.problem === undefined ? [] : [applier.problem]),
        ...(sync.commit?.warnings ?? []),
        ...(this.#commitProblem === undefined ? [] : [this.#commitProblem]),
      ],
      ...this.#progress.figures(),
    };
    if (applier?.lag !== undefined) snapshot.lag = applier.lag;
    else if (this.#appliedThroughCommit) snapshot.lag = { overallSeconds: 0, crudSeconds: 0, ddlSeconds: 0 };
    return snapshot;
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    if (this.#sync !== undefined) {
      this.#sync.commit?.stop();
      await this.#halt(this.#sync);
      await this.#sync.committing;
    }
    await Promise.allSettled([...this.#clients.values()].map((client) => client.close()));
    this.#histograms.close();
  }
}
