/**
 * The round trip to each cluster of a sync, measured in the background (a `ping` every
 * `FERRY_PING_INTERVAL_MS`, the first at once) for progress's `source.pingLatencyMs` and
 * `destination.pingLatencyMs`: the last latency in milliseconds, -1 when the last ping failed, as
 * mongosync reports them. A ping still out when the next is due is not doubled.
 */
import type { Cluster } from '../cluster/connect.js';
import { pingLatency } from '../cluster/monitoring.js';

export class ClusterPings {
  readonly #intervalMs: number;
  readonly #clusters: { source: Cluster; destination: Cluster };
  readonly #latest: { source?: number; destination?: number } = {};
  readonly #pending = new Set<'source' | 'destination'>();
  #timer: NodeJS.Timeout | undefined;

  constructor(clusters: { source: Cluster; destination: Cluster }, intervalMs: number) {
    this.#clusters = clusters;
    this.#intervalMs = intervalMs;
  }

  /** The last measured latencies (ms; -1: failed); a side is absent before its first ping returns. */
  get latest(): { source?: number; destination?: number } {
    return { ...this.#latest };
  }

  start(): void {
    if (this.#timer !== undefined) return;
    this.#pingAll();
    this.#timer = setInterval(() => this.#pingAll(), this.#intervalMs);
    this.#timer.unref();
  }

  stop(): void {
    clearInterval(this.#timer);
    this.#timer = undefined;
  }

  #pingAll(): void {
    for (const side of ['source', 'destination'] as const) {
      if (this.#pending.has(side)) continue;
      this.#pending.add(side);
      pingLatency(this.#clusters[side].client)
        .then(
          (ms) => (this.#latest[side] = ms),
          () => (this.#latest[side] = -1),
        )
        .finally(() => this.#pending.delete(side));
    }
  }
}
