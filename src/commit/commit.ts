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
 * 2. hot documents (`--hotDocIDs`, whose events were skipped) are copied from the source
 *    (hot-documents.ts), and every temporary characteristic is restored (restore.ts, `restoredAt`),
 *    unless a collection's read whole from the source was cut short by DDL after the commit point
 *    (its namespace record is `incomplete`, src/cea/resync.ts): then the commit cannot complete and says so;
 * 3. the destination is checked once more (src/guard/: nothing but Ferry changed what it owns
 *    there); for a reversible sync, the way back is recorded on both clusters
 *    (src/meta/way-back.ts: the destination's time just before its user writes are allowed, and
 *    each side's write blocking);
 * 4. the destination's write blocking is lifted (unless another instance's sync to it has not
 *    committed yet: blocking is the destination's, not one sync's), the record says completed,
 *    and the sync's resume document says COMMITTED.
 * A restore the destination refuses (duplicates that forbid a unique index) is reported by
 * namespace and index name in progress warnings and the log, and any other failure (a cluster
 * unreachable meanwhile) as a problem; either way the commit tries again every
 * `settings.commit.retryIntervalMs` (`FERRY_COMMIT_RETRY_INTERVAL_MS`), from its record, until it
 * completes: it never completes with a characteristic silently missing. An error the sync cannot
 * continue from (the catalogue's `final`: history lost, the destination changed behind Ferry's
 * back) is not retried: the commit ends with it and the sync stops (src/sync/orchestrator.ts).
 * `stop()` ends the wait (shutdown); a restart finishes the commit.
 *
 * Several instances, one per source shard (src/coordination/): `begin` only records that this
 * instance got the commit. Once every instance has, the coordinator blocks the source and takes
 * one commit point for all (`#agree`, once: a restarted coordinator finds its decision), which
 * each records as its own; each drains through it; the coordinator restores the destination once
 * every instance drained and lifts its write blocking; the others wait for that, then complete.
 */
