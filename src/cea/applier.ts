/**
 * Change-event application: the source's change stream, from T0 (or the recorded resume
 * token), applied to the destination until commit. It runs alongside the initial copy.
 *
 * The main thread reads the stream as raw BSON (src/cluster/change-stream.ts) and looks at each
 * event's routing fields only (`readChangeEvent`):
 * - an event outside the namespace filter, or on Ferry's metadata, is dropped (a rename counts
 *   as inside when either of its names is);
 * - a CRUD event gets the next sequence number and goes to its document's lane (document-key.ts,
 *   lanes.ts), applied in a worker thread (apply-batch.ts);
 * - a DDL event is a barrier: every lane drains, the resume token before it is recorded, the DDL
 *   is applied here (ddl.ts) and the token after it recorded, then routing continues. A DDL on a
 *   collection the initial copy has not finished (partitions left, or indexes not built yet) also
 *   waits for the copy to finish, and lag grows meanwhile: the copy writes that collection by name
 *   and builds the indexes it planned, so a rename, drop or index change under its feet would be
 *   undone. DDL on other collections is applied at once.
 *
 * Application waits for the copy's planning (which creates the collections, with their options,
 * and shards those the destination shards, before any event may create one implicitly). The
 * shard keys of the collections sharded on the destination (their namespace records) go with
 * every batch, read again after each DDL: writes through mongos carry them (write-plan.ts). When the copy is complete, at a barrier, the
 * deletes applied during it are checked again (tombstones.ts), and that moment's source time is
 * recorded: renames older than it may have raced the copy and re-read their collection.
 * `caughtUpTo` tells another phase when events through a source time are applied (an index build
 * after the copy waits for it: src/plan/index-builds.ts).
 *
 * Several instances, one per source shard (src/coordination/): each applies its own shard's
 * stream, and publishes how far it has applied it. Two kinds of event wait, after draining the
 * lanes, until every other instance has applied its shard's events earlier than theirs
 * (`awaitAppliedBefore`):
 * - an insert that may be the arriving half of a cross-shard move (shard-key-change.ts): the other
 *   shard's events of the document, from before it left, are then all on the destination, and
 *   none can overwrite the moved version afterwards (its delete half, keyed by the old shard key,
 *   leaves the new version alone: write-plan.ts). Without it, a lagging instance's older update of
 *   the document replaces the new version (by `_id`), and its delete then removes it: lost;
 * - a DDL event: a mongos-driven DDL on a sharded collection is reported by the database's primary
 *   shard alone (the others' parts are `fromMigrate`), so the instance of that shard applies it
 *   for all, but only once no other instance still has earlier writes to the collection to
 *   apply (a drop applied before them would be undone by their inserts, a rename would leave them
 *   under the old name). The other way round, an instance's event that names a collection as a
 *   DDL not yet applied leaves it (a rename's new name, a collection created again) waits until
 *   that DDL is on the destination (namespace-uuids.ts): written first, the DDL would overwrite it.
 *
 * The resume token recorded (src/meta/change-stream.ts) is always one up to which everything is durably
 * applied: the lanes' watermark, at reader-batch granularity (each batch's
 * `postBatchResumeToken`), at most once per interval, at each barrier, and when stopping. A
 * restart resumes after it; events applied again are harmless (write-plan.ts). Only CRUD events
 * are ever applied twice: a DDL always has the token before it recorded first.
 */
