/**
 * The lease of a sync: one document per instance id in the metadata database (`leases`, `_id` =
 * the `--id`), naming the process that runs the sync with that id on this destination. A Ferry
 * acts on a sync (writes its metadata, its destination) only while it holds the lease:
 *
 * - **Taking it** (`acquire`: at `start`, and when a recorded sync is recovered at startup): an
 *   atomic `findAndModify` succeeds when the lease is free, expired, or already this process's,
 *   and raises `epoch` by one. Expiry is judged by the destination's clock (`$$NOW`), so
 *   instances on machines whose clocks differ agree on it. A lease held by a live process is
 *   SyncLeaseHeld, naming its host, pid and since when. At startup Ferry waits up to one lease
 *   duration to tell a live holder (it renews) from a dead one (its lease runs out, and is taken
 *   over); a holder on this machine whose process is gone is taken over at once.
 * - **Keeping it** (`keep`): renewed every quarter of its duration. A renewal that finds another
 *   holder is LeaseLost; one that finds no lease document at all means the metadata database was
 *   dropped or the destination restarted empty (DestinationChanged). Either stops this instance.
 * - **Fencing** (fence.ts): every metadata write carries the epoch, and is refused on a document a
 *   newer epoch has written. Before writing, the holder makes sure of its lease by its own clock
 *   (`ensure`): measured from the moment it *sent* the last successful renewal, minus a margin, so
 *   it stops writing before the destination could hand the lease to anyone else.
 * - **Releasing it** (`release`, on a clean stop): expired at once, so a restart takes over
 *   without waiting.
 *
 * Leases are keyed by instance id and epochs are per lease, so several instances (one per source
 * shard, later) each hold their own, and a coordinator's shared decisions can be fenced the same way.
 */
import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import { performance } from 'node:perf_hooks';
import type { Collection, MongoClient } from 'mongodb';
import { MAJORITY, MAJORITY_READ } from '../cluster/concerns.js';
import { sleep } from '../cluster/retry.js';
import { METADATA_DATABASE } from '../domain/namespaces.js';
import { DestinationChanged, FerryError, InternalError, LeaseLost, SyncLeaseHeld } from '../errors/errors.js';
import type { Logger } from '../log/logger.js';
import type { Fence } from './fence.js';
import { METADATA_COLLECTIONS } from './names.js';

/** Who holds a lease: one value per process. */
export interface LeaseHolder {
  host: string;
  pid: number;
  /** Random, per process: tells this process from an earlier one with the same host and pid. */
  token: string;
  startedAt: Date;
}

export interface LeaseDocument {
  /** The instance id. */
  _id: string;
  /** Raised by one at each acquisition; every metadata write carries it (fence.ts). */
  epoch: number;
  holder: LeaseHolder;
  acquiredAt: Date;
  renewedAt: Date;
  /** By the destination's clock. */
  expiresAt: Date;
}

/** This process, as lease holders name it. */
export const THIS_PROCESS: LeaseHolder = Object.freeze({ host: hostname(), pid: process.pid, token: randomUUID(), startedAt: new Date() });

export interface LeaseOptions {
  /** The destination. */
  client: MongoClient;
  instance: string;
  /** How long a lease lasts without renewal. */
  durationMs: number;
  logger: Logger;
  /** Called once if the lease is lost while kept (taken over, or its record gone). */
  onLost?: (error: FerryError) => void;
}

/** The lease of `instance` as stored on the cluster of `client` (read-only), or null. */
export function readLease(client: MongoClient, instance: string): Promise<LeaseDocument | null> {
  return client
    .db(METADATA_DATABASE, { readConcern: MAJORITY_READ })
    .collection<LeaseDocument>(METADATA_COLLECTIONS.leases)
    .findOne({ _id: instance });
}

/**
 * Which of `instances` hold a lease that has not expired, judged by the destination's clock
 * (`$$NOW`): instances on machines whose clocks differ agree on who is alive.
 */
export async function liveInstances(client: MongoClient, instances: readonly string[]): Promise<Set<string>> {
  const live = await client
    .db(METADATA_DATABASE, { readConcern: MAJORITY_READ })
    .collection<LeaseDocument>(METADATA_COLLECTIONS.leases)
    .find({ _id: { $in: [...instances] }, $expr: { $gt: ['$expiresAt', '$$NOW'] } }, { projection: { _id: 1 } })
    .toArray();
  return new Set(live.map((doc) => doc._id));
}

/** "host h, pid p, holding it since …, last renewed …" */
export function describeHolder(doc: LeaseDocument): string {
  return (
    `host ${doc.holder.host}, pid ${doc.holder.pid}, holding it since ${doc.acquiredAt.toISOString()} ` +
    `(lease epoch ${doc.epoch}, last renewed ${doc.renewedAt.toISOString()})`
  );
}

