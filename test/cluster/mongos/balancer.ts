/**
 * The balancer (run by the router here; by the config server's primary on a real cluster). While
 * its mode is `full` (`balancerStart`; the setting `config.settings {_id: 'balancer'}`), a round
 * every `balancerIntervalMs` looks at each sharded collection not marked `noBalance` and, as
 * MongoDB 7.0+ does, moves data only when the shards' data sizes for the collection differ by
 * at least three times the range size (`config.settings {_id: 'chunksize'}`, 128 MB by default):
 * one chunk (split at its median first when the donor has only one) from the shard with the most
 * to the one with the least. Stopped (`balancerStop`, or never started), nothing moves on its own.
 */
import { findAll } from '../sharding/config-reads.js';
import type { RoutingTable } from '../sharding/routing-table.js';
import { moveChunk, splitChunk } from './migration.js';
import { num, type Router } from './router.js';

const DEFAULT_CHUNK_SIZE_MB = 128;

export class BalancerState {
  mode: 'full' | 'off' = 'off';
  inRound = false;
  rounds = 0;
  private round: Promise<void> | undefined;

  constructor(private readonly router: Router) {}

  /** Resolves once no round is under way. */
  async idle(): Promise<void> {
    await this.round;
  }

  async runRound(): Promise<void> {
    if (this.mode !== 'full' || this.round) return;
    this.inRound = true;
    this.round = this.balance().finally(() => {
      this.inRound = false;
      this.round = undefined;
      this.rounds++;
    });
    await this.round;
  }

  private async balance(): Promise<void> {
    const router = this.router;
    const settings = await findAll(router.config, 'config', 'settings');
    const chunkSize = settings.find((s) => s._id === 'chunksize');
    const threshold = 3 * (num(chunkSize?.value) || DEFAULT_CHUNK_SIZE_MB) * 1024 * 1024;
    const noBalance = new Set((await findAll(router.config, 'config', 'collections', { noBalance: true })).map((c) => String(c._id)));
    for (const table of [...router.tables.values()]) {
      if (this.mode !== 'full' || noBalance.has(table.ns)) continue;
      await this.balanceCollection(table, threshold);
    }
  }

  private async balanceCollection(table: RoutingTable, threshold: number): Promise<void> {
    const router = this.router;
    const dot = table.ns.indexOf('.');
    const sizes = new Map<string, number>();
    for (const id of router.shardIds()) {
      const reply = await router.shard(id).client.run(table.ns.slice(0, dot), { collStats: table.ns.slice(dot + 1) });
      sizes.set(id, reply.ok ? num(reply.doc.size) || 0 : 0);
    }
    const ordered = [...sizes.entries()].sort((a, b) => a[1] - b[1]);
    const [least, most] = [ordered[0], ordered[ordered.length - 1]];
    if (!least || !most || most[1] - least[1] < threshold) return;
    const release = await router.gates.exclusive(table.ns);
    try {
      let current = router.tableOf(table.ns)!;
      let owned = current.rangesOf(most[0]);
      if (owned.length === 1) {
        const [db, coll] = [table.ns.slice(0, dot), table.ns.slice(dot + 1)];
        const reply = await router.shard(most[0]).client.command(db, {
          _shardsvrSplitPoint: coll,
          min: current.pattern.documentOf(owned[0]!.min),
          max: current.pattern.documentOf(owned[0]!.max),
        });
        const point = (reply.splitKeys as Record<string, unknown>[])[0];
        if (!point) return;
        await splitChunk(router, current, current.pattern.tupleOf(point));
        current = router.tableOf(table.ns)!;
        owned = current.rangesOf(most[0]);
      }
      await moveChunk(router, table.ns, owned[0]!, least[0], false);
    } finally {
      release();
    }
  }
}

const states = new WeakMap<Router, BalancerState>();

export function balancerState(router: Router): BalancerState {
  let state = states.get(router);
  if (!state) states.set(router, (state = new BalancerState(router)));
  return state;
}

/** Starts the balancer's timer (its rounds do nothing while it is off). */
export function startBalancer(router: Router): void {
  const state = balancerState(router);
  void findAll(router.config, 'config', 'settings', { _id: 'balancer' }).then(
    (docs) => {
      if (docs[0]?.mode === 'full') state.mode = 'full';
    },
    () => undefined,
  );
  const timer = setInterval(() => void state.runRound().catch(() => undefined), router.options.balancerIntervalMs ?? 10_000);
  timer.unref();
  router.stopping.signal.addEventListener('abort', () => clearInterval(timer));
}
