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
 * 3. for a reversible sync, the way back is recorded on both clusters (src/meta/way-back.ts: the
 *    destination's time just before its user writes are allowed, and each side's write blocking);
 * 4. the destination's write blocking is lifted, the record says completed, and the sync's resume
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
import { blocksDestination, blocksSource } from '../domain/start-request.js';
import { describeTime } from '../domain/time.js';
import { MetadataMissing } from '../errors/errors.js';
import { NamespaceRecords } from '../meta/namespaces.js';
import { ResumeStore, reversalsOf } from '../meta/resume.js';
import { MetadataStore } from '../meta/store.js';
import { WayBackRecord, type WayBackDocument } from '../meta/way-back.js';
import type { CommitContext, CommitPhase, PhaseOutcome, PhaseStatus } from '../phase/contract.js';
import { CommitRecord } from '../meta/commit.js';
import { RetryUntilDone } from '../phase/retry-until-done.js';
import { describeFailure, planRestore, runRestore, type RestoreFailure } from './restore.js';

export class Commit implements CommitPhase {
  readonly name = 'commit';
  readonly #context: CommitContext;
  readonly #record: CommitRecord;
  readonly #tries: RetryUntilDone;
  /** Every event through the commit point is applied: nothing lags any more. */
  #appliedThrough = false;
  #running: Promise<PhaseOutcome> | undefined;

  constructor(context: CommitContext) {
    this.#context = context;
    this.#record = new CommitRecord(context.store);
    this.#tries = new RetryUntilDone('commit', context.settings.commit.retryIntervalMs, context.logger);
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
    this.#tries.stop();
    await this.#running?.catch(() => undefined);
  }

  status(): PhaseStatus {
    const status: PhaseStatus = { warnings: this.#tries.warnings() };
    if (this.#appliedThrough) status.figures = { lag: { overallSeconds: 0, crudSeconds: 0, ddlSeconds: 0 } };
    return status;
  }

  /** Tries until the commit completes (`done`) or Ferry stops (`stopped`). */
  async #finish(): Promise<PhaseOutcome> {
    const { changeApplication, logger } = this.#context;
    const outcome = await this.#tries.run(
      async () => (await this.#finishOnce()).map(describeFailure),
      () => changeApplication.retire(),
    );
    if (outcome === 'done') logger.info('Commit completed: the destination is complete and writable');
    return outcome;
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
      if (request.reversible) await this.#recordWayBack();
      await setUserWriteBlocking(destination.client, false);
      logger.info('Commit: user writes on the destination are allowed again');
    }
    await this.#record.mark('completedAt');
    await new ResumeStore(store).setState('COMMITTED');
    return [];
  }

  /**
   * Records where a reverse starts, on the destination then on the source, before the
   * destination's user writes are allowed (src/meta/way-back.ts); a time recorded by an
   * interrupted earlier try is kept.
   */
  async #recordWayBack(): Promise<void> {
    const { source, destination, request, store, resume, logger } = this.#context;
    const reversals = reversalsOf(resume);
    const records = [new WayBackRecord(store), new WayBackRecord(new MetadataStore(source.client, store.instance))];
    let recorded: WayBackDocument | null = null;
    for (const record of records) recorded ??= await record.read(reversals);
    const writableAt =
      recorded?.writableAt ?? (await appendOplogNote(destination, 'user writes allowed: a reverse applies from here', store.instance));
    const userWritesBlocked = { [request.source]: true, [request.destination]: false } as WayBackDocument['userWritesBlocked'];
    for (const record of records) {
      await record.write({ reversals, source: request.source, destination: request.destination, writableAt, userWritesBlocked });
    }
    logger.info({ writableAt: describeTime(writableAt) }, 'Commit: the way back is recorded on both clusters');
  }
}
