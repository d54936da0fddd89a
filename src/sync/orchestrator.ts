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
 * - A phase's failure on a passing condition of a cluster (a failover, a dropped connection, a write
 *   concern not met in time: src/cluster/errors.ts `isTransient`) stops the run and launches a new
 *   one from the records, as `resume` would, under the retry policy (src/cluster/retry.ts); any
 *   other failure, or one that persists, is recorded (state PAUSED, `lastError`), the other phases
 *   stop, and the state machine hears `failed`: the sync pauses, and `resume` continues from the
 *   checkpoints.
 * - `commit`: the commit phase begins while the request waits, then finishes in the background
 *   (its retries and its hand-off of change-event application are src/commit/'s); `commitCompleted`.
 * - `reverse`: the reverse phase checks the committed sync and records the reversed one while the
 *   request waits (src/reverse/), then prepares it in the background (REVERSING); the reversed sync
 *   (clusters swapped, metadata on its own destination) replaces the committed one, is launched,
 *   and `reverseCompleted`. Its events applied are counted from zero in progress.
 * - `recover` (process start): src/recovery/ finds the recorded sync; a RUNNING one is launched,
 *   a COMMITTING one's commit finishes, a REVERSING one's reverse finishes and is launched, a
 *   PAUSED one waits for `resume`.
 * - The sync's lease (src/meta/lease.ts) is taken before anything is written (at `start`, or when a
 *   recorded sync is recovered) and kept while this process runs; every metadata write is fenced
 *   by it. A second Ferry with the same id is refused (SyncLeaseHeld).
 * - The destination's guard (src/guard/) checks, at each launch, each part of the copy, before
 *   commit begins and completes, and every `guardIntervalMs` while the sync runs or commits, that
 *   nothing but Ferry changed what it owns there.
 * - An error the sync cannot continue from (`final` in the catalogue: history lost, the
 *   destination changed behind Ferry's back, the lease taken over) stops everything, in RUNNING or
 *   COMMITTING: the sync is PAUSED with the reason, `resume` and `commit` are refused with
 *   SyncCannotContinue (the reason says what to do), and a source Ferry write-blocked for the
 *   commit is unblocked again (the application stays on the source).
 * - Verification (when the request and `--disableVerification` allow it) starts with each run and
 *   runs on through COMMITTING and after COMMITTED until its final pass is done; pause and stop
 *   halt it with the rest. It never fails the sync (it retries by itself) and is told of a commit.
 */
import type { Cluster } from '../cluster/connect.js';
import { addressOf, openCluster } from '../cluster/connect.js';
import { setUserWriteBlocking } from '../cluster/commands.js';
import { asClusterError, isTransient, onCluster } from '../cluster/errors.js';
import { ClusterHealth } from '../cluster/health.js';
import { RETRY_POLICY, retryDelay, sleep } from '../cluster/retry.js';
import type { SyncSettings } from '../config/settings.js';
import type { ClusterEndpoint, ClusterName } from '../domain/clusters.js';
import { redactUris } from '../domain/credentials.js';
import { blocksDestination, blocksSource, reversedRequest, type StartRequest } from '../domain/start-request.js';
import type { RecoveredState, SyncControl, SyncEvent, SyncSnapshot } from '../domain/sync-control.js';
import { describeFailure, FerryError, InvalidStateTransition, isFinal, MetadataMissing, SyncCannotContinue } from '../errors/errors.js';
import { DestinationGuard } from '../guard/destination-guard.js';
import type { VerificationReport } from '../domain/verification.js';
import type { Logger } from '../log/logger.js';
import { Lease } from '../meta/lease.js';
import { ResumeStore, reversalsOf, type ResumeDocument } from '../meta/resume.js';
import { MetadataStore } from '../meta/store.js';
import type { CounterValues } from '../metrics/counters.js';
import { HistogramSet } from '../metrics/histograms.js';
import type { CommitPhase, PhaseFactories, PhaseStatus, ReversePhase } from '../phase/contract.js';
import { mergeStatuses, sumCounters } from '../phase/status.js';
import { runPreflight } from '../plan/preflight.js';
import { findRecordedSync } from '../recovery/find-sync.js';
import { InstanceCoordination } from '../coordination/coordination.js';
import { resolveMembership } from '../coordination/membership.js';
import { beginSync, checkWriteBlockingPrivileges } from './begin.js';
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
  /** The error the sync cannot continue from, once it stopped on one (or was recovered so). */
  #final: { code: string; message: string } | undefined;
  #guardTimer: NodeJS.Timeout | undefined;
  /** The sync committed: nothing may undo the cut-over any more. */
  #committed = false;
  /** Events applied in earlier directions of the sync: progress counts the current direction's only. */
  #eventsBeforeReverse = 0;
  /** What the last preflight found to say; the start's, said in progress for this process's life. */
  #preflightWarnings: string[] = [];
  #startWarnings: string[] = [];
  #closed = false;
  /** Bumped by every request that starts or stops a run: a relaunch planned before one is dropped. */
  #generation = 0;
  /** Runs launched again after a passing failure, since the sync last ran a while without one. */
  #relaunches = { count: 0, last: 0 };
  /** Pings of the sync's two clusters, from its start or recovery on. */

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

  /**
   * New live settings (SIGHUP): the running phases apply them at their next partition or batch;
   * runs begun later (resume, restart of a phase) start with them.
   */
  retune(settings: SyncSettings): void {
    this.#options.settings = settings;
    const sync = this.#sync;
    for (const phase of [...(sync?.run?.sequence ?? []), sync?.application, sync?.commit]) phase?.onSettings?.(settings);
  }

  #cluster(name: ClusterName): Cluster {
    let cluster = this.#clusters.get(name);
    if (cluster === undefined) this.#clusters.set(name, (cluster = openCluster(this.#options.clusters[name])));
    return cluster;
  }

  #target(request: StartRequest): ActiveSync {
    const { settings, id } = this.#options;
    const destination = this.#cluster(request.destination);
    const source = this.#cluster(request.source);
    const target: Partial<ActiveSync> = {};
    const lease = new Lease({
      client: destination.client,
      instance: id,
      durationMs: settings.leaseDurationMs,
      logger: this.#logger,
      onLost: (error) => void this.#stopForGood(target as ActiveSync, error),
    });
    const store = new MetadataStore(destination.client, id, lease);
    const health = new ClusterHealth([source.endpoint, destination.endpoint], settings.health);
    return Object.assign(target, {
      request,
      source,
      destination,
      store,
      lease,
      health,
      resume: new ResumeStore(store),
      phase: 'planning' as const,
    });
  }

  async recover(): Promise<RecoveredState | undefined> {
    const found = await findRecordedSync(this.#options.clusters, this.#options.id, this.#logger);
    if (found === undefined) return undefined;
    const sync = this.#target(found.doc.request);
    await this.#join(sync, reversalsOf(found.doc));
    // A live Ferry still running this sync (it renews its lease) is refused; a dead one's lease is taken over.
    await sync.lease.acquire(this.#options.settings.leaseDurationMs + sync.lease.renewIntervalMs).catch((error: unknown) => {
      throw asClusterError(sync.destination.endpoint, 'taking the lease of the sync', error);
    });
    sync.lease.keep();
    this.#sync = sync;
    sync.coordination?.watch(() => this.#localReady());
    // Read again under the lease: the holder before may have written since.
    const doc = (await sync.resume.read()) ?? found.doc;
    this.#committed = doc.state === 'COMMITTED';
    if (!this.#committed) sync.health.start();
    this.#logger.info(
      { state: doc.state, phase: doc.phase, destination: found.cluster, reversals: reversalsOf(doc), epoch: sync.lease.epoch },
      `Recovered a sync in state ${doc.state}, phase ${doc.phase}`,
    );
    // Reversing: its run is prepared once the reverse is done.
    if (doc.state === 'REVERSING') {
      // Several instances: killed between recording the reversed sync and its coordination record, it records that now.
      if (sync.coordination !== undefined && !(await sync.coordination.isRegistered())) await sync.coordination.register();
      this.#finishReverse(sync, this.#newReverse(sync, reversalsOf(doc) - 1));
      return { state: doc.state, request: doc.request };
    }
    // Several instances: this one got reverse and stopped before its reversed sync was recorded: it goes on waiting for the others.
    if (
      doc.state === 'COMMITTED' &&
      sync.coordination !== undefined &&
      (await sync.coordination.reachedSince('reverseRequested', 'committed'))
    ) {
      const reversed = await this.#requestReverse(sync, doc);
      return { state: 'REVERSING', request: reversed.request };
    }
    await this.#prepare(sync, doc);
    if (doc.state === 'PAUSED' && doc.lastError !== undefined) {
      if (doc.cannotContinue !== undefined) {
        this.#final = { code: doc.cannotContinue, message: doc.lastError };
        this.#recoveredFailure = `The sync stopped before Ferry restarted and cannot continue (${doc.cannotContinue}): ${doc.lastError}`;
      } else {
        this.#recoveredFailure =
          `The sync stopped on an error before Ferry restarted and is ` +
          `paused: ${doc.lastError}. Fix the cause, then POST /api/v1/resume.`;
      }
    }
    if (doc.state === 'RUNNING') this.#launch(sync, sync.run!);
    if (doc.state === 'COMMITTING') this.#finishCommit(sync, this.#newCommit(sync));
    // Its final pass after commit continues too.
    if (doc.state === 'COMMITTING' || doc.state === 'COMMITTED') this.#startVerification(sync);
    return { state: doc.state, request: doc.request };
  }

  async preflight(request: StartRequest): Promise<void> {
    // Several instances: the id must be a source shard (refused by name otherwise), and the fellow instances' syncs are this one's.
    const membership = await resolveMembership(this.#cluster(request.source), this.#options.id);
    const { warnings } = await runPreflight(request, {
      clusters: this.#options.clusters,
      id: this.#options.id,
      ...(membership === undefined ? {} : { fellows: membership.members }),
    });
    this.#preflightWarnings = warnings;
  }

  /**
   * Several instances, one per source shard: this one's coordination (src/coordination/), with a
   * client of its own shard; nothing when it runs alone.
   */
  async #join(sync: ActiveSync, reversals = 0): Promise<void> {
    // Reversed (an odd number of times), the instances' ids are the destination's shards.
    const originalSource = reversals % 2 === 0 ? sync.source : sync.destination;
    const membership = await resolveMembership(sync.source, this.#options.id, originalSource);
    if (membership === undefined) return;
    const endpoint = {
      ...sync.source.endpoint,
      uri: membership.shardUri,
      address: addressOf(membership.shardUri) ?? membership.shard.host,
    };
    sync.coordination = new InstanceCoordination({
      instance: this.#options.id,
      store: sync.store,
      shard: { id: membership.shard.id, cluster: openCluster(endpoint) },
      members: membership.members,
      request: sync.request,
      logger: this.#logger,
    });
    this.#logger.info(
      { shard: membership.shard.id, members: membership.members, coordinator: sync.coordination.coordinatorId },
      `One of ${membership.members.length} instances (one per source shard): ` +
        `this one (${this.#options.id}) syncs shard "${membership.shard.id}"`,
    );
  }

  async start(request: StartRequest): Promise<void> {
    const sync = this.#target(request);
    await this.#join(sync);
    // A different request than another instance got is refused before anything is written.
    await sync.coordination?.refuseDifferent();
    const doc = await beginSync(sync, this.#options.id, this.#options.ferryVersion ?? 'unknown');
    await sync.coordination?.register();
    if (request.preExistingDestinationData === true) {
      this.#logger.warn(
        'ATTENTION! Data migration to a non-empty cluster is allowed with preExistingDestinationData set to true in the request to ' +
          'start migration: the destination is not write-blocked, views are not synced, and the sync cannot be reversed',
      );
    }
    sync.lease.keep();
    this.#sync = sync;
    sync.coordination?.watch(() => this.#localReady());
    sync.health.start();
    this.#logger.info(
      { startAtOperationTime: doc.startAtOperationTime.toString(), epoch: sync.lease.epoch },
      'Sync started: start time recorded',
    );
    this.#startWarnings = this.#preflightWarnings;
    for (const warning of this.#startWarnings) this.#logger.warn(warning);
    this.#launch(sync, await this.#prepare(sync, doc));
  }

  /** A new run of `sync` from `doc`: its phases built and recovered, not started. */
  async #prepare(sync: ActiveSync, doc: ResumeDocument): Promise<Run> {
    this.#retire(sync);
    sync.guard ??= new DestinationGuard({ destination: sync.destination, store: sync.store, lease: sync.lease, createdAt: doc.createdAt });
    sync.phase = doc.phase;
    // Hot documents named by this run or an earlier one: events skipped before must still be copied at commit.
    const hotDocuments = await sync.resume.addHotDocuments(this.#options.settings.hotDocuments);
    const runDoc = hotDocuments.length > 0 ? { ...doc, hotDocuments } : doc;
    if (hotDocuments.length > 0) {
      this.#logger.info(
        { hotDocuments: hotDocuments.map(({ db, coll, ids }) => ({ ns: `${db}.${coll}`, count: ids.length })) },
        'Hot documents (--hotDocIDs): their change events are not applied; the commit copies them from the source',
      );
    }
    const context = syncContext(sync, runDoc, { settings: this.#options.settings, histograms: this.#histograms, logger: this.#logger });
    const run: Run = { context, sequence: this.#options.phases.sequence.map((build) => build(context)), active: false };
    sync.run = run;
    sync.application = this.#options.phases.changeApplication(context);
    sync.applicationStarted = false;
    // Several instances: the coordinator verifies the whole migration (through the mongos).
    const verifies =
      sync.request.verification.enabled && this.#options.settings.verification.enabled && sync.coordination?.isCoordinator !== false;
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
    this.#watchDestination(sync);
    run.done = (async () => {
      // Nothing builds on a destination changed behind Ferry's back.
      await sync.guard?.check();
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

  /** A phase failed: launch the run again after a passing failure, else record it, stop the rest, and let the state machine pause. */
  async #fail(sync: ActiveSync, error: unknown): Promise<void> {
    if (isFinal(error)) return this.#stopForGood(sync, error);
    if (this.#sync !== sync || sync.run?.active !== true) return; // already stopping or stopped
    if (await this.#relaunched(sync, error)) return;
    this.#unwatchDestination();
    this.#logger.error({ err: error }, 'The sync failed');
    await this.#halt(sync, false);
    await sync.resume.setState('PAUSED', redactUris(describeFailure(error))).catch((persistError: unknown) => {
      this.#logger.error({ err: persistError }, 'Could not record the failure in the metadata');
    });
    this.#report({ type: 'failed', error: error as Error });
  }

  /**
   * After a passing failure (its cause chain holds one `isTransient` accepts), stops the run and,
   * after the retry policy's delay, launches a new one from the records; false when the failure is
   * not passing or has come back too often (`RETRY_POLICY.retries` times, each within a minute of
   * the last), so that the sync pauses. A request (pause, resume, commit, close) meanwhile cancels it.
   */
  async #relaunched(sync: ActiveSync, error: unknown): Promise<boolean> {
    let passing = false;
    for (let cause = error; cause !== undefined && !passing; cause = (cause as { cause?: unknown } | null)?.cause) {
      passing = isTransient(cause);
    }
    const now = Date.now();
    if (now - this.#relaunches.last > 60_000) this.#relaunches.count = 0;
    if (!passing || this.#relaunches.count >= RETRY_POLICY.retries) return false;
    const delayMs = retryDelay(this.#relaunches.count);
    this.#relaunches = { count: this.#relaunches.count + 1, last: now };
    const generation = this.#generation;
    this.#logger.warn(
      { err: error, retry: this.#relaunches.count, delayMs },
      `The sync met a passing failure (${redactUris((error as Error).message)}); it continues from its records in ${delayMs} ms`,
    );
    await this.#halt(sync, false);
    await sleep(delayMs);
    if (this.#generation !== generation || this.#closed || this.#sync !== sync) return true;
    const doc = await sync.resume.read().catch(() => null);
    if (doc === null) return false;
    this.#launch(sync, await this.#prepare(sync, doc));
    return true;
  }

  /**
   * The sync stopped on an error it cannot continue from (see the module comment): everything
   * stops, in RUNNING or COMMITTING, and stays stopped. Once only.
   */
  async #stopForGood(sync: ActiveSync, error: FerryError): Promise<void> {
    if (this.#committed) {
      // The cut-over is done: nothing to stop, and the source's blocking must stay as it is.
      this.#logger.warn({ err: error, error: error.code }, `After the commit: ${error.message}`);
      return;
    }
    if (this.#sync !== sync || this.#final !== undefined || this.#closed) return;
    this.#final = { code: error.code, message: redactUris(error.message) };
    this.#unwatchDestination();
    this.#logger.error({ err: error, error: error.code }, `The sync cannot continue: ${error.message}`);
    const commit = sync.commit;
    await Promise.all([this.#halt(sync, false), commit?.stop()]);
    sync.commit = undefined;
    // The cut-over is abandoned: the application stays on the source, so a source Ferry blocked for the
    // commit is unblocked (unless another Ferry took the sync over: the source is its to decide on).
    if (commit !== undefined && blocksSource(sync.request.enableUserWriteBlocking) && error.code !== 'LeaseLost') {
      await setUserWriteBlocking(sync.source.client, false).then(
        () => this.#logger.warn('The commit was abandoned: user writes on the source are allowed again'),
        (unblockError: unknown) =>
          this.#logger.error(
            { err: unblockError },
            'The commit was abandoned, but user writes on the source could not be unblocked: ' +
              'run setUserWriteBlockMode {global: false} on it',
          ),
      );
    }
    if (error.code !== 'LeaseLost') {
      await sync.resume.setState('PAUSED', this.#final.message, error.code).catch((persistError: unknown) => {
        this.#logger.error({ err: persistError }, 'Could not record in the metadata that the sync cannot continue');
      });
    }
    this.#report({ type: 'failed', error });
  }

  /** The reason a request is refused once the sync cannot continue. */
  #cannotContinue(command: string): FerryError {
    const { code, message } = this.#final!;
    return new SyncCannotContinue(`${command} is refused: this sync stopped and cannot continue (${code}): ${message}`);
  }

  /** Checks the destination now; an error the sync cannot continue from stops it for good and refuses `command`. */
  async #checkDestination(sync: ActiveSync, command: string): Promise<void> {
    try {
      await sync.guard?.check();
    } catch (error) {
      if (!isFinal(error)) throw asClusterError(sync.destination.endpoint, `checking the destination before ${command}`, error);
      await this.#stopForGood(sync, error);
      throw this.#cannotContinue(command);
    }
  }

  /** Checks the destination every `guardIntervalMs` while the sync runs or commits. */
  #watchDestination(sync: ActiveSync): void {
    this.#unwatchDestination();
    let checking = false;
    this.#guardTimer = setInterval(() => {
      // One check at a time: a destination that does not answer must not pile them up.
      if (checking || sync.guard === undefined) return;
      checking = true;
      sync.guard
        .check()
        .catch((error: unknown) => {
          if (isFinal(error)) void this.#stopForGood(sync, error);
          // Otherwise the destination did not answer: health and lag say so; the next check tries again.
          else this.#logger.debug({ err: error }, 'Could not check the destination');
        })
        .finally(() => (checking = false));
    }, this.#options.settings.guardIntervalMs);
    this.#guardTimer.unref();
  }

  #unwatchDestination(): void {
    clearInterval(this.#guardTimer);
    this.#guardTimer = undefined;
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
    this.#generation++;
    this.#unwatchDestination();
    await this.#halt(sync);
    await this.#recordState(sync, 'PAUSED');
    // Several instances: the others say so until each got pause too.
    await sync.coordination?.command('pause').catch((error: unknown) => {
      throw asClusterError(sync.destination.endpoint, 'recording the pause for the other instances', error);
    });
  }

  async resume(): Promise<void> {
    const sync = this.#requireSync('resume');
    this.#generation++;
    if (this.#final !== undefined) throw this.#cannotContinue('resume');
    // A run that failed may still be winding down (workers checkpointing): never run two at once.
    await this.#halt(sync);
    await this.#checkDestination(sync, 'resume');
    await this.#recordState(sync, 'RUNNING');
    await sync.coordination?.command('resume').catch((error: unknown) => {
      throw asClusterError(sync.destination.endpoint, 'recording the resume for the other instances', error);
    });
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
    this.#generation++;
    if (this.#final !== undefined) throw this.#cannotContinue('commit');
    if (sync.application === undefined) throw new InvalidStateTransition('commit: change events are not being applied');
    await this.#checkDestination(sync, 'commit');
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
    this.#watchDestination(sync);
    sync.committing = (async () => {
      await commit.recover();
      if ((await commit.start()) === 'done' && !this.#closed) {
        this.#committed = true;
        this.#unwatchDestination();
        await sync.health.stop();
        this.#report({ type: 'commitCompleted' });
      }
    })().catch((error: unknown) => {
      if (isFinal(error)) return this.#stopForGood(sync, error);
      this.#logger.error({ err: error }, 'The commit stopped unexpectedly');
    });
  }

  /** The reverse phase that turns the committed sync (reversed `reversals` times) into `sync`, the reversed one. */
  #newReverse(sync: ActiveSync, reversals: number, takeLease: () => Promise<void> = async () => {}): ReversePhase {
    return this.#options.phases.reverse({
      takeLease,
      ...(sync.coordination === undefined ? {} : { coordination: sync.coordination }),
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
    this.#generation++;
    const doc = await committed.resume.read().catch((error: unknown) => {
      throw asClusterError(committed.destination.endpoint, 'reading the metadata', error);
    });
    if (doc?.state !== 'COMMITTED') {
      throw new InvalidStateTransition(`reverse: the metadata says the sync is ${doc?.state ?? 'gone'}, not COMMITTED`);
    }
    if (committed.coordination !== undefined) {
      await this.#requestReverse(committed, doc);
      return;
    }
    const sync = this.#target(reversedRequest(committed.request));
    await checkWriteBlockingPrivileges(sync);
    await this.#beginReverse(committed, sync, reversalsOf(doc));
  }

  /**
   * Several instances: records that this one got `reverse` (on the committed sync's coordination
   * records), then, in the background, waits for every other instance to get it too (progress
   * names those missing) before anything of the reversed sync is written; then reverses as one
   * instance does, the coordinator alone preparing the destination (src/reverse/). The reversed
   * sync returned is the one begun once everyone got it.
   */
  async #requestReverse(committed: ActiveSync, doc: ResumeDocument): Promise<ActiveSync> {
    const coordination = committed.coordination!;
    const sync = this.#target(reversedRequest(committed.request));
    await this.#join(sync, reversalsOf(doc) + 1);
    await checkWriteBlockingPrivileges(sync);
    await coordination.reach('reverseRequested').catch((error: unknown) => {
      throw asClusterError(committed.destination.endpoint, 'recording the reverse request', error);
    });
    committed.reversing = (async () => {
      if (!(await coordination.awaitAll('reverseRequested', () => this.#closed))) return;
      await this.#beginReverse(committed, sync, reversalsOf(doc));
    })().catch((error: unknown) => {
      this.#logger.error({ err: error }, 'The reverse could not begin');
      this.#recoveredFailure =
        `Every instance got reverse, but this one could not begin the reversed sync: ${redactUris((error as Error).message)}. ` +
        'Restart Ferry to try again.';
    });
    return sync;
  }

  /** Begins the reversed sync `sync` of `committed` (reversed `reversals` times), which it replaces; finishes it in the background. */
  async #beginReverse(committed: ActiveSync, sync: ActiveSync, reversals: number): Promise<void> {
    // The reversed sync's metadata lives on its own destination: its lease there comes before any write.
    let leaseExisted: boolean | undefined;
    const reverse = this.#newReverse(sync, reversals, async () => {
      leaseExisted = (await onCluster(sync.destination.endpoint, 'reading the lease of the sync', sync.lease.read())) !== null;
      await onCluster(sync.destination.endpoint, 'taking the lease of the reversed sync', sync.lease.acquire());
    });
    try {
      await reverse.begin();
    } catch (error) {
      // Not reversed: a lease this reverse made goes again.
      if (leaseExisted !== undefined) await (leaseExisted ? sync.lease.release() : sync.lease.discard()).catch(() => undefined);
      throw error;
    }
    sync.lease.keep();
    // Several instances: this one's part in the reversed sync, under its lease there.
    await sync.coordination?.register();
    // Recorded: the reversed sync replaces the committed one, which has nothing left running.
    await this.#halt(committed);
    committed.coordination?.stop();
    await Promise.all([committed.lease.release(), committed.health.stop()]);
    this.#eventsBeforeReverse = this.counters().appliedEvents;
    this.#retire(committed);
    this.#recoveredFailure = undefined;
    this.#committed = false;
    this.#final = undefined;
    this.#startWarnings = [];
    this.#sync = sync;
    sync.coordination?.watch(() => this.#localReady());
    sync.health.start();
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
    const tuning = this.#options.settings.tuning;
    const sync = this.#sync;
    if (sync === undefined) return { info: null, eventsApplied: 0, readyToCommit: false, warnings: [], tuning };
    const recovered: PhaseStatus = {
      warnings: [...this.#startWarnings, ...(this.#recoveredFailure === undefined ? [] : [this.#recoveredFailure])],
    };
    // A cluster that does not answer: said in warnings, and no commit meanwhile.
    const outage = sync.health.warnings({ source: sync.source.endpoint, destination: sync.destination.endpoint });
    const health: PhaseStatus = { warnings: outage, ...(outage.length > 0 ? { readyToCommit: false } : {}) };
    const final: PhaseStatus = this.#final === undefined ? {} : { info: stoppedInfo(this.#final.code), readyToCommit: false };
    // Several instances: canCommit only when every instance can; who is waited for is said.
    const coordination: PhaseStatus = sync.coordination?.status() ?? {};
    const snapshot = mergeStatuses([recovered, ...this.#statuses(), health, final, coordination]);
    if (sync.coordination !== undefined) snapshot.coordinatorID = sync.coordination.coordinatorId;
    snapshot.tuning = tuning;
    // The health watch's pings give mongosync's pingLatencyMs too (-1: the last ping was not answered).
    snapshot.pingLatencyMs = {};
    for (const side of ['source', 'destination'] as const) {
      const known = sync.health.of(sync[side].endpoint);
      if (known !== undefined) snapshot.pingLatencyMs[side] = known.unreachableSince !== undefined ? -1 : known.latencyMs;
    }
    snapshot.eventsApplied -= this.#eventsBeforeReverse;
    return snapshot;
  }

  /** Whether this instance alone could commit now (what it publishes to the other instances). */
  #localReady(): boolean {
    const sync = this.#sync;
    if (sync === undefined || this.#final !== undefined) return false;
    const outage = sync.health.warnings({ source: sync.source.endpoint, destination: sync.destination.endpoint });
    return outage.length === 0 && mergeStatuses(this.#statuses()).readyToCommit;
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
    this.#generation++;
    const sync = this.#sync;
    this.#unwatchDestination();
    if (sync !== undefined) {
      const stopping = [sync.commit?.stop(), sync.reverse?.stop()];
      await this.#halt(sync);
      await Promise.all([...stopping, sync.committing, sync.reversing]);
      sync.coordination?.stop();
      await sync.coordination?.shard.cluster.client.close().catch(() => undefined);
      // A restart takes over at once; the lease expires by itself if this never runs.
      await sync.lease.release();
      await sync.health.stop();
    }
    await Promise.allSettled([...this.#clusters.values()].map((cluster) => cluster.client.close()));
    this.#histograms.close();
  }
}

/** What progress says (`info`) of a sync that stopped and cannot continue. */
function stoppedInfo(code: string): string {
  switch (code) {
    case 'ChangeStreamHistoryLost':
      return 'change event application stopped: the source change stream history was lost';
    case 'DestinationChanged':
      return "sync stopped: the destination was changed behind Ferry's back";
    case 'LeaseLost':
      return 'sync stopped: another Ferry took it over';
    default:
      return `sync stopped: it cannot continue (${code})`;
  }
}
