/**
 * The sync: what the state machine drives (SyncControl, src/domain/sync-control.ts). It holds the
 * sync being run and sequences its phases, built from the factories the composition root gives it
 * (src/cli/compose.ts); it does no phase's work itself (src/phase/contract.ts says what a phase is).
 *
 * - `start`: refuses what this build cannot do, runs preflight (src/plan/preflight.ts), begins the
 *   sync (begin.ts: T0, write blocking, the resume document), then launches a run.
 * - A run: every phase is built and `recover`s what its records say; change-event application
 *   starts alongside, from T0 or its resume token; then the sequence (planning, the initial copy)
 *   runs phase after phase. Each part of the initial copy is recorded before it begins, and every
 *   phase is told (`onSyncPhase`).
 * - `pause` and `close` stop every phase at a safe point; `resume` launches a new run from the records.
 * - A phase's failure is recorded (state PAUSED, `lastError`), the other phases stop, and the state
 *   machine hears `failed`: the sync pauses, and `resume` continues from the checkpoints.
 * - `commit`: the commit phase begins while the request waits, then finishes in the background
 *   (its retries and its hand-off of change-event application are src/commit/'s); `commitCompleted`.
 * - `reverse`: the reverse phase checks the committed sync and records the reversed one while the
 *   request waits (src/reverse/), then prepares it in the background (REVERSING); the reversed sync
 *   (clusters swapped, metadata on its own destination) replaces the committed one, is launched,
 *   and `reverseCompleted`. Its events applied are counted from zero in progress.
 * - `recover` (process start): src/recovery/ finds the recorded sync; a RUNNING one is launched,
 *   a COMMITTING one's commit finishes, a REVERSING one's reverse finishes and is launched, a
 *   PAUSED one waits for `resume`.
 * - Verification (when the request and `--disableVerification` allow it) starts with each run and
 *   runs on through COMMITTING and after COMMITTED until its final pass is done; pause and stop
 *   halt it with the rest. It never fails the sync (it retries by itself) and is told of a commit.
 */
import type { Cluster } from '../cluster/connect.js';
import { openCluster } from '../cluster/connect.js';
import { setUserWriteBlocking } from '../cluster/commands.js';
import { asClusterError } from '../cluster/errors.js';
import type { SyncSettings } from '../config/settings.js';
import type { ClusterEndpoint, ClusterName } from '../domain/clusters.js';
import { redactUris } from '../domain/credentials.js';
import { blocksDestination, reversedRequest, type StartRequest } from '../domain/start-request.js';
import type { RecoveredState, SyncControl, SyncEvent, SyncSnapshot } from '../domain/sync-control.js';
import type { VerificationReport } from '../domain/verification.js';
import { InvalidStateTransition, MetadataMissing } from '../errors/errors.js';
import type { Logger } from '../log/logger.js';
import { ResumeStore, reversalsOf, type ResumeDocument } from '../meta/resume.js';
import { MetadataStore } from '../meta/store.js';
import type { CounterValues } from '../metrics/counters.js';
import { HistogramSet } from '../metrics/histograms.js';
import type { CommitPhase, PhaseFactories, PhaseStatus, ReversePhase } from '../phase/contract.js';
import { mergeStatuses, sumCounters } from '../phase/status.js';
import { runPreflight } from '../plan/preflight.js';
import { findRecordedSync } from '../recovery/find-sync.js';
import { beginSync, checkWriteBlockingPrivileges, refuseUnsupported } from './begin.js';
import { changeApplicationHandoff, syncContext, type ActiveSync, type Run } from './run.js';

export interface SyncOrchestratorOptions {
  /** The two clusters of `--cluster0` / `--cluster1`. */
  clusters: Record<ClusterName, ClusterEndpoint>;
  /** This instance's `--id`: the key of its metadata. */
  id: string;
  settings: SyncSettings;
  phases: PhaseFactories;
  logger: Logger;
  /** Ferry's version, recorded in the resume document. Default `unknown`. */
  ferryVersion?: string;
}

export class SyncOrchestrator implements SyncControl {
  readonly #options: SyncOrchestratorOptions;
  readonly #logger: Logger;
  readonly #clusters = new Map<ClusterName, Cluster>();
  readonly #histograms = new HistogramSet();
  #report: (event: SyncEvent) => void = () => {};
  #sync: ActiveSync | undefined;
  /** Statuses of the phases of runs that ended (their counters count on). */
  #retired: PhaseStatus[] = [];
  /** Why a sync recovered PAUSED had stopped (from its metadata), until it runs again; or why a reversed sync could not be launched. */
  #recoveredFailure: string | undefined;
  /** Events applied in earlier directions of the sync: progress counts the current direction's only. */
  #eventsBeforeReverse = 0;
  #closed = false;

