/**
 * Reverse: from a committed reversible sync to the sync the other way (`POST /api/v1/reverse`,
 * COMMITTED → REVERSING → RUNNING). No copy is needed: both clusters were equal when the committed
 * sync's destination became writable (its commit recorded that time, `writableAt`, on both
 * clusters: src/meta/way-back.ts), so the reversed sync applies the new source's change events
 * from that time on, and its initial copy is complete from the start.
 *
 * The reversed sync's metadata lives on its own destination (the committed sync's source), like
 * every sync's: a new resume document there with `reversals` one higher than the committed sync's,
 * which is how recovery tells the sync that runs now from the one it reversed
 * (src/recovery/find-sync.ts). The committed sync's metadata stays on the other cluster untouched
 * until a later reverse makes that cluster a destination again and replaces it.
 *
 * `begin` (while the request waits; nothing is written before every check passed):
 * 1. the way back is read: the committed sync's record on its destination, or its copy on the
 *    other cluster (NotReversible when neither is there);
 * 2. the new source's oplog must still reach back to `writableAt` (ReverseHistoryLost otherwise:
 *    the writes made since the cut-over could not all be carried back);
 * 3. the reversed sync's lease on the new destination is taken (src/meta/lease.ts), the new
 *    destination's metadata of this instance (an older direction's) is cleared, and the reversed
 *    sync's resume document written: state REVERSING, T0 = `writableAt`, copy complete.
 *
 * `start` (in the background, state REVERSING), each step recorded so that a Ferry killed in
 * REVERSING finishes it when started again:
 * 1. user writes on the new destination are blocked (they are since the commit: asserted again);
 * 2. its catalog is recorded as the reversed sync's namespace records (src/plan/catalog.ts), read
 *    from the new destination itself, with the shard key of each collection sharded there: it is
 *    the new source's catalog as of `writableAt` (DDL on the new source after it arrives as change
 *    events, and is applied to these records);
 * 3. each collection is put into the temporary form a forward sync gives its destination
 *    (src/plan/temporary-forms.ts: unique indexes non-unique, TTL off, hidden ones visible, capped
 *    limits lifted), its record marked `created`; the commit of the reversed sync restores them
 *    from the new source's indexes and options, as every commit does;
 * 4. the resume document says RUNNING: the sync (src/sync/orchestrator.ts) launches the reversed
 *    sync's run and reports `reverseCompleted`.
 *
 * Several instances, one per shard of the migration's original source (src/coordination/): every
 * instance got `reverse` before any of them begins (the sync waits for that, `reverseRequested`);
 * the way back read is the coordinator's (its commit recorded it); steps 1 to 3 are the
 * coordinator's alone, which says when they are done (`reversePrepared`); each other instance
 * waits for that, then takes the coordinator's namespace records as its own (every collection
 * already in temporary form) and says RUNNING. Each instance then applies the change events of
 * the new source's shard at its position (src/coordination/membership.ts).
 * A change the destination refuses is named in progress warnings and the log, and, like any other
 * failure, tried again every `settings.commit.retryIntervalMs`: the reversed sync never applies an
 * event with a characteristic left in its final form.
 */
import { changeStreamReaches, setUserWriteBlocking } from '../cluster/commands.js';
import { onCluster } from '../cluster/errors.js';
import { clusterTopology, shardedCollections } from '../cluster/sharding.js';
import { namespaceOf } from '../domain/namespaces.js';
import { indexBuildTime } from '../domain/catalog.js';
import { nameCluster } from '../domain/clusters.js';
import { describeTime } from '../domain/time.js';
import { InvalidStateTransition, MetadataMissing, NotReversible, ReverseHistoryLost } from '../errors/errors.js';
import { NamespaceRecords } from '../meta/namespaces.js';
import { ResumeStore, reversalsOf } from '../meta/resume.js';
import { WayBackRecord, type WayBackDocument } from '../meta/way-back.js';
import { MetadataStore } from '../meta/store.js';
import type { Coordination, PhaseOutcome, PhaseStatus, ReverseContext, ReversePhase } from '../phase/contract.js';
import { RetryUntilDone } from '../phase/retry-until-done.js';
import { namespaceRecord, readSourceCatalog } from '../plan/catalog.js';
import { selectorFor } from '../plan/namespaces.js';
import { describeTemporaryFailure, planTemporaryForms, runTemporarySteps, type TemporaryStepFailure } from '../plan/temporary-forms.js';

