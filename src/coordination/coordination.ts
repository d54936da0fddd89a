/**
 * One instance's part in a migration run by several Ferry instances, one per source shard (see
 * the README, "Several instances"). The instances share nothing but the destination: each records
 * its own document in the metadata (members.ts), and reads everyone's.
 *
 * - Identity: `--id` is a source shard (membership.ts); two live processes with one id are
 *   refused by the lease (src/meta/lease.ts); instances that are missing, or whose lease ran out,
 *   are named in progress `warnings` while the others wait for them.
 * - Identical commands: a start request that differs from one an instance already recorded is
 *   refused by name (MismatchedCommand, `refuseDifferent`), and so is one that differs from the
 *   request the migration's start was claimed with, whoever claimed first (`claimStart`,
 *   start-claim.ts: two starts at the same instant cannot both win); a command one instance got
 *   waits, in `info`/`warnings`, for every other to get it too (`awaitAll`).
 * - Cluster-wide steps (run by the coordinator, coordinator.ts) wait for every instance, and the
 *   others wait for the coordinator's decision (`awaitCoordinator`): the phases say where.
 * - Readiness: each instance publishes whether it could commit; `canCommit` is true only when
 *   every instance's is, and each is alive.
 * - Order across shards' streams: each instance publishes its change-event application's watermark
 *   (`appliedBefore`: every event of its shard's stream earlier than that cluster time is applied).
 *   An event that must not overtake the other shards' earlier events (the insert half of a
 *   cross-shard move, a DDL: src/cea/applier.ts) waits until every other instance's watermark
 *   reached its cluster time (`awaitAppliedBefore`). The instance waiting publishes that time as
 *   its own watermark first (everything before the event is applied), so two instances waiting at
 *   once never wait for each other: the one at the earlier time always goes on.
 */
import type { Timestamp } from 'bson';
import { liveInstances } from '../meta/lease.js';
import type { Cluster } from '../cluster/connect.js';
import type { Logger } from '../log/logger.js';
import type { MetadataStore } from '../meta/store.js';
import type { Coordination, CoordinationStep, PhaseStatus } from '../phase/contract.js';
import type { StartRequest } from '../domain/start-request.js';
import { sleep } from '../cluster/retry.js';
import { describeTime, timeAfter } from '../domain/time.js';
import { chooseCoordinator } from './coordinator.js';
import { commandFingerprint, differingFields, mismatchedStart } from './fingerprint.js';
import { StartClaim } from './start-claim.js';
import { MemberRecords, stepValue, type MemberDocument, type RunCommand } from './members.js';

export interface CoordinationOptions {
  /** This instance's metadata (its writes fenced by its lease). */
  store: MetadataStore;
  /** This instance's id (`--id`). */
  instance: string;
  /** This instance's shard, read directly. */
  shard: { id: string; cluster: Cluster };
  /** Every instance: the source's shard IDs. */
  members: readonly string[];
  request: StartRequest;
  logger: Logger;
  /** How often the others' records are read while waiting, and readiness published. Default 500 ms. */
  pollMs?: number;
}

/** What a step waited for means to an operator. */
const WAITING_FOR: Record<CoordinationStep, string> = {
  started: 'to get the start request',
  prepared: 'the coordinator to prepare the destination',
  copied: 'to finish its initial copy',
  indexesBuilt: 'the coordinator to build the indexes',
  commitRequested: 'to get the commit request',
  commitPoint: 'the coordinator to take the common commit point',
  drained: 'to apply every event through the commit point',
  restored: 'the coordinator to restore the destination',
  committed: 'to commit',
  reverseRequested: 'to get the reverse request',
  reversePrepared: 'the coordinator to prepare the reversed sync',
};