  constructor(options: SyncOrchestratorOptions) {
    this.#options = options;
    this.#logger = options.logger.child({ component: 'sync' });
  }

  /** Copy and apply histograms, for `/metrics`. */
  get histograms(): HistogramSet {
    return this.#histograms;
  }

  /** Work done by this process, for `/metrics`. */
  counters(): CounterValues {
    return sumCounters(this.#statuses());
  }

  attach(report: (event: SyncEvent) => void): void {
    this.#report = report;
  }

  #cluster(name: ClusterName): Cluster {
    let cluster = this.#clusters.get(name);
    if (cluster === undefined) this.#clusters.set(name, (cluster = openCluster(this.#options.clusters[name])));
    return cluster;
  }

  #target(request: StartRequest): ActiveSync {
    const destination = this.#cluster(request.destination);
    const store = new MetadataStore(destination.client, this.#options.id);
    return { request, source: this.#cluster(request.source), destination, store, resume: new ResumeStore(store), phase: 'planning' };
  }

  async recover(): Promise<RecoveredState | undefined> {
    const found = await findRecordedSync(this.#options.clusters, this.#options.id, this.#logger);
    if (found === undefined) return undefined;
    const { doc } = found;
    const sync = (this.#sync = this.#target(doc.request));
    this.#logger.info(
      { state: doc.state, phase: doc.phase, destination: found.cluster, reversals: reversalsOf(doc) },
      `Recovered a sync in state ${doc.state}, phase ${doc.phase}`,
    );
    // Reversing: its run is prepared once the reverse is done.
    if (doc.state === 'REVERSING') {
      this.#finishReverse(sync, this.#newReverse(sync, reversalsOf(doc) - 1));
      return { state: doc.state, request: doc.request };
    }
    await this.#prepare(sync, doc);
    if (doc.state === 'PAUSED' && doc.lastError !== undefined) {
      this.#recoveredFailure =
        `The sync stopped on an error before Ferry restarted and is ` +
        `paused: ${doc.lastError}. Fix the cause, then POST /api/v1/resume.`;
    }
    if (doc.state === 'RUNNING') this.#launch(sync, sync.run!);
    if (doc.state === 'COMMITTING') this.#finishCommit(sync, this.#newCommit(sync));
    // Its final pass after commit continues too.
    if (doc.state === 'COMMITTING' || doc.state === 'COMMITTED') this.#startVerification(sync);
    return { state: doc.state, request: doc.request };
  }

  async preflight(request: StartRequest): Promise<void> {
    refuseUnsupported(request);
    await runPreflight(request, { clusters: this.#options.clusters });
  }

  async start(request: StartRequest): Promise<void> {
    refuseUnsupported(request);
    const sync = this.#target(request);
    const doc = await beginSync(sync, this.#options.id, this.#options.ferryVersion ?? 'unknown');
    this.#sync = sync;
    this.#logger.info({ startAtOperationTime: doc.startAtOperationTime.toString() }, 'Sync started: start time recorded');
    this.#launch(sync, await this.#prepare(sync, doc));
  }

  /** A new run of `sync` from `doc`: its phases built and recovered, not started. */
  async #prepare(sync: ActiveSync, doc: ResumeDocument): Promise<Run> {
    this.#retire(sync);
    sync.phase = doc.phase;
    const context = syncContext(sync, doc, { settings: this.#options.settings, histograms: this.#histograms, logger: this.#logger });
    const run: Run = { context, sequence: this.#options.phases.sequence.map((build) => build(context)), active: false };
    sync.run = run;
    sync.application = this.#options.phases.changeApplication(context);
    sync.applicationStarted = false;
    const verifies = sync.request.verification.enabled && this.#options.settings.verification.enabled;
    sync.verification = verifies ? this.#options.phases.verification?.(context) : undefined;
    sync.verificationStarted = false;
    await Promise.all([...run.sequence, sync.application, sync.verification].map((phase) => phase?.recover()));
    return run;
  }

  /** Starts the verifier of the current run, once; its failures are its own (it retries), never the sync's. */
  #startVerification(sync: ActiveSync): void {
    const verification = sync.verification;
    if (verification === undefined || sync.verificationStarted === true) return;
    sync.verificationStarted = true;
    verification.start().catch((error: unknown) => this.#logger.error({ err: error }, 'Verification stopped unexpectedly'));
  }

  /** Starts a prepared run in the background: application alongside, the sequence in order. */
  #launch(sync: ActiveSync, run: Run): void {
    run.active = true;
    run.done = (async () => {
      // Blocking survives restarts on the server; asserting it again costs nothing.
      if (blocksDestination(sync.request.enableUserWriteBlocking)) await setUserWriteBlocking(sync.destination.client, true);
      // During a commit, a failure of application reaches the commit through applyThrough instead.
      sync.applicationStarted = true;
      sync.application?.start().catch((error: unknown) => void (sync.commit === undefined ? this.#fail(sync, error) : undefined));
      this.#startVerification(sync);
      for (const phase of run.sequence) if ((await phase.start()) === 'stopped' || !run.active) return;
    })().catch((error: unknown) => this.#fail(sync, error));
  }

  /** Keeps the figures of the phases of the run that ends, before a new one replaces them. */
  #retire(sync: ActiveSync): void {
    this.#retired.push(...(sync.run?.sequence ?? []).map((phase) => phase.status()));
    if (sync.application !== undefined) this.#retired.push(sync.application.status());
    if (sync.verification !== undefined) this.#retired.push(sync.verification.status());
  }

  /** A phase failed: record it, stop the rest, and let the state machine pause. */
  async #fail(sync: ActiveSync, error: unknown): Promise<void> {
    if (this.#sync !== sync || sync.run?.active !== true) return; // already stopping or stopped
    this.#logger.error({ err: error }, 'The sync failed');
    await this.#halt(sync, false);
    await sync.resume.setState('PAUSED', redactUris((error as Error).message)).catch((persistError: unknown) => {
      this.#logger.error({ err: persistError }, 'Could not record the failure in the metadata');
    });
    this.#report({ type: 'failed', error: error as Error });
  }

  /**
   * Stops every phase of the run at a safe point and waits for them; with `untilDone`, for the
   * run itself too (never from a failure of the run, which is the end of that very promise).
   */
  async #halt(sync: ActiveSync, untilDone = true): Promise<void> {
    const run = sync.run;
    if (run !== undefined) run.active = false;
    await Promise.all([...(run?.sequence ?? []).map((phase) => phase.stop()), sync.application?.stop(), sync.verification?.stop()]);
    if (untilDone) await run?.done;
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
    if (doc === null) throw new InvalidStateTransition(new MetadataMissing({ record: 'resume document' }).message);
    this.#launch(sync, await this.#prepare(sync, doc));
  }

  async #recordState(sync: ActiveSync, state: 'RUNNING' | 'PAUSED' | 'COMMITTING'): Promise<void> {
    await sync.resume.setState(state).catch((error: unknown) => {
      throw asClusterError(sync.destination.endpoint, `recording state ${state} in the metadata`, error);
    });
  }

  #newCommit(sync: ActiveSync): CommitPhase {
    const changeApplication = changeApplicationHandoff(sync, this.#options.phases.changeApplication, (status) =>
      this.#retired.push(status),
    );
    return this.#options.phases.commit({ ...sync.run!.context, changeApplication });
  }

  async commit(): Promise<void> {
    const sync = this.#requireSync('commit');
    if (sync.application === undefined) throw new InvalidStateTransition('commit: change events are not being applied');
    const commit = this.#newCommit(sync);
    await commit.begin();
    sync.commit = commit;
    await this.#recordState(sync, 'COMMITTING').catch((error: unknown) => {
      sync.commit = undefined;
      throw error;
    });
    // COMMITTING is recorded: from here the commit finishes in the background whatever happens
    // (a restart finishes it too), so nothing after this point may fail the request.
    sync.verification?.onCommit();
    this.#finishCommit(sync, commit);
  }

  #finishCommit(sync: ActiveSync, commit: CommitPhase): void {
    sync.commit = commit;
    sync.committing = (async () => {
      await commit.recover();
      if ((await commit.start()) === 'done' && !this.#closed) this.#report({ type: 'commitCompleted' });
    })().catch((error: unknown) => this.#logger.error({ err: error }, 'The commit stopped unexpectedly'));
  }

  /** The reverse phase that turns the committed sync (reversed `reversals` times) into `sync`, the reversed one. */
  #newReverse(sync: ActiveSync, reversals: number): ReversePhase {
    return this.#options.phases.reverse({
      source: sync.source,
      destination: sync.destination,
      request: sync.request,
      store: sync.store,
      committed: new MetadataStore(sync.source.client, this.#options.id),
      reversals,
      ferryVersion: this.#options.ferryVersion ?? 'unknown',
      settings: this.#options.settings,
      logger: this.#logger,
    });
  }

  async reverse(): Promise<void> {
    const committed = this.#requireSync('reverse');
    const doc = await committed.resume.read().catch((error: unknown) => {
      throw asClusterError(committed.destination.endpoint, 'reading the metadata', error);
    });
    if (doc?.state !== 'COMMITTED') {
      throw new InvalidStateTransition(`reverse: the metadata says the sync is ${doc?.state ?? 'gone'}, not COMMITTED`);
    }
    const sync = this.#target(reversedRequest(committed.request));
    await checkWriteBlockingPrivileges(sync);
    const reverse = this.#newReverse(sync, reversalsOf(doc));
    await reverse.begin();
    // Recorded: the reversed sync replaces the committed one, which has nothing left running.
    await this.#halt(committed);
    this.#eventsBeforeReverse = this.counters().appliedEvents;
    this.#retire(committed);
    this.#recoveredFailure = undefined;
    this.#sync = sync;
    this.#finishReverse(sync, reverse);
  }

  /** Runs `reverse` to its end in the background, then launches the reversed sync and reports `reverseCompleted`. */
  #finishReverse(sync: ActiveSync, reverse: ReversePhase): void {
    sync.reverse = reverse;
    sync.reversing = (async () => {
      await reverse.recover();
      if ((await reverse.start()) !== 'done' || this.#closed) return;
      const doc = await sync.resume.read();
      if (doc === null) throw new MetadataMissing({ record: 'resume document' });
      const run = await this.#prepare(sync, doc);
      sync.reverse = undefined;
      // RUNNING before the run can report anything (a failure reported while REVERSING would be lost).
      this.#report({ type: 'reverseCompleted' });
      this.#launch(sync, run);
    })().catch((error: unknown) => {
      this.#logger.error({ err: error }, 'The reversed sync could not be launched');
      this.#recoveredFailure =
        `The reverse is recorded but the reversed sync could not be launched: ${redactUris((error as Error).message)}. ` +
        'Restart Ferry to continue it.';
    });
  }

  #statuses(): PhaseStatus[] {
    const sync = this.#sync;
    const live = [...(sync?.run?.sequence ?? []), sync?.application, sync?.commit, sync?.verification, sync?.reverse].map(
      (phase) => phase?.status() ?? {},
    );
    return [...this.#retired.map(({ counters }) => ({ counters })), ...live];
  }

  snapshot(): SyncSnapshot {
    if (this.#sync === undefined) return { info: null, eventsApplied: 0, readyToCommit: false, warnings: [] };
    const recovered: PhaseStatus = { warnings: this.#recoveredFailure === undefined ? [] : [this.#recoveredFailure] };
    const snapshot = mergeStatuses([recovered, ...this.#statuses()]);
    snapshot.eventsApplied -= this.#eventsBeforeReverse;
    return snapshot;
  }

  async verificationReport(skip: number, limit: number): Promise<VerificationReport | null> {
    const sync = this.#sync;
    if (sync === undefined) return null;
    if (sync.verification === undefined) {
      return {
        enabled: false,
        outcome: 'pending',
        progress: null,
        partitions: { total: 0, scanned: 0 },
        pendingRechecks: 0,
        notVerified: 0,
        mismatchCount: 0,
        mismatches: [],
        committedWithDifferences: false,
        completedAt: null,
      };
    }
    return sync.verification.report(skip, limit).catch((error: unknown) => {
      throw asClusterError(sync.destination.endpoint, 'reading the verification report', error);
    });
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    const sync = this.#sync;
    if (sync !== undefined) {
      const stopping = [sync.commit?.stop(), sync.reverse?.stop()];
      await this.#halt(sync);
      await Promise.all([...stopping, sync.committing, sync.reversing]);
    }
    await Promise.allSettled([...this.#clusters.values()].map((cluster) => cluster.client.close()));
    this.#histograms.close();
  }
}