export class Reverse implements ReversePhase {
  readonly name = 'reverse';
  readonly #context: ReverseContext;
  readonly #resume: ResumeStore;
  readonly #records: NamespaceRecords;
  readonly #tries: RetryUntilDone;
  #collections = { prepared: 0, total: 0 };
  #running: Promise<PhaseOutcome> | undefined;

  constructor(context: ReverseContext) {
    this.#context = context;
    this.#resume = new ResumeStore(context.store);
    this.#records = new NamespaceRecords(context.store);
    this.#tries = new RetryUntilDone('reverse', context.settings.commit.retryIntervalMs, context.logger);
  }

  async recover(): Promise<void> {}

  async begin(): Promise<void> {
    const { source, destination, store, reversals, request, ferryVersion, logger } = this.#context;
    const wayBack = await this.#wayBack();
    const reaches = await onCluster(
      source.endpoint,
      'opening a change stream where it became writable',
      changeStreamReaches(source.client, wayBack.writableAt),
    );
    if (!reaches) {
      throw new ReverseHistoryLost({ cluster: nameCluster(source.endpoint), time: describeTime(wayBack.writableAt) ?? '' });
    }
    const existing = await onCluster(destination.endpoint, 'reading the metadata', this.#resume.read());
    if (existing !== null && reversalsOf(existing) > reversals) {
      throw new InvalidStateTransition(
        `${nameCluster(destination.endpoint)} holds the metadata of a later direction of this sync (reversed ` +
          `${reversalsOf(existing)} times) than the committed one (${reversals}); restart Ferry to continue that one`,
      );
    }
    // Every check passed: the reversed sync's lease on its destination comes before its first write there.
    await this.#context.takeLease();
    await onCluster(destination.endpoint, 'clearing the metadata of an earlier direction', store.forgetInstance());
    await onCluster(
      destination.endpoint,
      'writing the metadata of the reversed sync',
      this.#resume.create({
        request,
        startAtOperationTime: wayBack.writableAt,
        ferryVersion,
        reversal: { state: 'REVERSING', reversals: reversals + 1, copyCompletedAt: wayBack.writableAt },
      }),
    );
    logger.info(
      { source: request.source, destination: request.destination, startAt: describeTime(wayBack.writableAt), reversals: reversals + 1 },
      `Reverse: syncing from ${request.source} to ${request.destination}, from where ${request.source} became writable`,
    );
  }

  /** The committed sync's way back: its record on its destination, or the copy on the other cluster. */
  async #wayBack(): Promise<WayBackDocument> {
    const { source, destination, committed, store, reversals, coordination } = this.#context;
    // Several instances: the coordinator's commit recorded it (read only: no lease needed).
    const [onSource, onDestination] =
      coordination === undefined
        ? [committed, store]
        : [new MetadataStore(source.client, coordination.coordinatorId), new MetadataStore(destination.client, coordination.coordinatorId)];
    const recorded =
      (await onCluster(source.endpoint, 'reading the way back', new WayBackRecord(onSource).read(reversals))) ??
      (await onCluster(destination.endpoint, 'reading the way back', new WayBackRecord(onDestination).read(reversals)));
    if (recorded === null) {
      throw new NotReversible(
        `neither cluster holds the record of where ${nameCluster(source.endpoint)} became writable (Ferry's metadata ` +
          'database was changed since the commit): without it the writes made since the cut-over cannot be carried back',
      );
    }
    return recorded;
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
    const { prepared, total } = this.#collections;
    const warnings = this.#tries.warnings();
    return {
      info: `reversing: preparing ${this.#context.request.destination} (${prepared} of ${total} collections in temporary form)`,
      readyToCommit: false,
      warnings,
      // Nothing to copy: both clusters were equal when the way back starts.
      figures: { estimatedTotalBytes: 0, estimatedCopiedBytes: 0 },
    };
  }

  /** Tries until the reversed sync can run (`done`) or Ferry stops (`stopped`). */
  async #finish(): Promise<PhaseOutcome> {
    const outcome = await this.#tries.run(async () => {
      const refused = await this.#prepareOnce();
      return refused === 'stopped' ? refused : refused.map(describeTemporaryFailure);
    });
    if (outcome === 'done') this.#context.logger.info('Reverse complete: change events are applied the other way');
    return outcome;
  }

  /** One try from the records (see the module comment): the changes the destination refused, if any. */
  async #prepareOnce(): Promise<TemporaryStepFailure[] | 'stopped'> {
    const { destination, request, logger } = this.#context;
    const doc = await this.#resume.read();
    if (doc === null) throw new MetadataMissing({ record: 'resume document' });
    if (doc.state !== 'REVERSING') return [];
    const coordination = this.#context.coordination;
    if (coordination !== undefined && !coordination.isCoordinator) return this.#followCoordinator(coordination);
    await setUserWriteBlocking(destination.client, true);
    if (!doc.catalogRecorded) {
      const catalog = await readSourceCatalog(destination.client, selectorFor(request), logger);
      const buildTime = indexBuildTime(request.buildIndexes);
      // A sharded destination's collections are sharded there already: the change events' writes need their keys.
      const sharded = (await clusterTopology(destination.client)) === 'sharded' ? await shardedCollections(destination.client) : undefined;
      // Already there and nothing to copy: only the temporary form (`created`) is left to do.
      const records = catalog.map(({ uuid: _uuid, ...ns }) => {
        const key = sharded?.get(namespaceOf(ns))?.key;
        return {
          ...namespaceRecord(ns, buildTime, request, key),
          partitioned: true,
          indexesBuilt: true,
          ...(key === undefined ? {} : { sharded: true }),
        };
      });
      await this.#records.replaceAll(records);
      await this.#resume.markCatalogRecorded();
      logger.info({ namespaces: records.length }, `Reverse: ${records.length} namespace(s) of ${request.destination} recorded`);
    }
    const records = await this.#records.list();
    this.#collections = { prepared: records.filter((record) => record.created).length, total: records.length };
    const failures: TemporaryStepFailure[] = [];
    for (const record of records.filter((r) => !r.created)) {
      if (this.#tries.stopping) return 'stopped';
      const refused = await runTemporarySteps(destination.client, await planTemporaryForms(destination.client, record));
      if (refused.length > 0) {
        failures.push(...refused);
        continue;
      }
      await this.#records.markDone(record, 'created');
      this.#collections.prepared++;
    }
    if (failures.length > 0) return failures;
    await coordination?.reach('reversePrepared');
    await this.#resume.setState('RUNNING');
    return [];
  }

  /**
   * Several instances, not the coordinator: once the coordinator prepared the destination, its
   * namespace records (every collection in temporary form) become this instance's.
   */
  async #followCoordinator(coordination: Coordination): Promise<[] | 'stopped'> {
    const { destination, logger } = this.#context;
    if ((await coordination.awaitCoordinator('reversePrepared', () => this.#tries.stopping)) === undefined) return 'stopped';
    const records = await new NamespaceRecords(new MetadataStore(destination.client, coordination.coordinatorId)).list();
    await this.#records.replaceAll(records);
    await this.#resume.markCatalogRecorded();
    this.#collections = { prepared: records.length, total: records.length };
    logger.info(
      { namespaces: records.length },
      `Reverse: the coordinator prepared ${records.length} namespace(s); this instance's records taken from it`,
    );
    await this.#resume.setState('RUNNING');
    return [];
  }
}
