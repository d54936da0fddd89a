/**
 * Whether the sync's clusters answer, watched apart from the work: each is pinged (`ping`) every
 * interval on a client of its own, so a copy or an apply stuck on a cluster that stopped
 * answering (a network partition, a frozen host: the connection stays open and nothing comes
 * back) neither hides the outage nor delays noticing it. A ping unanswered after `timeoutMs` makes
 * the cluster unreachable since the ping was sent; the next answer makes it reachable again.
 *
 * Progress reads it (lag keeps growing and `canCommit` is false while a cluster is unreachable,
 * warnings say which and since when; `pingLatencyMs` is the last round trip); it never decides
 * anything about the sync itself.
 */
import { performance } from 'node:perf_hooks';
import { nameCluster, type ClusterEndpoint } from '../domain/clusters.js';
import { connect } from './connect.js';
import type { MongoClient } from 'mongodb';

export interface HealthOptions {
  /** How often each cluster is pinged. */
  intervalMs: number;
  /** How long a ping may go unanswered before the cluster counts as unreachable. */
  timeoutMs: number;
}

/** What is known of one cluster. */
export interface ClusterReachability {
  endpoint: ClusterEndpoint;
  /** Wall time of the first ping that went unanswered since the last answer; undefined while it answers. */
  unreachableSince?: Date;
  /** Round trip of the last answered ping, in ms (fractional). */
  latencyMs?: number;
}

class Watched {
  readonly client: MongoClient;
  state: ClusterReachability;
  /** Wall time the ping in flight was sent, if one is. */
  pendingSince: number | undefined;

  constructor(readonly endpoint: ClusterEndpoint) {
    this.client = connect(endpoint, { appName: 'ferry-health', maxPoolSize: 2 });
    this.state = { endpoint };
  }
}

export class ClusterHealth {
  readonly #options: HealthOptions;
  readonly #watched: Watched[];
  #timer: NodeJS.Timeout | undefined;
  /** Stopped for good: nothing is reported any more. */
  #stopped = false;

  constructor(endpoints: readonly ClusterEndpoint[], options: HealthOptions) {
    this.#options = options;
    this.#watched = endpoints.map((endpoint) => new Watched(endpoint));
  }

  /** Starts pinging (again); harmless when already started. */
  start(): void {
    if (this.#timer !== undefined || this.#stopped) return;
    const tick = () => {
      for (const watched of this.#watched) this.#check(watched);
    };
    tick();
    this.#timer = setInterval(tick, this.#options.intervalMs);
    this.#timer.unref();
  }

  #check(watched: Watched): void {
    const now = Date.now();
    if (watched.pendingSince !== undefined) {
      // Still waiting: past the timeout the cluster is unreachable since that ping was sent.
      if (now - watched.pendingSince >= this.#options.timeoutMs) watched.state.unreachableSince ??= new Date(watched.pendingSince);
      return;
    }
    const sentAt = now;
    const started = performance.now();
    watched.pendingSince = sentAt;
    watched.client
      .db('admin')
      .command({ ping: 1 }, { timeoutMS: this.#options.timeoutMs })
      .then(
        () => {
          watched.state = { endpoint: watched.endpoint, latencyMs: performance.now() - started };
        },
        () => {
          if (!this.#stopped) watched.state.unreachableSince ??= new Date(sentAt);
        },
      )
      .finally(() => {
        if (watched.pendingSince === sentAt) watched.pendingSince = undefined;
      });
  }

  /** What is known of the cluster at `endpoint` (undefined if it is not watched). */
  of(endpoint: ClusterEndpoint): ClusterReachability | undefined {
    const watched = this.#watched.find((each) => each.endpoint.name === endpoint.name);
    if (watched === undefined || this.#stopped) return undefined;
    // A ping in flight for longer than the timeout counts even before the next tick notices it.
    if (watched.pendingSince !== undefined && Date.now() - watched.pendingSince >= this.#options.timeoutMs) {
      watched.state.unreachableSince ??= new Date(watched.pendingSince);
    }
    return watched.state;
  }

  /** One line per unreachable cluster, for progress warnings. */
  warnings(roles: Readonly<Record<string, ClusterEndpoint>>): string[] {
    const lines: string[] = [];
    for (const [role, endpoint] of Object.entries(roles)) {
      const since = this.of(endpoint)?.unreachableSince;
      if (since === undefined) continue;
      const seconds = Math.max(0, Math.round((Date.now() - since.getTime()) / 1000));
      lines.push(
        `The ${role} ${nameCluster(endpoint)} is unreachable: it has not answered since ${since.toISOString()} (${seconds} s). ` +
          `${role === 'source' ? 'No change event can be read' : 'No change event can be applied'} until it answers again; ` +
          'lag grows meanwhile and commit is not possible',
      );
    }
    return lines;
  }

  /** Stops pinging for good (the sync committed, or Ferry stops). */
  async stop(): Promise<void> {
    this.#stopped = true;
    clearInterval(this.#timer);
    this.#timer = undefined;
    // Forced: a cluster that does not answer must not hold up a stop.
    await Promise.allSettled(this.#watched.map((watched) => watched.client.close(true)));
  }
}
