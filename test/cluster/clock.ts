/**
 * The cluster's logical clock. Every write takes the next `Timestamp` (seconds, increment),
 * strictly increasing, as a primary's oplog timestamps are.
 */
import { Timestamp } from 'bson';

let heldNow: number | undefined;

/**
 * `Date.now()`, read once per run of synchronous work (a command's batch of writes) and held until
 * its microtasks run: two clock reads per inserted document were ~4% of a destination's time in a
 * bulk load. mongod also stamps a batch of inserts with one wall time and reserves their
 * timestamps together.
 */
export function writeTime(): number {
  if (heldNow === undefined) {
    heldNow = Date.now();
    queueMicrotask(() => (heldNow = undefined));
  }
  return heldNow;
}

export class ClusterClock {
  #seconds = 0;
  #increment = 0;

  /** Seconds of the latest timestamp handed out. */
  get seconds(): number {
    return this.#seconds;
  }

  /** Increment of the latest timestamp handed out. */
  get increment(): number {
    return this.#increment;
  }

  /**
   * Moves to the next timestamp (wall-clock seconds, or the last seconds with the next increment)
   * without making it: a plain insert's oplog entry keeps the increment and shares the seconds
   * (oplog.ts, InsertedDocument and InsertShared).
   */
  advance(): void {
    const now = Math.floor(writeTime() / 1000);
    if (now > this.#seconds) {
      this.#seconds = now;
      this.#increment = 1;
    } else {
      this.#increment += 1;
    }
  }

  /** The next timestamp. */
  tick(): Timestamp {
    this.advance();
    return new Timestamp({ t: this.#seconds, i: this.#increment });
  }

  /**
   * Hybrid logical clock: moves forward to `ts` when it is later than anything handed out, so
   * that a node's next timestamp follows every cluster time it has been told of (mongod advances
   * its logical clock to each `$clusterTime` it receives, from clients and other nodes alike).
   * A node restarted on its data directory continues after the newest time it had handed out.
   */
  advanceTo(ts: Timestamp): void {
    if (ts.t > this.#seconds || (ts.t === this.#seconds && ts.i > this.#increment)) {
      this.#seconds = ts.t;
      this.#increment = ts.i;
    }
  }

  /** The latest timestamp handed out (the cluster time clients see). */
  current(): Timestamp {
    return new Timestamp({ t: this.#seconds, i: this.#increment });
  }
}

/** Orders two timestamps: negative, 0 or positive. */
export function compareTimestamps(a: Timestamp, b: Timestamp): number {
  if (a.t !== b.t) return a.t < b.t ? -1 : 1;
  return a.i < b.i ? -1 : a.i > b.i ? 1 : 0;
}