import { performance } from 'node:perf_hooks';
import type { Document, Timestamp } from 'bson';
import { BsonType, decodeDocument, decodeValue, findElement, readChangeEvent, type ChangeEventFields } from '../bson/index.js';
import { NamespaceRecords } from '../meta/namespaces.js';
import { PartitionTable } from '../meta/partitions.js';
import { ApplyPool } from './apply-pool.js';
import { ChangeStreamReader } from '../cluster/change-stream.js';
import { ChangeStreamCheckpoints, type StreamPosition } from '../meta/change-stream.js';
import { documentKeyOf, hotDocumentKeys, idKey, laneOf } from './document-key.js';
import { DdlApplier, isDdlOperation } from './ddl.js';
import { isCrudOperation } from './crud-event.js';
import { mayArriveFromAnotherShard } from './shard-key-change.js';
import { NamespaceUuids } from './namespace-uuids.js';
import { sameResumeToken } from '../cluster/resume-token.js';
import { sleep } from '../cluster/retry.js';
import { LagTracker } from './lag.js';
import { OplogWatch } from './oplog-window.js';
import { Lanes, type LaneBatch } from './lanes.js';
import { sweepTombstones } from './tombstones.js';
import { namespaceOf } from '../domain/namespaces.js';
import type { SyncPhase } from '../domain/states.js';
import { notAfter, describeTime, timeAfter } from '../domain/time.js';
import { ApplicationStopped, ChangeStreamHistoryLost, UnexpectedChangeEvent } from '../errors/errors.js';
import type { CeaSettings, SyncSettings } from '../config/settings.js';
import { COMMIT_LAG_LIMIT_SECONDS } from '../domain/constants.js';
import type { ChangeApplication, PhaseOutcome, PhaseStatus, SyncContext } from '../phase/contract.js';
import { selectorFor, type NamespaceSelector } from '../plan/namespaces.js';
import { appendOplogNote } from '../cluster/commands.js';
import type { ShardKeyPattern } from '../cluster/shard-key.js';

/** A point of the stream reached once the lanes' watermark passes `seq`. */
interface Candidate {
  seq: number;
  position: StreamPosition;
  /** Wall time of the batch's last event (for the lag histogram). */
  wallTimeMs?: number;
}

/** Stopping was asked while waiting at a barrier. */
class Stopped extends Error {}

const ID = '_id';
/** How often a write held for another instance's DDL looks at the namespace records again (ms). */
const COORDINATION_POLL_MS = 500;

export class ChangeEventApplier implements ChangeApplication {
  readonly name = 'change event application';
  readonly #context: SyncContext;
  #settings: CeaSettings;
  /** Live settings handed over (SIGHUP), applied between two reader batches. */
  #retune: CeaSettings | undefined;
  /** A lane batch in flight longer than this is reported (ms). */
  readonly #stallMs: number;
  #pool: ApplyPool | undefined;
  readonly #oplog: OplogWatch;
  readonly #selector: NamespaceSelector;
  readonly #checkpoints: ChangeStreamCheckpoints;
  readonly #ddl: DdlApplier;
  readonly #records: NamespaceRecords;
  readonly #partitions: PartitionTable;
  readonly #lag: LagTracker;
  #phase: SyncPhase;
  /** Woken on a phase change or a stop. */
  #waiters: (() => void)[] = [];
  #running: Promise<PhaseOutcome> | undefined;
  #stopping = false;
  #lanes: Lanes | undefined;
  #copyCompletedAt: Timestamp | undefined;
  #seq = 0;
  #candidates: Candidate[] = [];
  /** Everything up to here is applied (the latest candidate passed, or a barrier). */
  #applied: StreamPosition | undefined;
  #saved: StreamPosition | undefined;
  #saving: Promise<void> = Promise.resolve();
  #eventsApplied = 0;
  #historyLost = false;
  /** Why application stopped, if it failed. */
  #failure: Error | undefined;
  #target: { time: Timestamp; reached: boolean } | undefined;
  #warnedTypes = new Set<string>();
  /** Hot documents (`--hotDocIDs`): their events are skipped, the commit copies them. */
  readonly #hot: Set<string>;
  #hotEventsSkipped = 0;
  /** Shard keys of the collections sharded on the destination, by `db.coll` (undefined: none is). */
  #shardKeys: Record<string, ShardKeyPattern> | undefined;
  /** Those waiting for events through a source time to be applied (`caughtUpTo`). */
  #catchUps: { time: Timestamp; resolve: (reached: boolean) => void }[] = [];
  /** Waiting at a DDL barrier for the initial copy: every event before it is applied. */
  #waitingForCopy = false;
  /** Several instances: which collection each name holds after the DDL applied so far (namespace-uuids.ts). */
  readonly #uuids: NamespaceUuids | undefined;
  /** The namespace whose event waits for another instance's DDL, for progress. */
  #waitingForDdlOf: string | undefined;