export class InstanceCoordination implements Coordination {
  readonly instance: string;
  readonly shard: { id: string; cluster: Cluster };
  readonly members: readonly string[];
  readonly coordinatorId: string;
  readonly #options: CoordinationOptions;
  readonly #records: MemberRecords;
  readonly #claim: StartClaim;
  readonly #fingerprint: string;
  #docs: MemberDocument[] = [];
  /** Instances alive (their lease not expired), as last read. */
  #alive = new Set<string>();
  /** What this instance waits for now, for progress. */
  #waiting: { step: CoordinationStep; missing: string[] } | undefined;
  #published: boolean | undefined;
  /** This instance's change-event watermark (`appliedBefore`): as noted, and as last written. */
  #appliedBefore: Timestamp | undefined;
  #appliedPublished: Timestamp | undefined;
  /** What this instance waits for at an event that must not overtake the others' (progress says). */
  #waitingOrder: { time: Timestamp; why: string; missing: string[] } | undefined;
  #timer: NodeJS.Timeout | undefined;
  #refreshing = false;

  constructor(options: CoordinationOptions) {
    this.#options = options;
    this.instance = options.instance;
    this.shard = options.shard;
    this.members = options.members;
    this.coordinatorId = chooseCoordinator(options.members);
    this.#records = new MemberRecords(options.store);
    this.#claim = new StartClaim(options.store, options.members);
    this.#fingerprint = commandFingerprint(options.request);
  }

  get isCoordinator(): boolean {
    return this.instance === this.coordinatorId;
  }