/** Whether a holder is an earlier process on this machine that is gone (its pid is free, or is this very process). */
function deadOnThisMachine(holder: LeaseHolder): boolean {
  if (holder.host !== THIS_PROCESS.host || holder.token === THIS_PROCESS.token) return false;
  if (holder.pid === process.pid) return true;
  try {
    process.kill(holder.pid, 0);
    return false;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'ESRCH';
  }
}

function isDuplicateKey(error: unknown): boolean {
  return (error as { code?: unknown } | null)?.code === 11000;
}

export class Lease implements Fence {
  readonly #options: LeaseOptions;
  readonly #collection: Collection<LeaseDocument>;
  #epoch: number | undefined;
  /** Until when (performance.now()) this process may write without renewing. */
  #validUntil = 0;
  #renewing: Promise<void> | undefined;
  #timer: NodeJS.Timeout | undefined;
  #lost: FerryError | undefined;
  #unreachableLogged = false;

  constructor(options: LeaseOptions) {
    this.#options = options;
    this.#collection = options.client
      .db(METADATA_DATABASE, { writeConcern: MAJORITY, readConcern: MAJORITY_READ })
      .collection<LeaseDocument>(METADATA_COLLECTIONS.leases);
  }

  get instance(): string {
    return this.#options.instance;
  }

  /** Whether this process holds the lease (it may still need renewing). */
  get held(): boolean {
    return this.#epoch !== undefined && this.#lost === undefined;
  }

  /** Who this process is, as its leases name it. */
  get holder(): LeaseHolder {
    return THIS_PROCESS;
  }

  get epoch(): number {
    if (this.#epoch === undefined) throw new InternalError(`a metadata write for "${this.instance}" before its lease was taken`);
    return this.#epoch;
  }

  /** The lease document as stored now, or null. */
  read(): Promise<LeaseDocument | null> {
    return this.#collection.findOne({ _id: this.instance });
  }

  get #margin(): number {
    return Math.max(200, this.#options.durationMs / 10);
  }

  /** Renewals happen this often. */
  get renewIntervalMs(): number {
    return Math.max(100, Math.floor(this.#options.durationMs / 4));
  }

  /**
   * Takes the lease (see the module comment). `waitMs`: how long to watch a holder that is neither
   * this process nor known dead, for it to renew (SyncLeaseHeld) or expire (taken over); 0 refuses at once.
   */
  async acquire(waitMs = 0): Promise<number> {
    const { durationMs } = this.#options;
    const deadline = performance.now() + waitMs;
    let seen: LeaseDocument | undefined;
    let dead: LeaseDocument | undefined;
    for (;;) {
      const sentAt = performance.now();
      try {
        const taken = await this.#collection.findOneAndUpdate(
          {
            _id: this.instance,
            $or: [
              { 'holder.token': THIS_PROCESS.token },
              { $expr: { $lt: ['$expiresAt', '$$NOW'] } },
              ...(dead === undefined ? [] : [{ 'holder.token': dead.holder.token, epoch: dead.epoch }]),
            ],
          },
          [
            {
              $set: {
                epoch: { $add: [{ $ifNull: ['$epoch', 0] }, 1] },
                holder: { $literal: THIS_PROCESS },
                acquiredAt: '$$NOW',
                renewedAt: '$$NOW',
                expiresAt: { $add: ['$$NOW', durationMs] },
              },
            },
          ],
          { upsert: true, returnDocument: 'after', writeConcern: MAJORITY },
        );
        if (taken === null) throw new InternalError('findAndModify with upsert returned no lease');
        this.#epoch = Number(taken.epoch);
        this.#validUntil = sentAt + durationMs - this.#margin;
        this.#lost = undefined;
        const previous = seen ?? dead;
        this.#options.logger.info(
          { instance: this.instance, epoch: this.#epoch, previous: previous === undefined ? undefined : describeHolder(previous) },
          previous === undefined ? `Lease of sync "${this.instance}" taken` : `Lease of sync "${this.instance}" taken over`,
        );
        return this.#epoch;
      } catch (error) {
        if (!isDuplicateKey(error)) throw error;
      }
      const current = await this.read();
      if (current === null) continue; // removed meanwhile: try again
      if (dead === undefined && deadOnThisMachine(current.holder)) {
        dead = current;
        continue;
      }
      const renewed = seen !== undefined && (current.holder.token !== seen.holder.token || current.renewedAt > seen.renewedAt);
      if (renewed || performance.now() >= deadline) throw this.#held(current);
      seen ??= current;
      this.#options.logger.info(
        { holder: describeHolder(current) },
        `The sync "${this.instance}" is leased to ${current.holder.host} pid ${current.holder.pid}: waiting to see whether it is alive`,
      );
      await sleep(Math.min(this.renewIntervalMs, Math.max(0, deadline - performance.now())) + 50);
    }
  }

  #held(current: LeaseDocument): FerryError {
    return new SyncLeaseHeld(
      `another Ferry runs the sync "${this.instance}" on this destination: ${describeHolder(current)}. ` +
        'Stop it first (its lease expires on its own if it is gone), or use another --id',
    );
  }

