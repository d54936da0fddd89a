/**
 * Which shards a command goes to. An unsharded collection lives on its database's primary shard.
 * On a sharded collection, a query that fixes the whole shard key by equality (or `$in`) goes to
 * the shards owning those keys (targeted); any other query goes to every shard owning a chunk
 * (broadcast). Versioned commands carry the routing table's `shardVersion`, so that shards filter
 * out documents they hold but do not own.
 */
import { BSON } from 'bson';
import { promoted, serialize } from '../raw.js';
import type { RoutingTable } from '../sharding/routing-table.js';
import type { RouterContext } from './commands.js';

export interface Target {
  /** The routing table of a sharded collection. */
  table?: RoutingTable;
  /** Shards to send to, in shard-id order. */
  shards: string[];
  /** The query fixes the shard key: these shards are all that can hold matches. */
  targeted: boolean;
}

/** The shards `filter` on `ns` concerns; `create`: an unsharded collection's database may be created. */
export async function targetQuery(
  ctx: RouterContext,
  ns: string,
  filter: Record<string, unknown> | undefined,
  create = false,
): Promise<Target> {
  const table = ctx.router.tableOf(ns);
  if (!table) {
    const primary = await ctx.router.primaryOf(ns.slice(0, ns.indexOf('.')), create);
    return { shards: primary ? [primary.id] : [], targeted: true };
  }
  const keys = table.pattern.keysOfQuery(filter);
  if (!keys) return { table, shards: table.shards(), targeted: false };
  return { table, shards: [...new Set(keys.map((k) => table.shardOf(k)))].sort(), targeted: true };
}

/** `{shardVersion}` for a sharded collection's commands, nothing otherwise. */
export function versionFields(ctx: RouterContext, table: RoutingTable | undefined): Record<string, unknown> {
  return table ? { shardVersion: ctx.router.shardVersion(table) } : {};
}

/** A value decoded with types kept, as the promoted values query code expects. */
export function promote<T>(value: T): T {
  if (value === null || typeof value !== 'object') return value;
  return (BSON.deserialize(serialize({ v: value }), promoted) as { v: T }).v;
}