import { appendOplogNote, setUserWriteBlocking } from '../cluster/commands.js';
import { asClusterError } from '../cluster/errors.js';
import { retryTransient } from '../cluster/retry.js';
import { clusterTopology } from '../cluster/sharding.js';
import { blocksDestination, blocksSource } from '../domain/start-request.js';
import { describeTime } from '../domain/time.js';
import { CollectionReadInterrupted, MetadataMissing } from '../errors/errors.js';
import { namespaceOf } from '../domain/namespaces.js';
import { NamespaceRecords } from '../meta/namespaces.js';
import { ResumeStore, reversalsOf } from '../meta/resume.js';
import { crossClusterFence } from '../meta/fence.js';
import { MetadataStore } from '../meta/store.js';
import { WayBackRecord, type WayBackDocument } from '../meta/way-back.js';
import type { CommitContext, CommitPhase, Coordination, PhaseOutcome, PhaseStatus } from '../phase/contract.js';
import type { Timestamp } from 'bson';
import { CommitRecord } from '../meta/commit.js';
import { RetryUntilDone } from '../phase/retry-until-done.js';
import { copyHotDocuments } from './hot-documents.js';
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
    const { source, destination, request, logger, store, coordination } = this.#context;
    if (coordination !== undefined) {
      // Several instances: this one got the commit; the common commit point is taken once every one has (#agree).
      await coordination.reach('commitRequested').catch((error: unknown) => {
        throw asClusterError(destination.endpoint, 'recording the commit request', error);
      });
      return;
    }
    const blockSource = blocksSource(request.enableUserWriteBlocking);
    // Which cluster a failure comes from: the commit point is taken on the source, recorded on the destination.
    let cluster = source.endpoint;
    let operation = 'taking the commit point';
    try {
      if (blockSource) {
        await setUserWriteBlocking(source.client, true);
        logger.info('Commit: user writes on the source are now blocked');
      }
      const commitPoint = await appendOplogNote(source, 'commit', store.instance);
      cluster = destination.endpoint;
      operation = 'recording the commit point';
      // Recording it again is harmless: the commit point of a commit not yet begun is replaced.
      await retryTransient(() => this.#record.begin(commitPoint));
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
      throw asClusterError(cluster, operation, error);
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
      async () => {
        const failures = await this.#finishOnce();
        return failures === 'stopped' ? failures : failures.map(describeFailure);
      },
      () => changeApplication.retire(),
    );
    if (outcome === 'done') logger.info('Commit completed: the destination is complete and writable');
    return outcome;
  }

  /** One try from the record (see the module comment); the restores the destination refused, if any. */
  async #finishOnce(): Promise<RestoreFailure[] | 'stopped'> {
    const { source, destination, request, logger, store, changeApplication } = this.#context;
    const coordination = this.#context.coordination;
    if (coordination !== undefined && (await this.#record.read()) === null && !(await this.#agree(coordination))) return 'stopped';
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
    if (coordination !== undefined) {
      // Restored once, by the coordinator, after every instance drained; the others wait for it.
      await coordination.reach('drained');
      const stopped = () => this.#tries.stopping;
      const waited = coordination.isCoordinator
        ? await coordination.awaitAll('drained', stopped)
        : await coordination.awaitCoordinator('restored', stopped);
      if (!waited) return 'stopped';
    }
    if (doc.restoredAt === undefined && coordination !== undefined && !coordination.isCoordinator) {
      await this.#record.mark('restoredAt');
    } else if (doc.restoredAt === undefined) {
      const records = await new NamespaceRecords(store).list();
      const incomplete = records.find((record) => record.incomplete === true);
      if (incomplete !== undefined) throw new CollectionReadInterrupted({ ns: namespaceOf(incomplete) });
      // Hot documents' events were skipped: each is copied as the source holds it now, after the commit point.
      // Several instances: every instance's (each got its own --hotDocIDs and skipped their events), once all drained.
      const hot =
        coordination === undefined
          ? (this.#context.resume.hotDocuments ?? [])
          : await new ResumeStore(store).hotDocumentsOf(coordination.members);
      const shardKeys = Object.fromEntries(
        records.flatMap((record) => (record.sharding === undefined ? [] : [[namespaceOf(record), record.sharding.key]])),
      );
      await copyHotDocuments(source.client, destination.client, hot, logger, shardKeys);
      const steps = await planRestore(destination.client, records, {
        perShard: (await clusterTopology(destination.client)) === 'sharded',
        dropPlaceholders: request.buildIndexes !== 'never',
      });
      const failures = await runRestore(destination.client, steps);
      if (failures.length > 0) return failures;
      logger.info('Commit: every temporary characteristic restored on the destination');
      await this.#record.mark('restoredAt');
    }
    // Never COMMITTED over a destination changed behind Ferry's back.
    await this.#context.checkDestination();
    if (blocksDestination(request.enableUserWriteBlocking) && coordination?.isCoordinator !== false) {
      // The other instances of this migration wait for this one's restore: their blocking is this one's to lift.
      const fellows = coordination?.members ?? [];
      const others = (await new ResumeStore(store).othersBlocking()).filter((id) => !fellows.includes(id));
      if (others.length === 0) {
        if (request.reversible) await this.#recordWayBack();
        await setUserWriteBlocking(destination.client, false);
        logger.info('Commit: user writes on the destination are allowed again');
      } else {
        logger.warn(
          { instances: others },
          `Commit: user writes on the destination stay blocked: the sync of ${others.map((id) => `"${id}"`).join(', ')} ` +
            'to it has not committed yet (its commit lifts the blocking)',
        );
      }
    }
    if (coordination?.isCoordinator === true) await coordination.reach('restored');
    await this.#record.mark('completedAt');
    await new ResumeStore(store).setState('COMMITTED');
    await coordination?.reach('committed');
    return [];
  }

  /**
   * Several instances: once every instance got the commit, the coordinator blocks the source (if
   * asked) and takes one commit point for all (once: a restarted coordinator finds its decision);
   * each instance records it as its own. False when stopped first.
   */
  async #agree(coordination: Coordination): Promise<boolean> {
    const { source, request, logger, store } = this.#context;
    const stopped = () => this.#tries.stopping;
    if (!(await coordination.awaitAll('commitRequested', stopped))) return false;
    if (coordination.isCoordinator && (await coordination.decision('commitPoint')) === undefined) {
      if (blocksSource(request.enableUserWriteBlocking)) {
        await setUserWriteBlocking(source.client, true);
        logger.info('Commit: user writes on the source are now blocked');
      }
      await coordination.reach('commitPoint', await appendOplogNote(source, 'commit', store.instance));
    }
    const decided = await coordination.awaitCoordinator('commitPoint', stopped);
    if (decided === undefined) return false;
    const commitPoint = decided.value as Timestamp;
    await retryTransient(() => this.#record.begin(commitPoint));
    logger.info({ commitPoint: describeTime(commitPoint) }, 'Commit: the common commit point of every instance recorded');
    return true;
  }

  /**
   * Records where a reverse starts, on the destination then on the source, before the
   * destination's user writes are allowed (src/meta/way-back.ts); a time recorded by an
   * interrupted earlier try is kept.
   */
  async #recordWayBack(): Promise<void> {
    const { source, destination, request, store, resume, logger } = this.#context;
    const reversals = reversalsOf(resume);
    // The copy on the source is covered by no lease there (fence.ts crossClusterFence).
    const onSource = new MetadataStore(source.client, store.instance, crossClusterFence(store.fence));
    const records = [new WayBackRecord(store), new WayBackRecord(onSource)];
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