  /**
   * The other instances' documents of this migration: one that committed before this instance
   * started belongs to an earlier migration with the same ids (its instance has not started this one).
   */
  #others(docs: readonly MemberDocument[]): MemberDocument[] {
    const started = docs.find((doc) => doc._id === this.instance)?.steps.started?.at;
    return docs.filter((doc) => {
      if (doc._id === this.instance || !this.members.includes(doc._id)) return false;
      const committed = doc.steps.committed?.at;
      return committed === undefined || started === undefined || committed >= started;
    });
  }

  /** Refuses, writing nothing, a start request that differs from one another instance recorded (MismatchedCommand). */
  async refuseDifferent(): Promise<void> {
    for (const other of this.#others(await this.#records.all())) {
      const fields = differingFields(this.#fingerprint, other.request);
      if (fields.length > 0) throw mismatchedStart(other._id, fields);
    }
  }

  /**
   * Claims the migration's start for this instance's request, or finds the same request claimed
   * (start-claim.ts): refused by name (MismatchedCommand) when another instance's different one
   * was claimed first, even at the same instant. Called once this instance's lease is taken,
   * before its start writes anything else; `releaseStart` undoes it if the start fails.
   */
  async claimStart(): Promise<void> {
    const outcome = await this.#claim.claim(this.#fingerprint);
    if (outcome.claimed) return;
    const fields = differingFields(this.#fingerprint, outcome.request);
    if (fields.length > 0) throw mismatchedStart(outcome.by, fields);
  }

  async releaseStart(): Promise<void> {
    await this.#claim.release();
  }

  /** Whether another instance of this migration has started (its destination work may be there already). */
  async othersStarted(): Promise<boolean> {
    return this.#others(await this.#records.all()).length > 0;
  }

  /** Records this instance's start (after its lease is taken), then keeps the shared view fresh. */
  async register(): Promise<void> {
    await this.#records.register(this.#fingerprint, this.members);
  }

  /** Whether this instance's record is there (a sync recorded just before a crash may lack it). */
  async isRegistered(): Promise<boolean> {
    return (await this.#records.all()).some((doc) => doc._id === this.instance && doc.steps.started !== undefined);
  }

  /** Reads everyone's records every `pollMs` (readiness, who is alive) and publishes this instance's readiness. */
  watch(localReady: () => boolean): void {
    if (this.#timer !== undefined) return;
    this.#timer = setInterval(() => {
      if (this.#refreshing) return;
      this.#refreshing = true;
      void this.#refresh(localReady())
        .catch((error: unknown) => this.#options.logger.debug({ err: error }, 'Could not read the other instances'))
        .finally(() => (this.#refreshing = false));
    }, this.#pollMs);
    this.#timer.unref();
  }

  stop(): void {
    clearInterval(this.#timer);
    this.#timer = undefined;
  }

  get #pollMs(): number {
    return this.#options.pollMs ?? 500;
  }

  async #refresh(ready: boolean): Promise<void> {
    if (ready !== this.#published) {
      await this.#records.setReady(ready);
      this.#published = ready;
    }
    await this.#publishApplied();
    await this.#read();
  }

  /**
   * Notes this instance's change-event watermark: every event of its shard's stream earlier than
   * `time` is applied. Written with the next refresh (every `pollMs`), never moved back.
   */
  noteAppliedBefore(time: Timestamp | undefined): void {
    if (timeAfter(time, this.#appliedBefore)) this.#appliedBefore = time;
  }

  async #publishApplied(): Promise<void> {
    const time = this.#appliedBefore;
    if (time === undefined || !timeAfter(time, this.#appliedPublished)) return;
    await this.#records.setAppliedBefore(time);
    this.#appliedPublished = time;
  }

  /**
   * Waits until every other instance has applied every event of its shard's stream earlier than
   * `time` (see the module comment); this instance has applied all of its own and says so first.
   * `why` tells progress what waits. False when `stopped()` first.
   */
  async awaitAppliedBefore(time: Timestamp, why: string, stopped: () => boolean): Promise<boolean> {
    this.noteAppliedBefore(time);
    await this.#publishApplied();
    try {
      for (;;) {
        if (stopped()) return false;
        const others = new Map(this.#others(await this.#read()).map((doc) => [doc._id, doc]));
        const missing = this.members.filter(
          (id) => id !== this.instance && (others.get(id)?.appliedBefore === undefined || timeAfter(time, others.get(id)!.appliedBefore)),
        );
        if (missing.length === 0) return true;
        this.#waitingOrder = { time, why, missing };
        await sleep(this.#pollMs);
      }
    } finally {
      this.#waitingOrder = undefined;
    }
  }

  async #read(): Promise<MemberDocument[]> {
    const docs = await this.#records.all();
    const client = this.#options.store.db.client;
    this.#alive = await liveInstances(client, this.members);
    this.#docs = docs;
    return docs;
  }

  /** Records that this instance got `pause` or `resume`: the others say so until they got it too. */
  async command(name: RunCommand): Promise<void> {
    await this.#records.command(name);
    this.#docs = await this.#records.all();
  }

  /** Whether this instance reached `step`, and not before `since` when that one is reached too. */
  async reachedSince(step: CoordinationStep, since: CoordinationStep): Promise<boolean> {
    const mine = (await this.#read()).find((doc) => doc._id === this.instance);
    const at = mine?.steps[step]?.at;
    const after = mine?.steps[since]?.at;
    return at !== undefined && (after === undefined || at >= after);
  }

  async reach(step: CoordinationStep, value?: unknown): Promise<void> {
    await this.#records.reach(step, value);
    this.#options.logger.info({ step, coordinator: this.isCoordinator }, `Coordination: this instance reached "${step}"`);
  }

  async awaitAll(step: CoordinationStep, stopped: () => boolean): Promise<boolean> {
    for (;;) {
      if (stopped()) return false;
      const docs = await this.#read();
      const mine = docs.find((doc) => doc._id === this.instance);
      const reached = new Set(
        [...this.#others(docs), ...(mine === undefined ? [] : [mine])].filter((d) => d.steps[step]).map((d) => d._id),
      );
      const missing = this.members.filter((id) => !reached.has(id));
      if (missing.length === 0) {
        this.#waiting = undefined;
        return true;
      }
      this.#waiting = { step, missing };
      await sleep(this.#pollMs);
    }
  }

  async awaitCoordinator(step: CoordinationStep, stopped: () => boolean): Promise<{ value?: unknown } | undefined> {
    for (;;) {
      if (stopped()) return undefined;
      const docs = await this.#read();
      const coordinator = this.isCoordinator
        ? docs.find((doc) => doc._id === this.instance)
        : this.#others(docs).find((doc) => doc._id === this.coordinatorId);
      const reached = coordinator === undefined ? undefined : stepValue(coordinator, step);
      if (reached !== undefined) {
        this.#waiting = undefined;
        return reached;
      }
      this.#waiting = { step, missing: [this.coordinatorId] };
      await sleep(this.#pollMs);
    }
  }

  async decision(step: CoordinationStep): Promise<{ value?: unknown } | undefined> {
    const docs = await this.#read();
    const coordinator = this.isCoordinator
      ? docs.find((doc) => doc._id === this.instance)
      : this.#others(docs).find((doc) => doc._id === this.coordinatorId);
    return coordinator === undefined ? undefined : stepValue(coordinator, step);
  }

  /** What progress says of the coordination: who is waited for, and whether every instance could commit. */
  status(): PhaseStatus {
    const warnings: string[] = [];
    const others = this.#others(this.#docs);
    const notStarted = this.members.filter((id) => id !== this.instance && !others.some((doc) => doc._id === id));
    if (notStarted.length > 0) {
      warnings.push(
        `${named(notStarted)} of this migration ${notStarted.length === 1 ? 'has' : 'have'} not got the start request: ` +
          `start one Ferry per source shard (${this.members.join(', ')}) with --id <shard ID> and send each the same request`,
      );
    }
    const gone = others.filter((doc) => !this.#alive.has(doc._id)).map((doc) => doc._id);
    if (gone.length > 0) {
      warnings.push(
        `${named(gone)} ${gone.length === 1 ? 'is' : 'are'} not running (lease expired): ` +
          `the others wait; restart ${gone.length === 1 ? 'it' : 'them'}`,
      );
    }
    const mismatched = others.filter((doc) => differingFields(this.#fingerprint, doc.request).length > 0).map((doc) => doc._id);
    if (mismatched.length > 0) {
      warnings.push(`${named(mismatched)} got a different start request: this migration cannot go on`);
    }
    // pause/resume: the latest one any instance got must reach every instance (one that got
    // neither runs, as after resume); meanwhile nobody commits.
    const mine = this.#docs.find((doc) => doc._id === this.instance);
    const everyone = mine === undefined ? others : [mine, ...others];
    const latest = everyone
      .map((doc) => doc.lastCommand)
      .filter((command) => command !== undefined)
      .sort((a, b) => b!.at.getTime() - a!.at.getTime())[0];
    const behind =
      latest === undefined
        ? []
        : this.members.filter((id) => (everyone.find((doc) => doc._id === id)?.lastCommand?.name ?? 'resume') !== latest.name);
    if (latest !== undefined && behind.length > 0) {
      const got = everyone.filter((doc) => (doc.lastCommand?.name ?? 'resume') === latest.name).map((doc) => `"${doc._id}"`);
      warnings.push(
        `${latest.name} was sent to ${got.join(', ')} but not to ${behind.map((id) => `"${id}"`).join(', ')}: ` +
          `send ${latest.name} to every instance of the migration`,
      );
    }
    const paused = latest?.name === 'pause';
    const waiting = this.#waiting;
    if (waiting !== undefined) {
      warnings.push(`Waiting for ${named(waiting.missing, 'instance')} ${WAITING_FOR[waiting.step]}`);
    }
    const order = this.#waitingOrder;
    if (order !== undefined) {
      warnings.push(
        `${order.why} waits for ${named(order.missing, 'instance')} to apply ` +
          `the events of ${order.missing.length === 1 ? 'its shard' : 'their shards'} before ${describeTime(order.time)}`,
      );
    }
    const allReady =
      notStarted.length === 0 &&
      gone.length === 0 &&
      mismatched.length === 0 &&
      behind.length === 0 &&
      !paused &&
      others.every((doc) => doc.ready === true);
    return { warnings, readyToCommit: allReady };
  }
}

/** `Instance "a"` or `Instances "a", "b"` (`word` in another case). */
function named(ids: readonly string[], word = 'Instance'): string {
  return `${word}${ids.length === 1 ? '' : 's'} ${ids.map((id) => `"${id}"`).join(', ')}`;
}
