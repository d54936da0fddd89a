/**
 * What happens on commit, from `POST /api/v1/commit` to COMMITTED (spec §4.2, reference.md).
 *
 * `begin` (while the request waits, so a refusal changes nothing the operator can see): with
 * `sourceAndDestination` write blocking the source is blocked first, so no user write can follow
 * the commit point; then the commit point is taken on the source (an `appendOplogNote`, whose
 * `operationTime` is after every write before it) and recorded (src/meta/commit.ts). A failure
 * unblocks the source again: the sync stays RUNNING.
 *
 * `start` (in the background, state COMMITTING), each stage recorded before the next so that a
 * Ferry killed in COMMITTING finishes from where it was:
 * 1. the hand-off: change-event application (the one running, or a new one from its recorded
 *    position) applies every event through the commit point and stops (`appliedAt`);
 * 2. every temporary characteristic is restored (restore.ts, `restoredAt`);
 * 3. the destination's write blocking is lifted, the record says completed, and the sync's resume
 *    document says COMMITTED.
 * A restore the destination refuses (duplicates that forbid a unique index) is reported by
 * namespace and index name in progress warnings and the log, and any other failure (a cluster
 * unreachable meanwhile) as a problem; either way the commit tries again every
 * `settings.commit.retryIntervalMs` (`FERRY_COMMIT_RETRY_INTERVAL_MS`), from its record, until it
 * completes: it never completes with a characteristic silently missing. `stop()` ends the wait
 * (shutdown); a restart finishes the commit.
 */
import { appendOplogNote, setUserWriteBlocking } from '../cluster/commands.js';
import { asClusterError } from '../cluster/errors.js';
import { redactUris } from '../domain/credentials.js';
import { blocksDestination, blocksSource } from '../domain/start-request.js';
import { describeTime } from '../domain/time.js';
import { MetadataMissing } from '../errors/errors.js';
import { NamespaceRecords } from '../meta/namespaces.js';
import { ResumeStore } from '../meta/resume.js';
import type { CommitContext, CommitPhase, PhaseOutcome, PhaseStatus } from '../phase/contract.js';
import { CommitRecord } from '../meta/commit.js';
import { describeFailure, planRestore, runRestore, type RestoreFailure } from './restore.js';

export class Commit implements CommitPhase {
  readonly name = 'commit';
  readonly #context: CommitContext;
  readonly #record: CommitRecord;
  /** Restores the destination refused in the last try. */
  #refused: string[] = [];
  /** Why the last try failed otherwise (retried). */
  #problem: string | undefined;
  /** Every event through the commit point is applied: nothing lags any more. */
  #appliedThrough = false;
  #stopping = false;
  #wake: (() => void) | undefined;
  #running: Promise<PhaseOutcome> | undefined;

  constructor(context: CommitContext) {
    this.#context = context;
    this.#record = new CommitRecord(context.store);
  }

  async recover(): Promise<void> {
    this.#appliedThrough = (await this.#record.read())?.appliedAt !== undefined;
  }

  async begin(): Promise<void> {
    const { source, request, logger, store } = this.#context;
    const blockSource = blocksSource(request.enableUserWriteBlocking);
    try {
      if (blockSource) {
        await setUserWriteBlocking(source.client, true);
        logger.info('Commit: user writes on the source are now blocked');
      }
      const commitPoint = await appendOplogNote(source, 'commit', store.instance);
      await this.#record.begin(commitPoint);
      logger.info({ commitPoint: describeTime(commitPoint) }, 'Commit: commit point recorded');
    } catch (error) {
      // The commit did not begin (the sync stays RUNNING): the application may write to the source again.
      if (blockSource) {
        await setUserWriteBlocking(source.client, false).catch((unblockError: unknown) =>
          logger.error(
            { err: unblockError },
            'Commit did not begin, and user writes on the source could not be unblocked: run setUserWriteBlockMode {global: false} on it',
          ),
        );
      }
      throw asClusterError(source.endpoint, 'taking the commit point', error);
    }
  }

  start(): Promise<PhaseOutcome> {
    this.#running ??= this.#finish();
    return this.#running;
  }

  async stop(): Promise<void> {
    this.#stopping = true;
    this.#wake?.();
    await this.#running?.catch(() => undefined);
  }

  status(): PhaseStatus {
    const status: PhaseStatus = { warnings: this.#problem === undefined ? [...this.#refused] : [...this.#refused, this.#problem] };
    if (this.#appliedThrough) status.figures = { lag: { overallSeconds: 0, crudSeconds: 0, ddlSeconds: 0 } };
    return status;
  }

  /** Tries until the commit completes (`done`) or Ferry stops (`stopped`). */
  async #finish(): Promise<PhaseOutcome> {
    const { logger, settings } = this.#context;
    const retryMs = settings.commit.retryIntervalMs;
    for (;;) {
      try {
        const refused = await this.#finishOnce();
        this.#problem = undefined;
        this.#refused = refused.map(describeFailure);
        for (const warning of this.#refused) logger.error(warning);
        if (refused.length === 0) break;
      } catch (error) {
        if (this.#stopping) return 'stopped';
        this.#problem = `The commit could not finish yet and is retried every ${retryMs / 1000} s: ${redactUris((error as Error).message)}`;
        logger.error({ err: error }, 'The commit could not finish yet; retrying');
        await this.#context.changeApplication.retire();
      }
      await this.#pause(retryMs);
      if (this.#stopping) return 'stopped';
    }
    logger.info('Commit completed: the destination is complete and writable');
    return 'done';
  }

  /** One try from the record (see the module comment); the restores the destination refused, if any. */
  async #finishOnce(): Promise<RestoreFailure[]> {
    const { destination, source, request, logger, store, changeApplication } = this.#context;
    const doc = await this.#record.read();
    if (doc === null) throw new MetadataMissing({ record: 'commit record' });
    if (doc.appliedAt === undefined) {
      // The hand-off: application stops once everything through the commit point is applied.
      const application = await changeApplication.take();
      await application.applyThrough(doc.commitPoint);
      this.#appliedThrough = true;
      await changeApplication.retire();
      await this.#record.mark('appliedAt');
    }
    if (doc.restoredAt === undefined) {
      const steps = await planRestore(source.client, destination.client, await new NamespaceRecords(store).list());
      const failures = await runRestore(destination.client, steps);
      if (failures.length > 0) return failures;
      logger.info('Commit: every temporary characteristic restored on the destination');
      await this.#record.mark('restoredAt');
    }
    if (blocksDestination(request.enableUserWriteBlocking)) {
      await setUserWriteBlocking(destination.client, false);
      logger.info('Commit: user writes on the destination are allowed again');
    }
    await this.#record.mark('completedAt');
    await new ResumeStore(store).setState('COMMITTED');
    return [];
  }

  #pause(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(done, ms);
      function done() {
        clearTimeout(timer);
        resolve();
      }
      this.#wake = done;
    });
  }
}
