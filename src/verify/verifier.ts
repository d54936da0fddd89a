/**
 * The embedded verifier: checks that the destination holds what the source holds, documents byte
 * for byte (field order included), collection options, views and indexes (in their temporary form
 * before commit, their final form after), and keeps checking until its final pass after commit.
 * It never writes to the source; on the destination it writes only its own metadata.
 *
 * Its parts, run together once the initial copy is complete (mongosync ≥ 1.22 also starts its
 * verifier with change-event application, so the copy never competes with it):
 * 1. begin: each cluster's change stream position "now" is recorded (state.ts) before anything
 *    is read, so that every change after it is seen;
 * 2. planning: every verified collection is cut into `_id` ranges (partitions.ts), and every
 *    namespace's definition is checked (catalog-check.ts; a difference counts once a second check,
 *    after change events through the first one's source reads were applied, finds it again:
 *    catalog-rechecks.ts);
 * 3. initial hashing: the ranges are compared on both clusters in worker threads
 *    (compare-range.ts, range-pool.ts), `verifyWorkers` at once; each task's differences are
 *    queued durably, then its position recorded, so a restart skips what is done;
 * 4. stream hashing: both clusters' change streams queue every document changed since
 *    (touches.ts); queued documents are checked again once the change is applied and confirmed
 *    or cleared (recheck.ts); DDL on a verified namespace checks it again (and scans it again
 *    after a create, drop or rename);
 * 5. the final pass, once the commit is complete: every change through the commit point checked,
 *    definitions checked in their final form, what could not be verified counted (changes on the
 *    source after the commit point, on the destination after commit), and the outcome recorded
 *    and logged. Then the phase is done.
 *
 * Differences are reported by namespace, `_id` and kind in progress warnings, the log and the
 * report (`GET /api/v1/verification`). A commit while differences are known goes ahead (commit is
 * not the verifier's to refuse) and says so loudly. A failure (a cluster unreachable) is shown in
 * warnings and verification continues from its records after `retryIntervalMs`; it never stops
 * the sync.
 */
import { Timestamp } from 'bson';
import type { MongoClient } from 'mongodb';
import { ChangeStreamReader } from '../cluster/change-stream.js';
import { connect } from '../cluster/connect.js';
import { isNamespaceNotFound, isTransient } from '../cluster/errors.js';
import { sameResumeToken } from '../cluster/resume-token.js';
import { RETRY_POLICY, retryDelay } from '../cluster/retry.js';
import { redactUris } from '../domain/credentials.js';
import { namespaceOf, splitNamespace, type Namespace } from '../domain/namespaces.js';
import type { SyncPhase } from '../domain/states.js';
import { laterTime, timeAfter } from '../domain/time.js';
import type { Mismatch, VerificationProgress, VerificationReport, VerificationSide } from '../domain/verification.js';
import { ChangeStreamCheckpoints } from '../meta/change-stream.js';
import { CommitRecord } from '../meta/commit.js';
import { unpackValue } from '../meta/store.js';
import type { PhaseOutcome, PhaseStatus, SyncContext, VerificationPhase } from '../phase/contract.js';
import { PLANNING_CHUNK, PLANNING_PARALLELISM } from '../config/settings.js';
import type { PlannedPartition } from '../meta/partitions.js';
import { planCollectionCopy, type CollectionCopyPlan } from '../plan/copy-plan.js';
import { replyBufferBytes } from '../cluster/wire-reads.js';
import { forEachBounded } from '../plan/for-each-bounded.js';
import { readCollectionStats, type CollectionStats } from '../plan/partitions.js';
import { selectorFor, type NamespaceSelector } from '../plan/namespaces.js';
import {
  checkNamespace,
  listedEntries,
  selectedNamespaces,
  type CatalogForm,
  type ListedEntries,
  type NamespaceCheck,
} from './catalog-check.js';
import { CatalogRecheckStore, settleDefinitions } from './catalog-rechecks.js';
import type { RangeOutcome } from './compare-range.js';
import { documentMismatch, mismatchLine, MismatchStore } from './mismatches.js';
import { Rechecker } from './recheck.js';
import { RecheckQueue } from './recheck-queue.js';
import { RecheckStore } from './recheck-store.js';
import { RangePool, VERIFY_APP_NAME } from './range-pool.js';
import { byRemainingBytes, VerificationPartitions, type RangeRow } from './partitions.js';
import { VerificationState, type Side, type StreamPoint, type VerificationDocument } from './state.js';
import { TouchFollower, type DdlTouch } from './touches.js';
import { waitOrWake } from './wait-or-wake.js';

/** Differences shown in progress warnings (the report has them all). */
const WARNED_MISMATCHES = 5;

/** Namespaces whose definition differences are checked again at a time (catalog-rechecks.ts). */
const CATALOG_RECHECK_BATCH = 100;

/**
 * How often at most a stream's position is recorded. The destination's moves every second with
 * Ferry's own metadata writes (a stream's resume token follows the cluster's time), and recording
 * it was such a write: one a second for the life of an idle sync, which may wait days for its
 * commit. A position recorded later only makes the re-read after a restart longer.
 */
const STREAM_RECORD_INTERVAL_MS = 10_000;

/** Later than any cluster time. */
const LAST_TIME = new Timestamp({ t: 0xffffffff, i: 0xffffffff });

/** The verifier was asked to stop. */
class Stopped extends Error {}

/** Where the sync's commit stands, from its record. */
interface CommitView {
  /** Events through the commit point are applied (change-event application has stopped). */
  applied: boolean;
  /** The commit is complete (characteristics restored, destination writable). */
  completed: boolean;
  commitPoint?: Timestamp;
}

/**
 * Statistics or a plan of a collection read after it was listed, or `gone` when it was dropped or
 * renamed meanwhile (NamespaceNotFound): its DDL event, which the verifier follows, plans it again.
 */