  constructor(context: SyncContext) {
    this.#context = context;
    this.#hot = hotDocumentKeys(context.resume.hotDocuments ?? []);
    this.#settings = context.settings.cea;
    this.#stallMs = context.settings.laneStallSeconds * 1000;
    this.#oplog = new OplogWatch(
      context.source.client,
      context.settings.oplogCheckIntervalMs,
      () => this.#lag.appliedTime ?? context.resume.startAtOperationTime,
      context.logger,
    );
    // A getMore answers within maxAwaitMs; longer silence (and some slack) means the source is not being heard.
    this.#lag = new LagTracker({ staleAfterSeconds: this.#settings.maxAwaitMs / 1000 + 2 });
    this.#selector = selectorFor(context.request);
    this.#phase = context.syncPhase();
    this.#checkpoints = new ChangeStreamCheckpoints(context.store);
    this.#records = new NamespaceRecords(context.store);
    if (context.coordination !== undefined) this.#uuids = new NamespaceUuids(() => this.#records.everyInstance());
    this.#partitions = new PartitionTable(context.store);
    this.#ddl = new DdlApplier({
      source: context.source.client,
      destination: context.destination.client,
      records: this.#records,
      request: context.request,
      selector: this.#selector,
      logger: context.logger,
    });
  }

  /** Nothing to read ahead: the stream position is read when application starts. */
  async recover(): Promise<void> {}

  /**
   * Applies from T0 or the recorded position until stopped (`stopped`) or past the commit point
   * asked by `applyThrough` (`done`); rejects with what stopped it otherwise.
   */
  start(): Promise<PhaseOutcome> {
    this.#oplog.start();
    this.#running ??= this.#run()
      .finally(() => {
        this.#oplog.stop();
        for (const { resolve } of this.#catchUps.splice(0)) resolve(false);
      })
      .then(
        (): PhaseOutcome => (this.#target?.reached === true ? 'done' : 'stopped'),
        (error: unknown): PhaseOutcome => {
          this.#failed(error as Error);
          if (error instanceof Stopped || this.#stopping) return 'stopped';
          throw error;
        },
      );
    return this.#running;
  }

  async stop(): Promise<void> {
    this.#stopping = true;
    this.#oplog.stop();
    for (const wake of this.#waiters.splice(0)) wake();
    await this.#running?.catch(() => undefined);
  }

  onSettings(settings: SyncSettings): void {
    this.#retune = settings.cea;
  }

  onSyncPhase(phase: SyncPhase): void {
    this.#phase = phase;
    for (const wake of this.#waiters.splice(0)) wake();
  }

  async applyThrough(time: Timestamp): Promise<void> {
    this.#target = { time, reached: false };
    await this.#running?.catch(() => undefined);
    if (this.#failure !== undefined) throw this.#failure;
    if (!this.#target.reached) throw new ApplicationStopped();
  }

  caughtUpTo(time: Timestamp): Promise<boolean> {
    if (this.#running === undefined || this.#stopping || this.#failure !== undefined) return Promise.resolve(false);
    return new Promise((resolve) => {
      this.#catchUps.push({ time, resolve });
      this.#settleCatchUps();
    });
  }

  /** Tells those waiting for a source time that application has reached it (or waits for the copy). */
  #settleCatchUps(): void {
    const applied = this.#applied?.time;
    this.#catchUps = this.#catchUps.filter(({ time, resolve }) => {
      const reached = this.#waitingForCopy || notAfter(time, applied);
      if (reached) resolve(true);
      return !reached;
    });
  }

  status(): PhaseStatus {
    const outage = this.#context.clusterOutageSince();
    const lag = this.#lag.lag(Date.now() / 1000, outage === undefined ? undefined : outage.getTime() / 1000);
    const status: PhaseStatus = {
      counters: { appliedEvents: this.#eventsApplied },
      readyToCommit:
        this.#running !== undefined &&
        !this.#stopping &&
        this.#failure === undefined &&
        // Once the copy is complete no DDL waits for it, so a barrier is brief: lag says the rest.
        this.#copyCompletedAt !== undefined &&
        // Commit only on a measured lag, never on the clock's estimate before the stream answers.
        this.#lag.measured &&
        lag !== undefined &&
        lag.overallSeconds <= COMMIT_LAG_LIMIT_SECONDS,
    };
    status.figures = lag === undefined ? {} : { lag };
    const running = this.#running !== undefined && !this.#stopping && this.#failure === undefined;
    const seconds = this.#oplog.secondsRemaining;
    if (running) status.figures.oplogTimeRemaining = seconds === undefined ? {} : { seconds };
    const oplogShort = running ? this.#oplog.warning : undefined;
    // What to do is the sync's warning (the failure it stopped on); here only what is happening.
    if (this.#historyLost) status.info = 'change event application stopped: the source change stream history was lost';
    else if (this.#phase === 'copied') status.info = 'change event application';
    const stalled = this.#stalledLanes();
    const more = [...(oplogShort === undefined ? [] : [oplogShort]), ...stalled];
    if (this.#waitingForDdlOf !== undefined) {
      more.push(
        `A write to ${this.#waitingForDdlOf} waits for the instance of the database's primary shard to apply the DDL before it ` +
          '(a rename onto that name, or its drop and creation again)',
      );
    }
    if (more.length > 0) status.warnings = [...(status.warnings ?? []), ...more];
    return status;
  }

  /** A warning per lane whose batch has been in flight longer than the stall threshold. */
  #stalledLanes(): string[] {
    const lanes = this.#lanes;
    if (lanes === undefined || this.#stopping) return [];
    const now = Date.now();
    return lanes
      .stalled(now - this.#stallMs)
      .map(
        ({ lane, since, events }) =>
          `Change-event lane ${lane} has had a batch of ${events} event(s) in flight for ${Math.floor((now - since) / 1000)} s: ` +
          'the destination is slow to apply it or is not answering (lag grows meanwhile; see its logs and ferry_apply_latency_seconds)',
      );
  }

  #failed(error: Error): void {
    if (error instanceof Stopped) return;
    this.#failure = error;
    if (error instanceof ChangeStreamHistoryLost) this.#historyLost = true;
    this.#context.logger.error({ err: error }, `Change-event application stopped: ${error.message}`);
  }

  /** Resolves when `ready()` holds, or throws `Stopped` when stopping is asked first. */
  async #until(ready: () => boolean): Promise<void> {
    while (!ready()) {
      if (this.#stopping) throw new Stopped();
      await new Promise<void>((resolve) => this.#waiters.push(resolve));
    }
    if (this.#stopping) throw new Stopped();
  }

  async #run(): Promise<void> {
    const context = this.#context;
    // The copy's planning creates the collections with their options first.
    await this.#until(() => this.#phase !== 'planning');
    const recorded = await this.#checkpoints.read();
    // A reversed sync begins with its copy complete (src/reverse/): nothing to wait for, no tombstones.
    this.#copyCompletedAt = recorded?.copyCompletedAt ?? context.resume.copyCompletedAt;
    await this.#readShardKeys();
    await this.#uuids?.refresh();
    if (recorded?.resumeToken !== undefined) {
      this.#applied = {
        resumeToken: recorded.resumeToken,
        ...(recorded.appliedThrough === undefined ? {} : { time: recorded.appliedThrough }),
      };
      this.#saved = this.#applied;
    }
    this.#lag.applied(recorded?.appliedThrough ?? context.resume.startAtOperationTime);
    const lanes = this.#newLanes();
    const reader = new ChangeStreamReader({
      // Several instances: each applies the events its own shard produced, read on the shard.
      client: context.coordination?.shard.cluster.client ?? context.source.client,
      updateLookup: true,
      start:
        this.#applied !== undefined
          ? { startAfter: this.#applied.resumeToken }
          : { startAtOperationTime: context.resume.startAtOperationTime },
      batchSize: this.#settings.readBatchSize,
      maxAwaitMs: this.#settings.maxAwaitMs,
      logger: context.logger,
    });
    context.logger.info(
      {
        resumeAfter: describeTime(this.#applied?.time),
        startAt: this.#applied === undefined ? describeTime(context.resume.startAtOperationTime) : undefined,
        lanes: this.#settings.applyLanes,
      },
      this.#applied === undefined
        ? 'Change-event application starting at the start time T0'
        : 'Change-event application resuming after its recorded position',
    );
    const timer = setInterval(() => void this.#checkpoint().catch(() => undefined), this.#settings.checkpointIntervalMs);
    timer.unref();
    let failure: unknown;
    try {
      await this.#loop(reader);
    } catch (error) {
      failure = error;
    } finally {
      clearInterval(timer);
      const last = this.#lanes ?? lanes;
      try {
        if (last.failure === undefined) {
          await last.drain();
          this.#advance();
          await this.#checkpoint();
        }
      } catch (error) {
        failure ??= error;
      }
      // A lane batch that failed after the last add/drain (the source went quiet, or the commit
      // point came first) reports here: the run never ends as if every event were applied.
      failure ??= last.failure;
      await reader.close();
      await this.#pool?.destroy();
    }
    if (failure !== undefined) throw failure;
  }

  /** Lanes (and the thread pool applying their batches) for the current settings. */
  #newLanes(): Lanes {
    const settings = this.#settings;
    const pool = new ApplyPool({
      sourceUri: this.#context.source.endpoint.uri,
      destinationUri: this.#context.destination.endpoint.uri,
      instance: this.#context.store.instance,
      lanes: settings.applyLanes,
    });
    this.#pool = pool;
    const lanes = new Lanes({
      lanes: settings.applyLanes,
      maxBatchEvents: settings.maxBatchEvents,
      maxBatchBytes: settings.maxBatchBytes,
      maxPendingBytes: settings.maxPendingBytes,
      apply: (batch) => this.#applyBatch(pool, batch),
    });
    this.#lanes = lanes;
    return lanes;
  }

  /**
   * Applies live settings handed over since the last batch: batch bounds at once; another number
   * of lanes once every lane is drained (an event's lane is a hash modulo their number, so a
   * document's events never straddle two lane layouts).
   */
  async #applyRetune(lanes: Lanes): Promise<Lanes> {
    const next = this.#retune;
    if (next === undefined) return lanes;
    this.#retune = undefined;
    const previous = this.#settings;
    this.#settings = { ...next, checkpointIntervalMs: previous.checkpointIntervalMs };
    lanes.setBatchLimits(next);
    if (next.applyLanes === lanes.count) return lanes;
    await lanes.drain();
    this.#advance();
    await this.#pool?.destroy();
    const rebuilt = this.#newLanes();
    rebuilt.skipTo(lanes.lastSeq);
    this.#context.logger.info({ from: lanes.count, to: rebuilt.count }, `Change events now applied in ${rebuilt.count} lane(s)`);
    return rebuilt;
  }

  async #loop(reader: ChangeStreamReader): Promise<void> {
    let lanes = this.#lanes!;
    while (!this.#stopping) {
      lanes = await this.#applyRetune(lanes);
      // A failed lane batch stops application now, even when no event follows to be refused.
      if (lanes.failure !== undefined) throw lanes.failure;
      if (this.#phase === 'copied' && this.#copyCompletedAt === undefined) await this.#completeCopy(lanes);
      const batch = await reader.next(this.#awaitMs());
      this.#lag.observeSource(batch.sourceTime);
      const start = this.#candidates.at(-1)?.position ?? this.#applied;
      let previous: ChangeEventFields | undefined;
      // The stream position just before the current event (decoded only when a barrier needs it).
      const before = (): StreamPosition | undefined =>
        previous === undefined
          ? start
          : { resumeToken: previous.resumeToken, ...(previous.clusterTime === undefined ? {} : { time: previous.clusterTime }) };
      for (const bytes of batch.events) {
        const fields = readChangeEvent(bytes);
        await this.#route(bytes, fields, before, lanes);
        previous = fields;
      }
      const candidate: Candidate = {
        seq: this.#seq,
        position: { resumeToken: batch.postBatchResumeToken, ...(batch.resumeTime === undefined ? {} : { time: batch.resumeTime }) },
      };
      const last = batch.events.at(-1);
      const wallTime = last === undefined ? undefined : findElement(last, 'wallTime');
      if (wallTime !== undefined && wallTime.type === BsonType.date)
        candidate.wallTimeMs = Number(new DataView(last!.buffer, last!.byteOffset + wallTime.valueOffset, 8).getBigInt64(0, true));
      this.#candidates.push(candidate);
      this.#advance();
      this.#lag.caughtUp = batch.events.length === 0 && lanes.idle;
      if (this.#target !== undefined && batch.resumeTime !== undefined && !timeAfter(this.#target.time, batch.resumeTime)) {
        this.#target.reached = true;
        this.#context.logger.info({ commitPoint: describeTime(this.#target.time) }, 'Change events applied up to the commit point');
        return;
      }
    }
  }

  /**
   * How long the next `getMore` may wait for events: short until the initial copy is complete
   * (its index builds and its completion each wait for application to pass an oplog note, and the
   * getMore already on its way when they start is the one they wait for) and while another phase
   * waits for a source time (the commit point); long otherwise, through the wait for the commit.
   */
  #awaitMs(): number {
    const waitedOn =
      this.#copyCompletedAt === undefined || this.#catchUps.length > 0 || (this.#target !== undefined && !this.#target.reached);
    return waitedOn ? this.#settings.promptAwaitMs : this.#settings.maxAwaitMs;
  }

  /** Decides what one event is and sends it on (see the module comment). */
  async #route(bytes: Uint8Array, fields: ChangeEventFields, before: () => StreamPosition | undefined, lanes: Lanes): Promise<void> {
    const selector = this.#selector;
    const type = fields.operationType;
    if (isCrudOperation(type)) {
      const ns = fields.ns;
      if (ns?.coll === undefined || !selector.selects(ns.db, ns.coll)) return;
      const key = fields.documentKeyBytes;
      if (key === undefined) throw new UnexpectedChangeEvent(`a ${type} event on ${ns.db}.${ns.coll} has no documentKey`);
      const id = findElement(key, ID);
      if (id === undefined) throw new UnexpectedChangeEvent(`a ${type} event on ${ns.db}.${ns.coll} has no documentKey._id`);
      const keyText = idKey(key, id);
      if (this.#hot.size > 0 && this.#hot.has(documentKeyOf(ns.db, ns.coll, keyText))) {
        // A hot document: the commit copies it from the source (src/domain/hot-documents.ts).
        if (this.#hotEventsSkipped++ === 0) {
          this.#context.logger.info({ ns: `${ns.db}.${ns.coll}` }, 'Change events of hot documents are skipped from here on (--hotDocIDs)');
        }
        return;
      }
      await this.#awaitDdlOfOtherShard(bytes, `${ns.db}.${ns.coll}`, fields.clusterTime, lanes);
      if (type === 'insert' && this.#context.coordination !== undefined && mayArriveFromAnotherShard(bytes, key)) {
        // Perhaps a document moved here from another shard: its earlier events there go first (module comment).
        await lanes.drain();
        this.#advance();
        await this.#awaitOtherShards(fields.clusterTime, `An insert into ${ns.db}.${ns.coll} in a transaction (maybe a cross-shard move)`);
      }
      const lane = laneOf(`${ns.db}.${ns.coll}`, keyText, lanes.count);
      this.#seq++;
      await lanes.add(lane, bytes, this.#seq);
      return;
    }
    if (isDdlOperation(type)) {
      const ns = fields.ns;
      const concerned =
        ns !== undefined &&
        (type === 'dropDatabase'
          ? selector.selectsDatabase(ns.db)
          : (ns.coll !== undefined && selector.selects(ns.db, ns.coll)) ||
            (type === 'rename' && fields.to?.coll !== undefined && selector.selects(fields.to.db, fields.to.coll)));
      if (concerned) await this.#barrier(bytes, fields, before, lanes);
      return;
    }
    if (type === 'invalidate') throw new UnexpectedChangeEvent('the change stream was invalidated; a cluster-wide stream should never be');
    if (!this.#warnedTypes.has(type)) {
      this.#warnedTypes.add(type);
      this.#context.logger.warn(
        { operationType: type },
        `Change events of type ${type} are not applied (nothing on the destination depends on them)`,
      );
    }
  }

  /** A DDL event: drain, record the position before it, (wait for the copy,) apply it, record after it. */
  async #barrier(
    bytes: Uint8Array,
    fields: ChangeEventFields,
    positionBefore: () => StreamPosition | undefined,
    lanes: Lanes,
  ): Promise<void> {
    this.#lag.waitingDdl = fields.clusterTime;
    try {
      await lanes.drain();
      this.#advance();
      const before = positionBefore();
      if (before !== undefined) await this.#record(before);
      // The other shards' earlier writes to what it changes go first (module comment).
      await this.#awaitOtherShards(fields.clusterTime, `${fields.operationType} of ${describeNames(fields)}`);
      if (this.#copyCompletedAt === undefined && (await this.#touchesUnfinishedCopy(fields))) {
        this.#context.logger.info(
          { operationType: fields.operationType, ns: fields.ns, to: fields.to },
          'A DDL event on a collection the initial copy has not finished waits for the copy',
        );
        this.#waitingForCopy = true;
        this.#settleCatchUps();
        try {
          await this.#until(() => this.#phase === 'copied');
        } finally {
          this.#waitingForCopy = false;
        }
        await this.#completeCopy(lanes);
      }
      const event = decodeDocument(bytes);
      // Older than the copy's completion (or the copy still runs): a rename may have raced it.
      const duringCopy = this.#copyCompletedAt === undefined || notAfter(fields.clusterTime, this.#copyCompletedAt);
      this.#context.logger.info(
        { operationType: fields.operationType, ns: fields.ns, to: fields.to, duringCopy },
        `Applying ${fields.operationType}`,
      );
      // Ferry's own change to the destination's catalog: the destination's check must not take it for someone else's.
      const named = [fields.ns, fields.to].filter((name) => name !== undefined);
      await this.#context.changingCatalog(named, () => this.#ddl.apply(event, duringCopy));
      await this.#readShardKeys();
      await this.#uuids?.refresh();
      this.#eventsApplied++;
      await this.#record({ resumeToken: event._id as Document, ...(fields.clusterTime === undefined ? {} : { time: fields.clusterTime }) });
    } finally {
      this.#lag.waitingDdl = undefined;
    }
  }

  /**
   * Several instances: waits until every other one applied its shard's events earlier than `time`
   * (this instance applied all of its own before the event: lanes drained). Nothing to wait for alone.
   */
  async #awaitOtherShards(time: Timestamp | undefined, why: string): Promise<void> {
    const coordination = this.#context.coordination;
    if (coordination === undefined || time === undefined) return;
    if (!(await coordination.awaitAppliedBefore(time, why, () => this.#stopping))) throw new Stopped();
  }

  /**
   * Several instances: holds a CRUD event that names its collection as another instance's DDL,
   * not applied yet, leaves it (module comment; namespace-uuids.ts). Every event before it is
   * applied first and the watermark says so, so that instance's DDL barrier can go on.
   */
  async #awaitDdlOfOtherShard(bytes: Uint8Array, namespace: string, time: Timestamp | undefined, lanes: Lanes): Promise<void> {
    const uuids = this.#uuids;
    const element = uuids === undefined ? undefined : findElement(bytes, 'collectionUUID');
    if (uuids === undefined || element === undefined) return;
    const uuid = decodeValue(bytes, element);
    if (!uuids.pending(namespace, uuid)) return;
    await uuids.refresh();
    if (!uuids.pending(namespace, uuid)) return;
    await lanes.drain();
    this.#advance();
    this.#context.coordination?.noteAppliedBefore(time);
    this.#context.logger.info({ ns: namespace }, 'A write waits for the DDL another instance applies before it');
    this.#waitingForDdlOf = namespace;
    try {
      while (uuids.pending(namespace, uuid)) {
        if (this.#stopping) throw new Stopped();
        await sleep(COORDINATION_POLL_MS);
        await uuids.refresh();
      }
    } finally {
      this.#waitingForDdlOf = undefined;
    }
    // The DDL may have sharded the name on the destination (lanes drained: no batch uses the old keys).
    await this.#readShardKeys();
  }

  /** Whether a DDL event names a collection whose initial copy (partitions or index builds) is unfinished. */
  async #touchesUnfinishedCopy(fields: ChangeEventFields): Promise<boolean> {
    if (this.#phase === 'copied') return false;
    const [records, unfinished] = await Promise.all([this.#records.list(), this.#partitions.unfinished()]);
    const partitionsLeft = new Set(unfinished.map((row) => row.key.ns));
    const busy = records.filter((record) => !record.indexesBuilt || partitionsLeft.has(namespaceOf(record)));
    const { ns, to } = fields;
    if (ns === undefined) return false;
    if (fields.operationType === 'dropDatabase') return busy.some((record) => record.db === ns.db);
    const named = [ns, ...(to === undefined ? [] : [to])];
    return named.some((name) => busy.some((record) => record.db === name.db && record.coll === name.coll));
  }

  /** The copy is complete: sweep its tombstones and note the source time (lanes drained first). */
  async #completeCopy(lanes: Lanes): Promise<void> {
    await lanes.drain();
    this.#advance();
    const { source, destination, store, logger } = this.#context;
    await sweepTombstones(source.client, destination.client, store, logger, this.#shardKeys);
    const at = await appendOplogNote(source, 'initial copy complete', store.instance);
    await this.#checkpoints.markCopyCompleted(at);
    this.#copyCompletedAt = at;
    logger.info({ at: describeTime(at) }, 'Initial copy complete: change events are now applied without waiting for it');
  }

  async #applyBatch(pool: ApplyPool, batch: LaneBatch): Promise<void> {
    // No write to the destination from an instance whose lease may have passed to another (src/meta/lease.ts).
    await this.#context.store.fence.ensure();
    const started = performance.now();
    const outcome = await pool.run({
      events: batch.events,
      recordTombstones: this.#copyCompletedAt === undefined,
      ...(this.#shardKeys === undefined ? {} : { shardKeys: this.#shardKeys }),
    });
    this.#context.histograms.record('applyLatencyMs', performance.now() - started);
    this.#eventsApplied += outcome.events;
    this.#advance();
  }

  /** The shard keys the namespace records give (lanes drained: no batch in flight uses the old ones). */
  async #readShardKeys(): Promise<void> {
    const keys: Record<string, ShardKeyPattern> = {};
    // Several instances: a DDL another instance applied (a rename, a collection sharded again) is in its records only.
    const records = this.#context.coordination === undefined ? await this.#records.list() : await this.#records.listEveryInstance();
    for (const record of records) if (record.sharding !== undefined) keys[namespaceOf(record)] = record.sharding.key;
    this.#shardKeys = Object.keys(keys).length === 0 ? undefined : keys;
  }

  /** Moves the applied position to the newest candidate the lanes' watermark has passed. */
  #advance(): void {
    const through = this.#lanes?.appliedThrough() ?? this.#seq;
    while (this.#candidates.length > 0 && this.#candidates[0]!.seq <= through) {
      const candidate = this.#candidates.shift()!;
      this.#applied = candidate.position;
      this.#lag.applied(candidate.position.time);
      // Everything through the batch's resume point is applied: the events before its time too.
      this.#context.coordination?.noteAppliedBefore(candidate.position.time);
      if (candidate.wallTimeMs !== undefined) this.#context.histograms.record('lagMs', Date.now() - candidate.wallTimeMs);
    }
    this.#settleCatchUps();
  }

  /** Everything up to `position` is applied: make it the recorded resume point now. */
  async #record(position: StreamPosition): Promise<void> {
    this.#applied = position;
    this.#lag.applied(position.time);
    this.#context.coordination?.noteAppliedBefore(position.time);
    this.#settleCatchUps();
    await this.#checkpoint();
  }

  /** Records the applied position if it moved (writes are chained, so they land in order). */
  #checkpoint(): Promise<void> {
    const position = this.#applied;
    // An idle source's replies repeat their token: each would be a write of the recorded one.
    if (position === undefined || sameResumeToken(position.resumeToken, this.#saved?.resumeToken)) return this.#saving;
    this.#saved = position;
    this.#saving = this.#saving.catch(() => undefined).then(() => this.#checkpoints.save(position));
    return this.#saving;
  }
}

/** `db.coll` (and `→ db.coll` for a rename) of a DDL event, for progress. */
function describeNames(fields: ChangeEventFields): string {
  const name = (ns: { db: string; coll?: string }) => (ns.coll === undefined ? ns.db : `${ns.db}.${ns.coll}`);
  const from = fields.ns === undefined ? '?' : name(fields.ns);
  return fields.to === undefined ? from : `${from} → ${name(fields.to)}`;
}