  /** Renews the lease now; LeaseLost (SyncLeaseHeld's counterpart) or DestinationChanged when it is no longer this process's. */
  renew(): Promise<void> {
    if (this.#lost !== undefined) return Promise.reject(this.#lost);
    this.#renewing ??= this.#renew().finally(() => (this.#renewing = undefined));
    return this.#renewing;
  }

  async #renew(): Promise<void> {
    const epoch = this.epoch;
    const sentAt = performance.now();
    const result = await this.#collection.updateOne(
      { _id: this.instance, 'holder.token': THIS_PROCESS.token, epoch },
      [{ $set: { renewedAt: '$$NOW', expiresAt: { $add: ['$$NOW', this.#options.durationMs] } } }],
      { writeConcern: MAJORITY },
    );
    if (result.matchedCount === 1) {
      this.#validUntil = sentAt + this.#options.durationMs - this.#margin;
      return;
    }
    const current = await this.read();
    this.#lost =
      current === null
        ? new DestinationChanged(
            `the lease of the sync "${this.instance}" is gone from the destination's metadata database ` +
              '(the metadata was dropped, or the destination restarted empty)',
          )
        : leaseLost(this.instance, epoch, current);
    throw this.#lost;
  }

  /** Resolves when this process holds a lease valid by its own clock, renewing it if needed. */
  async ensure(): Promise<void> {
    if (this.#lost !== undefined) throw this.#lost;
    if (this.#epoch === undefined) throw new InternalError(`a metadata write for "${this.instance}" before its lease was taken`);
    if (performance.now() < this.#validUntil) return;
    await this.renew();
  }

  /** Renews the lease in the background until `release`; a loss is reported once through `onLost`. */
  keep(): void {
    if (this.#timer !== undefined) return;
    this.#timer = setInterval(() => {
      this.renew().then(
        () => {
          if (this.#unreachableLogged) this.#options.logger.info(`Lease of sync "${this.instance}" renewed again`);
          this.#unreachableLogged = false;
        },
        (error: unknown) => {
          if (error === this.#lost) {
            this.#stopKeeping();
            this.#options.onLost?.(this.#lost!);
          } else if (!this.#unreachableLogged) {
            // Nobody else can take it before it expires; writes wait for a renewal meanwhile.
            this.#unreachableLogged = true;
            this.#options.logger.warn({ err: error }, `Could not renew the lease of sync "${this.instance}"; retrying`);
          }
        },
      );
    }, this.renewIntervalMs);
    this.#timer.unref();
  }

  #stopKeeping(): void {
    clearInterval(this.#timer);
    this.#timer = undefined;
  }

  /** Removes the lease if this process holds it (a start that was refused made it: it leaves nothing behind). */
  async discard(): Promise<void> {
    this.#stopKeeping();
    const epoch = this.#epoch;
    this.#epoch = undefined;
    if (epoch === undefined) return;
    await this.#collection.deleteOne({ _id: this.instance, 'holder.token': THIS_PROCESS.token, epoch }, { writeConcern: MAJORITY });
  }

  /** Stops renewing and lets the lease expire now, so that a restart takes over at once. Best effort. */
  async release(): Promise<void> {
    this.#stopKeeping();
    const epoch = this.#epoch;
    if (epoch === undefined || this.#lost !== undefined) return;
    this.#validUntil = 0;
    await this.#collection
      .updateOne({ _id: this.instance, 'holder.token': THIS_PROCESS.token, epoch }, [{ $set: { expiresAt: '$$NOW' } }], {
        writeConcern: MAJORITY,
      })
      .catch(() => undefined);
  }
}

/** LeaseLost naming who holds the lease now. */
function leaseLost(instance: string, epoch: number, current: LeaseDocument): FerryError {
  return new LeaseLost(
    `this Ferry (lease epoch ${epoch}) no longer holds the lease of the sync "${instance}": ${describeHolder(current)} ` +
      'took it over, so this instance stopped acting on the sync; stop this process',
  );
}