async function unlessGone<T>(read: Promise<T>, gone: T): Promise<T> {
  return read.catch((error: unknown) => {
    if (isNamespaceNotFound(error)) return gone;
    throw error;
  });
}

const NO_RANGES: CollectionCopyPlan = { stats: { count: 0, size: 0 }, partitions: [] };
const NO_DOCUMENTS: CollectionStats = { count: 0, size: 0 };

/** The position "now" of a cluster's change stream: where a stream opened now starts. */
async function streamStart(client: MongoClient, context: SyncContext): Promise<StreamPoint> {
  const reader = new ChangeStreamReader({ client, batchSize: 1, maxAwaitMs: 1, logger: context.logger });
  try {
    const first = await reader.next();
    return { resumeToken: first.postBatchResumeToken, ...(first.resumeTime === undefined ? {} : { time: first.resumeTime }) };
  } finally {
    await reader.close();
  }
}

export class Verifier implements VerificationPhase {
  readonly name = 'verification';
  readonly #context: SyncContext;
  readonly #selector: NamespaceSelector;
  readonly #state: VerificationState;
  readonly #partitions: VerificationPartitions;
  readonly #rechecks: RecheckStore;
  readonly #mismatches: MismatchStore;
  readonly #catalogRechecks: CatalogRecheckStore;
  /** The check of each namespace under way: one at a time per namespace (each replaces what the last left waiting). */
  readonly #catalogChecks = new Map<string, Promise<unknown>>();
  readonly #queue: RecheckQueue;
  /**
   * While the plan checks every namespace: the namespaces whose definition differences wait for a
   * second check, and those with such differences recorded, read once for all the plan's checks.
   * Only catalog checks write either, and each adds its namespace here before it writes: a name
   * not here has none.
   */
  #planReads: { waiting: Set<string>; mismatched: Set<string> } | undefined;
  #record: VerificationDocument | undefined;
  /** The last read of the definitions waiting for a second check that found none due. */
  #catalogNothingDue: { through: Timestamp | 'all' | undefined; changes: number } | undefined;
  /** When each stream's position was last recorded (ms since the epoch). */
  readonly #streamsRecordedAt: Record<Side, number> = { source: 0, destination: 0 };
  #syncPhase: SyncPhase;
  #stopping = false;
  /** The current attempt is over (a part of it failed, or it finished): its loops end. */
  #halted = false;
  #running: Promise<PhaseOutcome> | undefined;
  #wake: (() => void)[] = [];
  #followers: Partial<Record<Side, TouchFollower>> = {};
  /** DDL events waiting to be handled, oldest first. */
  #ddl: DdlTouch[] = [];
  /** The DDL event being handled (still first in `#ddl`). */
  #handlingDdl: DdlTouch | undefined;
  /** Figures for progress (kept in memory; refreshed from the metadata at each checkpoint). */
  #figures = {
    ranges: { total: 0, done: 0 },
    collections: { total: 0, scanned: 0 },
    hashed: { source: 0, destination: 0 },
    /** Documents read by re-checks in this process. */
    rechecked: { source: 0, destination: 0 },
    pending: 0,
    mismatchCount: 0,
    mismatches: [] as Mismatch[],
    notVerified: 0,
  };
  #applied: Timestamp | undefined;
  #commit: CommitView = { applied: false, completed: false };
  /** The final pass has queued every known document difference for one more check. */
  #knownRechecked = false;
  /** The final pass has checked every namespace's definition in its final form. */
  #finalCatalogChecked = false;
  #problem: string | undefined;
  #commitWarning: string | undefined;
  /** Reads of the differences started, and the latest one shown (an older read never overwrites a newer). */
  #mismatchReads = { started: 0, shown: 0 };
  /** The range threads, started while the indexes build (`#scanRanges` takes them; `#verify` ends them). */
  #rangePool: RangePool | undefined;

  constructor(context: SyncContext) {
    this.#context = context;
    this.#selector = selectorFor(context.request);
    this.#syncPhase = context.syncPhase();
    this.#state = new VerificationState(context.store);
    this.#partitions = new VerificationPartitions(context.store);
    this.#rechecks = new RecheckStore(context.store);
    this.#mismatches = new MismatchStore(context.store);
    this.#catalogRechecks = new CatalogRecheckStore(context.store);
    this.#queue = new RecheckQueue(this.#rechecks, context.settings.verification.maxPendingRechecks);
  }

  async recover(): Promise<void> {
    this.#record = (await this.#state.read()) ?? undefined;
    if (this.#record !== undefined) await this.#refreshFigures();
  }

  start(): Promise<PhaseOutcome> {
    this.#running ??= this.#run();
    return this.#running;
  }

  async stop(): Promise<void> {
    this.#stopping = true;
    for (const follower of Object.values(this.#followers)) follower.stop();
    this.#wakeAll();
    this.#queue.wakeAll();
    await this.#running?.catch(() => undefined);
  }

  onSyncPhase(phase: SyncPhase): void {
    this.#syncPhase = phase;
    this.#wakeAll();
  }

  onCommit(): void {
    const count = this.#figures.mismatchCount;
    const initialDone = this.#record?.firstPassDoneAt !== undefined;
    if (count === 0 && initialDone) {
      if (this.#record?.initialHashingDoneAt === undefined) {
        this.#context.logger.info('Commit requested while verification scans again what DDL changed; it finishes after the commit');
      }
      return;
    }
    const known =
      count > 0
        ? `verification has found ${count} difference(s) between the source and the destination (${this.#figures.mismatches
            .slice(0, WARNED_MISMATCHES)
            .map(mismatchLine)
            .join('; ')}${count > WARNED_MISMATCHES ? '; ...' : ''})`
        : 'verification has not finished comparing the clusters';
    this.#commitWarning =
      `COMMIT REQUESTED WHILE ${known.toUpperCase().slice(0, 1)}${known.slice(1)}: the commit goes ahead as the operator asked; ` +
      'check GET /api/v1/verification before moving the application to the destination.';
    this.#context.logger.error({ differences: count }, this.#commitWarning);
    if (count > 0) void this.#state.markCommittedWithDifferences().catch(() => undefined);
  }

  status(): PhaseStatus {
    const warnings: string[] = [];
    const figures = this.#figures;
    if (this.#commitWarning !== undefined) warnings.push(this.#commitWarning);
    else if (this.#record?.committedWithDifferences === true) {
      warnings.push('The commit was requested while verification reported differences (see GET /api/v1/verification).');
    }
    if (figures.mismatchCount > 0) {
      const shown = figures.mismatches.slice(0, WARNED_MISMATCHES).map(mismatchLine);
      const more = figures.mismatchCount > shown.length ? `; and ${figures.mismatchCount - shown.length} more` : '';
      const finished = this.#record?.completedAt !== undefined ? 'Verification finished: ' : 'Verification: ';
      warnings.push(
        `${finished}${figures.mismatchCount} difference(s) between the source and the destination: ${shown.join('; ')}${more} ` +
          '(the full list: GET /api/v1/verification)',
      );
    }
    if (figures.notVerified > 0) {
      warnings.push(
        `Verification: ${figures.notVerified} change(s) made after commit (on the source after the commit point, ` +
          'or on the destination after commit) could not be verified',
      );
    }
    if (this.#problem !== undefined) warnings.push(this.#problem);
    const progress = this.#progress();
    return {
      warnings,
      figures: { verification: progress },
      // mongosync: a commit waits for the verifier to be "in an appropriate state": every range
      // compared once. A namespace scanned again after DDL does not take that back (canCommit
      // would flicker under an operator's commit); the final pass still waits for the rescan.
      readyToCommit: this.#record?.firstPassDoneAt !== undefined,
    };
  }

  #progress(): VerificationProgress {
    const record = this.#record;
    const figures = this.#figures;
    const phase: VerificationSide['phase'] =
      record === undefined || !record.planned
        ? 'not started'
        : record.initialHashingDoneAt === undefined || figures.ranges.done < figures.ranges.total
          ? 'initial hashing'
          : 'stream hashing';
    const side = (which: Side): VerificationSide => {
      const follower = this.#followers[which];
      const lag =
        follower?.latest !== undefined && follower.position !== undefined
          ? Math.max(0, follower.latest.getHighBits() - follower.position.getHighBits())
          : 0;
      return {
        phase,
        hashedDocumentCount: figures.hashed[which] + figures.rechecked[which],
        estimatedDocumentCount: record?.estimatedDocuments[which] ?? 0,
        lagTimeSeconds: lag,
        scannedCollectionCount: figures.collections.scanned,
        totalCollectionCount: figures.collections.total,
      };
    };
    return { source: side('source'), destination: side('destination') };
  }

  async report(skip: number, limit: number): Promise<VerificationReport> {
    const [record, summary, pending, counted] = await Promise.all([
      this.#state.read(),
      this.#partitions.summary(),
      this.#rechecks.count(),
      this.#mismatches.count(),
    ]);
    // Listed after counting: a difference recorded between the two reads is listed and counted,
    // never counted and missing from the list (as when both reads ran at once).
    const mismatches = await this.#mismatches.list(skip, limit);
    const mismatchCount = Math.max(counted, skip + mismatches.length);
    const completedAt = record?.completedAt ?? null;
    return {
      enabled: true,
      outcome: completedAt === null ? 'pending' : mismatchCount > 0 ? 'differences' : 'clean',
      progress: this.#progress(),
      partitions: { total: summary.total, scanned: summary.done },
      pendingRechecks: pending + this.#queue.size,
      notVerified: record?.notVerified ?? 0,
      mismatchCount,
      mismatches,
      committedWithDifferences: record?.committedWithDifferences === true,
      completedAt,
    };
  }

  #wakeAll(): void {
    for (const wake of this.#wake.splice(0)) wake();
  }

  /** Waits up to `ms` or until woken (a stop, a phase change). */
  #pause(ms: number): Promise<void> {
    return waitOrWake(ms, this.#wake);
  }

  #checkStopping(): void {
    if (this.#stopping || this.#halted) throw new Stopped();
  }

  /** Whether the loops of this attempt should end (a stop, or another part failed). */
  get #ending(): boolean {
    return this.#stopping || this.#halted;
  }

  /** Runs until the final pass is done or a stop; a failure waits and continues from the records. */
  async #run(): Promise<PhaseOutcome> {
    const { logger, settings } = this.#context;
    // Transient failures in a row (the network, a failover): continued at once, with the cluster layer's backoff.
    let transient = 0;
    for (;;) {
      const attemptStarted = Date.now();
      try {
        return await this.#verify();
      } catch (error) {
        if (this.#stopping) return 'stopped';
        if (Date.now() - attemptStarted > 60_000) transient = 0;
        if (isTransient(error) && transient < RETRY_POLICY.retries) {
          logger.warn({ err: error }, 'Verification was interrupted by a passing failure; it continues from its records');
          await this.#pause(retryDelay(transient++));
          if (this.#stopping) return 'stopped';
          continue;
        }
        transient = 0;
        const seconds = settings.verification.retryIntervalMs / 1000;
        const message = redactUris((error as Error).message);
        this.#problem = `Verification stopped on an error and continues in ${seconds} s from where it was: ${message}`;
        logger.error({ err: error }, 'Verification stopped on an error; it continues from its records');
        await this.#pause(settings.verification.retryIntervalMs);
        if (this.#stopping) return 'stopped';
      }
    }
  }

  /** One attempt (#run repeats them after a failure); the range threads never outlive it. */
  async #verify(): Promise<PhaseOutcome> {
    try {
      return await this.#attempt();
    } finally {
      await this.#endRangePool();
    }
  }

  async #attempt(): Promise<PhaseOutcome> {
    const { source, destination, logger } = this.#context;
    // A new attempt: the last one's tasks are all settled (this method's finally).
    this.#halted = false;
    // Verification begins once the initial copy is complete (a commit is only possible after that).
    while (this.#syncPhase !== 'copied') {
      this.#checkStopping();
      // The range threads load their modules while the indexes build, not in the first pass's time.
      if (this.#syncPhase === 'buildingIndexes') this.#rangePool ??= this.#newRangePool();
      await this.#pause(1000);
    }
    this.#checkStopping();
    let record = (this.#record = (await this.#state.read()) ?? undefined);
    if (record?.completedAt !== undefined) {
      await this.#refreshFigures();
      return 'done';
    }
    if (record === undefined) {
      const [sourceStart, destinationStart] = await Promise.all([
        streamStart(source.client, this.#context),
        streamStart(destination.client, this.#context),
      ]);
      record = this.#record = await this.#state.begin(sourceStart, destinationStart);
      logger.info('Verification begins: both clusters are compared range by range, then followed through their change streams');
      // Verification that begins after commit's boundary: every later destination change is the application's.
      const commit = await this.#readCommit();
      if (commit.applied && destinationStart.time !== undefined) await this.#state.setCommitBoundary(destinationStart.time);
      record = this.#record = (await this.#state.read())!;
    }
    this.#problem = undefined;
    // A stop asked during the reads above found no followers to stop: the tasks must not start.
    this.#checkStopping();
    // Its own clients: in currentOp, server logs and fail points the verifier's change streams and
    // rechecks are `ferry-verify` (as its range reads are), not change-event application's `ferry`.
    const clients = {
      source: connect(source.endpoint, { appName: VERIFY_APP_NAME, maxPoolSize: 4 }),
      destination: connect(destination.endpoint, { appName: VERIFY_APP_NAME, maxPoolSize: 4 }),
    };
    const followers = this.#startFollowers(record, clients);
    const tasks = [
      ...followers,
      this.#checkpointLoop(),
      this.#recheckLoop(clients),
      (async () => {
        if (!record.planned) await this.#plan(clients);
        await this.#scanRanges();
        await this.#ddlLoop(clients.source);
      })(),
    ];
    try {
      // The final pass ends every task; the first failure ends this attempt.
      await Promise.all(tasks);
      return this.#stopping ? 'stopped' : 'done';
    } finally {
      this.#halted = true;
      for (const follower of Object.values(this.#followers)) follower.stop();
      this.#wakeAll();
      this.#queue.wakeAll();
      await Promise.allSettled(tasks);
      this.#followers = {};
      await Promise.allSettled([clients.source.close(), clients.destination.close()]);
    }
  }

  #startFollowers(record: VerificationDocument, clients: Record<Side, MongoClient>): Promise<void>[] {
    const { settings, logger, store } = this.#context;
    const common = {
      selector: this.#selector,
      queue: this.#queue,
      instance: store.instance,
      batchSize: settings.verification.streamBatchSize,
      maxAwaitMs: settings.verification.maxAwaitMs,
      logger,
      onDdl: (ddl: DdlTouch) => {
        this.#ddl.push(ddl);
        this.#wakeAll();
      },
    };
    const sourceFollower = new TouchFollower({
      ...common,
      side: 'source',
      client: clients.source,
      start: record.source,
      stopAfter: () => (this.#commit.applied ? laterTime(this.#commit.commitPoint, this.#applied) : undefined),
      onAfterCommit: async (documents) => {
        // Never applied to the destination: the spec warns that writes to the source during commit may be lost.
        this.#figures.notVerified += documents.length;
        await this.#state.addNotVerified(documents.length);
        await this.#markAfterCommit(documents);
      },
    });
    const destinationFollower = new TouchFollower({
      ...common,
      side: 'destination',
      client: clients.destination,
      start: record.destination,
      ...(record.commitBoundary === undefined ? {} : { boundary: record.commitBoundary }),
      onCommitBoundary: (time) => {
        logger.info('Verification: the commit boundary is read on the destination; later changes there are the application’s');
        if (time !== undefined) void this.#state.setCommitBoundary(time).catch(() => undefined);
      },
      onAfterCommit: (documents) => this.#markAfterCommit(documents),
    });
    this.#followers = { source: sourceFollower, destination: destinationFollower };
    return [sourceFollower.run(), destinationFollower.run()];
  }

  /** Documents changed after commit: a difference found in them is not verifiable (recheck.ts). */
  async #markAfterCommit(documents: { ns: string; id: string }[]): Promise<void> {
    const stored = documents.filter(({ ns, id }) => {
      const entry = this.#queue.get(ns, id);
      if (entry !== undefined) {
        entry.afterCommit = true;
        // A touch: a check in flight read the document before this change, and must not decide
        // (it would count a change the next read finds undone, e.g. a write reverted, as unverifiable).
        entry.touches++;
      }
      return entry === undefined;
    });
    await this.#rechecks.markAfterCommit(stored);
  }

  async #readCommit(): Promise<CommitView> {
    const doc = await new CommitRecord(this.#context.store).read();
    const view: CommitView = { applied: doc?.appliedAt !== undefined, completed: doc?.completedAt !== undefined };
    if (doc?.commitPoint !== undefined) view.commitPoint = doc.commitPoint;
    this.#commit = view;
    return view;
  }

  /** The form the destination's definitions should have now. */
  #form(): CatalogForm {
    return this.#commit.completed ? 'final' : 'temporary';
  }

  /**
   * Cuts every verified collection into ranges and checks every namespace's definition. Statistics
   * and samples are read through the verifier's own `clients`.
   */
  async #plan(clients: Record<Side, MongoClient>): Promise<void> {
    const { source, destination, settings, logger } = this.#context;
    const [onSource, onDestination] = await Promise.all([
      selectedNamespaces(source.client, this.#selector),
      selectedNamespaces(destination.client, this.#selector),
    ]);
    const estimated = { source: 0, destination: 0 };
    const collections = [...onSource].filter(([, entry]) => entry.type === 'collection');
    // What an interrupted plan left is cleared once; then each collection's ranges are only added.
    await this.#partitions.deleteAll();
    // Measuring and sampling wait on the clusters: several collections at once, as planning does,
    // and their ranges written a chunk at a time (the plan counts once `markPlanned` says so: a
    // restart plans again from scratch).
    for (let at = 0; at < collections.length; at += PLANNING_CHUNK) {
      const plans: { ns: Namespace; partitions: PlannedPartition[] }[] = [];
      await forEachBounded(collections.slice(at, at + PLANNING_CHUNK), PLANNING_PARALLELISM, async ([name, entry]) => {
        this.#checkStopping();
        const collection = clients.source.db(entry.db).collection(entry.coll);
        const plan = await unlessGone(planCollectionCopy(collection, entry.options, settings.partitionBytes), NO_RANGES);
        plans.push({ ns: entry, partitions: plan.partitions });
        estimated.source += plan.stats.count;
        if (onDestination.get(name)?.type === 'collection') {
          const stats = await unlessGone(readCollectionStats(clients.destination.db(entry.db).collection(entry.coll)), NO_DOCUMENTS);
          estimated.destination += stats.count;
        }
      });
      await this.#partitions.addPlans(plans);
    }
    // The listings just read serve the first check of each namespace on both clusters (with their
    // times), and what waits for a second check or is recorded as a difference is read once for all.
    const names = [...new Set([...onSource.keys(), ...onDestination.keys()])];
    const [waiting, mismatched] = await Promise.all([this.#catalogRechecks.names(), this.#mismatches.namespaceLevelNames()]);
    await this.#readCommit();
    this.#planReads = { waiting, mismatched };
    try {
      await forEachBounded(names, PLANNING_PARALLELISM, async (name) => {
        await this.#checkCatalog(splitNamespace(name), listedEntries(name, onSource, onDestination));
      });
    } finally {
      this.#planReads = undefined;
    }
    await this.#state.markPlanned(estimated);
    this.#record = (await this.#state.read())!;
    await this.#refreshFigures();
    logger.info(
      { collections: collections.length, ranges: this.#figures.ranges.total, sourceDocuments: estimated.source },
      `Verification planned: ${collections.length} collection(s) in ${this.#figures.ranges.total} range(s)`,
    );
  }

  /**
   * Checks a namespace's definition: a difference is recorded once a second check, made after
   * change events through the first one's source reads were applied, finds it again
   * (catalog-rechecks.ts); one no longer found is forgotten. Not while commit restores the
   * destination's characteristics (between "events applied" and "completed" it is half one form,
   * half the other): the final pass checks every namespace. False when it did not check.
   */
  async #checkCatalog(ns: Namespace, listed?: ListedEntries): Promise<boolean> {
    const name = namespaceOf(ns);
    const check = (this.#catalogChecks.get(name) ?? Promise.resolve()).then(() => this.#checkCatalogNow(ns, listed));
    const settled = check.catch(() => undefined);
    this.#catalogChecks.set(name, settled);
    try {
      return await check;
    } finally {
      if (this.#catalogChecks.get(name) === settled) this.#catalogChecks.delete(name);
    }
  }

  async #checkCatalogNow(ns: Namespace, listed?: ListedEntries): Promise<boolean> {
    const { source, destination, request, logger } = this.#context;
    // The plan's first checks (`listed`) take the commit as last read (the checkpoint loop reads
    // it every second): a first check records nothing by itself, and a second check confirms.
    const known = listed === undefined ? undefined : this.#planReads;
    const commit = known === undefined ? await this.#readCommit() : this.#commit;
    if (commit.applied && !commit.completed) return false;
    const name = namespaceOf(ns);
    // Applied before this check reads (once the commit is complete, all that ever will be).
    const applied = commit.completed ? LAST_TIME : this.#applied;
    const waiting = known !== undefined && !known.waiting.has(name) ? undefined : await this.#catalogRechecks.get(name);
    const check = await checkNamespace(source.client, destination.client, ns, request, this.#form(), listed);
    const settled = waiting !== undefined && !timeAfter(waiting.dueAt, applied) && (commit.completed || this.#streamsPast(name, check));
    const { confirmed, unconfirmed } = settleDefinitions(waiting, check.differences, settled);
    const resolved =
      known !== undefined && !known.mismatched.has(name)
        ? 0
        : await this.#mismatches.resolveNamespaceLevel(
            name,
            check.differences.map((d) => d.subject),
          );
    for (const difference of confirmed) {
      this.#planReads?.mismatched.add(name);
      const fresh = await this.#mismatches.record(name, { subject: difference.subject }, difference.kind, difference.detail);
      if (fresh)
        logger.error(
          { ns: name, kind: difference.kind, detail: difference.detail },
          `Verification: ${name}: ${difference.kind} (${difference.detail})`,
        );
    }
    // After the confirmed are recorded (a crash in between checks them again), before the event or
    // plan that caused this check is let go: a restart checks what waits again. Nothing waited and
    // nothing waits now: there is nothing to forget.
    if (waiting !== undefined || unconfirmed.length > 0) {
      if (unconfirmed.length > 0) this.#planReads?.waiting.add(name);
      await this.#catalogRechecks.save({
        ns: name,
        differences: unconfirmed,
        ...(check.sourceTime === undefined ? {} : { dueAt: check.sourceTime }),
      });
    }
    if (resolved > 0 || confirmed.length > 0) await this.#refreshMismatches();
    // A namespace the destination lacks is one difference, not one per document.
    if (check.differences.some((d) => d.subject === 'namespace' && d.kind === 'missing')) await this.#partitions.skipNamespace(ns);
    return true;
  }

  /**
   * Both change streams have read past a check's reads, and no DDL on the namespace waits to be
   * handled: a definition changed between two checks (and back) would have shown as an event.
   */
  #streamsPast(name: string, check: NamespaceCheck): boolean {
    const { source, destination } = this.#followers;
    if (check.sourceTime === undefined || check.destinationTime === undefined) return false;
    if (timeAfter(check.sourceTime, source?.position) || timeAfter(check.destinationTime, destination?.position)) return false;
    const { db } = splitNamespace(name);
    return !this.#ddl.some(
      (ddl) =>
        ddl !== this.#handlingDdl &&
        ddl.namespaces.some((ns) => (ns.coll === undefined ? ns.db === db : namespaceOf(ns as Namespace) === name)),
    );
  }

  /** Checks again the namespaces whose definition differences are due (catalog-rechecks.ts), a batch at a time. */
  async #recheckDefinitions(): Promise<void> {
    const commit = this.#commit;
    if (commit.applied && !commit.completed) return;
    const through = commit.completed ? 'all' : this.#applied;
    // Nothing was due: nothing is until events through a later time are applied or more is written
    // there (an idle sync asked twice a second).
    const nothingDue = this.#catalogNothingDue;
    if (nothingDue !== undefined && nothingDue.through === through && nothingDue.changes === this.#catalogRechecks.changes) return;
    const changes = this.#catalogRechecks.changes;
    const due = await this.#catalogRechecks.due(through, CATALOG_RECHECK_BATCH);
    this.#catalogNothingDue = due.length === 0 ? { through, changes } : undefined;
    for (const name of due) {
      // DDL events first: a rescan they need holds canCommit back.
      if (this.#ending || this.#ddl.length > 0) return;
      await this.#checkCatalog(splitNamespace(name));
    }
  }

  #newRangePool(): RangePool {
    const { source, destination, settings } = this.#context;
    return new RangePool({ sourceUri: source.endpoint.uri, destinationUri: destination.endpoint.uri }, settings.verification.rangesAtOnce);
  }

  async #endRangePool(): Promise<void> {
    const pool = this.#rangePool;
    this.#rangePool = undefined;
    await pool?.destroy();
  }

  /** Compares every unfinished range, `rangesAtOnce` at a time. */
  async #scanRanges(): Promise<void> {
    const { logger } = this.#context;
    // Largest first: the ranges left to the end are small ones, so the pass does not end on one
    // long range compared alone while the others' slots stand idle.
    const rows = (await this.#partitions.unfinished()).sort(byRemainingBytes);
    if (rows.length > 0) {
      const pool = (this.#rangePool ??= this.#newRangePool());
      const atOnce = Math.min(pool.ranges, rows.length);
      logger.info({ ranges: rows.length, atOnce, threads: pool.threads }, `Verification: comparing ${rows.length} range(s)`);
      try {
        let next = 0;
        const worker = async (): Promise<void> => {
          while (next < rows.length) {
            this.#checkStopping();
            await this.#compareRange(pool, rows[next++]!);
          }
        };
        await Promise.all(Array.from({ length: atOnce }, worker));
      } finally {
        await this.#endRangePool();
      }
    }
    if (this.#record?.initialHashingDoneAt === undefined) {
      await this.#state.markInitialHashingDone();
      const record = (await this.#state.read())!;
      // Figures first, then the record: progress never shows "stream hashing" with stale counts.
      await this.#refreshFigures();
      this.#record = record;
      logger.info('Verification: initial hashing complete; following both clusters’ changes (stream hashing)');
    }
  }

  /** Compares one range task after task, recording each task's differences then its position. */
  async #compareRange(pool: RangePool, row: RangeRow): Promise<void> {
    const { settings } = this.#context;
    const verification = settings.verification;
    const averageBytes = row.estimatedCount > 0 ? Math.max(1, row.estimatedBytes / row.estimatedCount) : 1024;
    const progress = { source: { ...row.source }, destination: { ...row.destination }, differences: row.differences };
    let after = row.after;
    for (;;) {
      this.#checkStopping();
      const outcome: RangeOutcome = await pool.run({
        db: row.db,
        coll: row.coll,
        min: row.min,
        max: row.max,
        ...(after === undefined ? {} : { after }),
        maxBytes: verification.taskBytes,
        maxDifferences: verification.maxDifferencesPerTask,
        batchSize: Math.max(1, Math.min(100_000, Math.ceil(verification.readBatchBytes / averageBytes))),
        ...(settings.copy.readPath === undefined ? {} : { readPath: settings.copy.readPath }),
        replyBytes: replyBufferBytes(averageBytes, verification.readBatchBytes),
      });
      // Differences are queued durably before the position that skips them is recorded.
      if (outcome.differences.length > 0) {
        const dueAt = outcome.sourceTime === undefined ? undefined : new Timestamp(outcome.sourceTime);
        await this.#rechecks.save(
          outcome.differences.map((difference) => ({
            ns: namespaceOf(row),
            id: difference.id,
            attempts: 0,
            ...(dueAt === undefined ? {} : { dueAt }),
          })),
        );
        this.#queue.wakeAll();
      }
      for (const side of ['source', 'destination'] as const) {
        progress[side].documents += outcome[side].documents;
        progress[side].bytes += outcome[side].bytes;
        this.#figures.hashed[side] += outcome[side].documents;
      }
      progress.differences += outcome.differences.length;
      if (outcome.lastId !== undefined) after = outcome.lastId;
      const done = outcome.status === 'done';
      await this.#partitions.record(row.key, { ...progress, ...(after === undefined ? {} : { after }), done });
      if (done) {
        this.#figures.ranges.done++;
        return;
      }
    }
  }

  /** Re-checks queued documents as they fall due, until the final pass is complete. */
  async #recheckLoop(clients: Record<Side, MongoClient>): Promise<void> {
    const { settings, logger } = this.#context;
    const checker = new Rechecker({
      source: clients.source,
      destination: clients.destination,
      queue: this.#queue,
      store: this.#rechecks,
      streamPositions: () => ({ source: this.#followers.source?.position, destination: this.#followers.destination?.position }),
    });
    const batch = settings.verification.recheckBatch;
    /**
     * The last read of the store that found fewer than it asked for: nothing more is due there
     * until events through a later time are applied or more is written there (an idle sync read
     * it every half second).
     */
    let storeDrained: { through: Timestamp | 'all' | undefined; changes: number } | undefined;
    while (!this.#ending) {
      // Once the commit is complete nothing more will be applied: every check is due (a document
      // changed after the commit point on the source is marked, not waited for).
      const applied = this.#commit.completed ? LAST_TIME : this.#applied;
      let due = this.#queue.due(applied, batch);
      // After commit every stored re-check is due, whatever its time (`all`: no time in the query).
      const through = this.#commit.completed ? 'all' : applied;
      const drained = storeDrained !== undefined && storeDrained.through === through && storeDrained.changes === this.#rechecks.changes;
      if (due.length < batch && !drained) {
        const changes = this.#rechecks.changes;
        const stored = await this.#rechecks.due(through, batch - due.length, this.#queue.storedInMemory());
        storeDrained = stored.length < batch - due.length ? { through, changes } : undefined;
        due = [...due, ...this.#queue.load(stored)];
      }
      if (due.length === 0) {
        if (await this.#finalPassDone()) return;
        await this.#queue.wait(500);
        continue;
      }
      const outcome = await checker.check(due);
      this.#figures.rechecked.source += outcome.read.source;
      this.#figures.rechecked.destination += outcome.read.destination;
      if (outcome.notVerified.length > 0) {
        this.#figures.notVerified += outcome.notVerified.length;
        await this.#state.addNotVerified(outcome.notVerified.length);
      }
      const resolved = await this.#mismatches.resolveDocuments(outcome.equal);
      for (const entry of resolved) {
        logger.info({ ns: entry.ns, _id: unpackValue(entry.id) }, `Verification: ${entry.ns} document no longer differs`);
      }
      for (const { entry, kind, detail } of outcome.differences) {
        if (await this.#mismatches.record(entry.ns, { id: entry.id }, kind, detail)) {
          const mismatch = documentMismatch(entry.ns, entry.id, kind, detail);
          logger.error({ ns: entry.ns, _id: mismatch._id, kind, detail }, `Verification: ${mismatchLine(mismatch)}`);
        }
      }
      if (resolved.length > 0 || outcome.differences.length > 0) await this.#refreshMismatches();
    }
  }

  /**
   * Whether the final pass is complete (and if so, records it): the commit is complete, every
   * range compared, no DDL waiting, the source's stream read through the last applied change and
   * the destination's past the commit boundary, and nothing due any more. Re-checks left are of
   * changes after the commit point: not verifiable.
   */
  async #finalPassDone(): Promise<boolean> {
    if (!this.#commit.completed || this.#record?.initialHashingDoneAt === undefined || this.#ddl.length > 0) return false;
    const { source, destination } = this.#followers;
    const through = laterTime(this.#commit.commitPoint, this.#applied);
    if (through === undefined || source === undefined || destination === undefined) return false;
    if (timeAfter(through, source.position) || !destination.afterBoundary) return false;
    if (!this.#knownRechecked) {
      // Every known difference is checked once more against the final state (a difference fixed
      // meanwhile, by a later change or by the operator while the commit waited, goes away).
      await this.#requeueKnownDifferences();
      this.#knownRechecked = true;
      return false;
    }
    if (this.#queue.size > 0 || (await this.#rechecks.count()) > 0) return false;
    if (!this.#finalCatalogChecked) {
      // Definitions in their final form, now that commit restored them.
      const [onSource, onDestination] = await Promise.all([
        selectedNamespaces(this.#context.source.client, this.#selector),
        selectedNamespaces(this.#context.destination.client, this.#selector),
      ]);
      for (const name of new Set([...onSource.keys(), ...onDestination.keys()])) await this.#checkCatalog(splitNamespace(name));
      this.#finalCatalogChecked = true;
    }
    // What they found is confirmed by a second check (the DDL loop), or goes away.
    if ((await this.#catalogRechecks.count()) > 0) return false;
    const count = await this.#mismatches.count();
    await this.#state.complete(count > 0 ? 'differences' : 'clean');
    this.#record = (await this.#state.read())!;
    await this.#refreshFigures();
    const { logger } = this.#context;
    if (count > 0) {
      logger.error(
        { differences: count, notVerified: this.#figures.notVerified },
        `Verification finished after commit: ${count} difference(s) between the source and the destination ` +
          '(GET /api/v1/verification lists them)',
      );
    } else {
      logger.info(
        { notVerified: this.#figures.notVerified },
        'Verification finished after commit: the destination holds what the source held at the commit point',
      );
    }
    for (const follower of Object.values(this.#followers)) follower.stop();
    this.#wakeAll();
    return true;
  }

  /** Queues every known document difference for a check (in batches: memory stays bounded). */
  async #requeueKnownDifferences(): Promise<void> {
    for (let skip = 0; ; skip += 1000) {
      const ids = await this.#mismatches.documents(skip, 1000);
      if (ids.length === 0) return;
      await this.#rechecks.save(ids.map(({ ns, id }) => ({ ns, id, attempts: 0 })));
    }
  }

  /**
   * Handles DDL events once change events through them are applied: definitions checked, namespaces
   * scanned again (planned through the verifier's own `source` client).
   */
  async #ddlLoop(source: MongoClient): Promise<void> {
    while (!this.#ending) {
      const ddl = this.#ddl[0];
      if (ddl === undefined) {
        if (this.#record?.completedAt !== undefined) return;
        await this.#recheckDefinitions();
        await this.#pause(500);
        continue;
      }
      if (ddl.side === 'source' && ddl.time !== undefined && timeAfter(ddl.time, this.#applied)) {
        await this.#pause(200);
        continue;
      }
      this.#handlingDdl = ddl;
      let names: Namespace[];
      try {
        names = await this.#namespacesOf(ddl);
        for (const ns of names) {
          if (ddl.rescan) await this.#replan(ns, source);
          await this.#checkCatalog(ns);
        }
      } finally {
        this.#handlingDdl = undefined;
      }
      this.#ddl.shift();
      ddl.batch.outstanding--;
      if (ddl.rescan && names.length > 0) await this.#scanRanges();
    }
  }

  /** The namespaces a DDL event concerns (a dropped database: every verified one of it, on either cluster). */
  async #namespacesOf(ddl: DdlTouch): Promise<Namespace[]> {
    const named = ddl.namespaces.filter((ns): ns is Namespace => ns.coll !== undefined);
    const databases = ddl.namespaces.filter((ns) => ns.coll === undefined).map((ns) => ns.db);
    if (databases.length === 0) return named;
    const known = (await this.#partitions.list())
      .filter((row) => databases.includes(row.db))
      .map((row) => ({ db: row.db, coll: row.coll }));
    const unique = new Map([...named, ...known].map((ns) => [namespaceOf(ns), ns]));
    return [...unique.values()];
  }

  /** Plans a namespace's ranges again (it was created, dropped or renamed): it is scanned again. */
  async #replan(ns: Namespace, client: MongoClient): Promise<void> {
    const { source, settings, logger } = this.#context;
    const entry = (
      await selectedNamespaces(source.client, {
        selectsDatabase: (db) => db === ns.db,
        selects: (db, coll) => db === ns.db && coll === ns.coll,
      })
    ).get(namespaceOf(ns));
    const plan =
      entry?.type === 'collection'
        ? await unlessGone(planCollectionCopy(client.db(ns.db).collection(ns.coll), entry.options, settings.partitionBytes), undefined)
        : undefined;
    if (plan === undefined) {
      await this.#partitions.forget(ns);
    } else {
      await this.#partitions.writePlan(ns, plan.partitions);
      await this.#state.reopenInitialHashing();
    }
    this.#record = (await this.#state.read())!;
    await this.#refreshFigures();
    logger.info({ ns: namespaceOf(ns) }, `Verification: ${namespaceOf(ns)} changed on the source; it is scanned again`);
  }

  /** Every `checkpointIntervalMs`: the applied position and the commit read, long waits written out, stream positions recorded. */
  async #checkpointLoop(): Promise<void> {
    const { settings } = this.#context;
    const verification = settings.verification;
    while (!this.#ending) {
      await this.#pause(verification.checkpointIntervalMs);
      const applied = (await new ChangeStreamCheckpoints(this.#context.store).read())?.appliedThrough;
      if (timeAfter(applied, this.#applied)) {
        this.#applied = applied;
        this.#queue.wakeAll();
      }
      await this.#readCommit();
      await this.#queue.spill(verification.pinMs);
      await this.#saveStreams();
      await this.#refreshFigures();
      if (this.#record?.completedAt !== undefined) return;
    }
    await this.#saveStreams(true);
  }

  /** Records each stream's savable position, every `STREAM_RECORD_INTERVAL_MS` at most unless `now`. */
  async #saveStreams(now = false): Promise<void> {
    for (const side of ['source', 'destination'] as const) {
      if (!now && Date.now() - this.#streamsRecordedAt[side] < STREAM_RECORD_INTERVAL_MS) continue;
      const point = this.#queue.savablePoint(side);
      // An idle stream's replies repeat their token: each would be a write of the recorded one.
      if (point === undefined || sameResumeToken(point.resumeToken, this.#record?.[side]?.resumeToken)) continue;
      await this.#state.saveStream(side, point);
      this.#streamsRecordedAt[side] = Date.now();
      if (this.#record !== undefined) this.#record[side] = point;
    }
  }

  async #refreshFigures(): Promise<void> {
    const [summary, pending] = await Promise.all([this.#partitions.summary(), this.#rechecks.count(), this.#refreshMismatches()]);
    const figures = this.#figures;
    figures.ranges = { total: summary.total, done: summary.done };
    // Every collection has at least one range, so the table counts them, a DDL's rescan included.
    figures.collections = { total: this.#record?.planned === true ? summary.collections : 0, scanned: summary.scannedCollections };
    figures.hashed = { source: summary.source.documents, destination: summary.destination.documents };
    figures.pending = pending + this.#queue.size;
    figures.notVerified = this.#record?.notVerified ?? figures.notVerified;
  }

  /** The count and first few differences, read from their records (never counted in memory: concurrent parts would drift). */
  async #refreshMismatches(): Promise<void> {
    const read = ++this.#mismatchReads.started;
    const [count, first] = await Promise.all([this.#mismatches.count(), this.#mismatches.list(0, WARNED_MISMATCHES)]);
    if (read < this.#mismatchReads.shown) return;
    this.#mismatchReads.shown = read;
    this.#figures.mismatchCount = count;
    this.#figures.mismatches = first;
  }
}
