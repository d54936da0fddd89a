/**
 * The start request a migration run by several instances was started with, claimed once
 * (`coordinationStart` in the metadata database, one document): the first instance to start
 * inserts the request it got, an insert only one writer can win (majority write concern); every
 * other instance's start reads it and goes on only with the same request, refused by name
 * (MismatchedCommand) otherwise. Two instances started at the same instant with different bodies
 * so cannot both start: one insert wins, the other start is refused before it writes anything.
 *
 * Written after this instance's lease is taken and only while it holds it (`crossClusterFence`:
 * made sure of, not stamped: the instances' leases are separate, their epochs not comparable). A
 * claim outlives its writer only while it can still belong to a running migration: its writer has
 * a resume document that is not COMMITTED, or has none yet and still holds the lease it claimed
 * under (it is starting). Any other claim (a start that failed, an earlier migration that
 * committed) is stale: replaced, compare-and-swap on the claim read, so only one replacer wins.
 * A start that fails after claiming removes its own claim.
 */
import { isDuplicateKey } from '../cluster/errors.js';
import { InternalError } from '../errors/errors.js';
import { crossClusterFence, FencedCollection } from '../meta/fence.js';
import { liveInstances, readLease } from '../meta/lease.js';
import { METADATA_COLLECTIONS } from '../meta/names.js';
import type { MetadataStore } from '../meta/store.js';

/** The one document of `coordinationStart`. */
export interface StartClaimDocument {
  _id: 'start';
  /** The instance that claimed it. */
  instance: string;
  /** The start request it got, canonical (fingerprint.ts). */
  request: string;
  /** The epoch of the lease it claimed under. */
  leaseEpoch: number;
  at: Date;
}

/** What claiming found: this instance's request recorded first, or one recorded before it (`by`). */
export type ClaimOutcome = { claimed: true } | { claimed: false; by: string; request: string };

/** How many times a claim is tried again after the one it read went away or was replaced meanwhile. */
const ATTEMPTS = 5;

export class StartClaim {
  readonly #store: MetadataStore;
  readonly #members: readonly string[];
  readonly #collection: FencedCollection<StartClaimDocument>;
  /** The claim this instance wrote in this start, to remove if the start fails. */
  #mine: Date | undefined;

  constructor(store: MetadataStore, members: readonly string[]) {
    this.#store = store;
    this.#members = members;
    this.#collection = new FencedCollection(
      store.db.collection<StartClaimDocument>(METADATA_COLLECTIONS.coordinationStart),
      crossClusterFence(store.fence),
    );
  }

  /**
   * Records `request` as the migration's if no running migration's is recorded; otherwise says
   * whose request is (the caller compares). Never overwrites a live claim.
   */
  async claim(request: string): Promise<ClaimOutcome> {
    for (let attempt = 0; attempt < ATTEMPTS; attempt++) {
      const mine = this.#document(request);
      try {
        await this.#collection.insertOne(mine);
        this.#mine = mine.at;
        return { claimed: true };
      } catch (error) {
        if (!isDuplicateKey(error)) throw error;
      }
      const current = await this.#collection.findOne({ _id: 'start' });
      if (current === null) continue; // removed meanwhile: try again
      if (await this.#live(current)) return { claimed: false, by: current.instance, request: current.request };
      const replaced = await this.#collection.replaceOne({ _id: 'start', instance: current.instance, at: current.at }, mine);
      if (replaced.matchedCount === 1) {
        this.#mine = mine.at;
        return { claimed: true };
      }
    }
    throw new InternalError(`the start claim of the migration kept changing while instance "${this.#store.instance}" claimed it`);
  }

  /** Removes the claim this start wrote (the start failed); nothing if it wrote none. */
  async release(): Promise<void> {
    if (this.#mine === undefined) return;
    await this.#collection.deleteOne({ _id: 'start', instance: this.#store.instance, at: this.#mine });
    this.#mine = undefined;
  }

  #document(request: string): StartClaimDocument {
    return { _id: 'start', instance: this.#store.instance, request, leaseEpoch: this.#store.fence.epoch, at: new Date() };
  }

  /** Whether `claim` may still belong to a running migration (see the module comment). */
  async #live(claim: StartClaimDocument): Promise<boolean> {
    if (!this.#members.includes(claim.instance) || claim.instance === this.#store.instance) return false;
    const resume = await this.#store.db
      .collection<{ _id: string; state: string }>(METADATA_COLLECTIONS.resume)
      .findOne({ _id: claim.instance });
    if (resume !== null) return resume.state !== 'COMMITTED';
    // The same lease still held, its expiry judged by the destination's clock (instances' clocks may differ).
    const client = this.#store.db.client;
    const lease = await readLease(client, claim.instance);
    return lease !== null && lease.epoch === claim.leaseEpoch && (await liveInstances(client, [claim.instance])).has(claim.instance);
  }
}
