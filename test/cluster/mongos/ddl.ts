/**
 * Catalog commands through the router. An unsharded collection's commands go to its database's
 * primary shard. A sharded collection exists on every shard: its DDL (createIndexes, dropIndexes,
 * collMod, drop) runs on all of them — on the primary shard as the client's write, on the others
 * as participants (`fromMigrate` in their oplogs, as mongod's DDL coordinators write them), so
 * that a change stream through the router reports each change once. Listings come from the
 * primary shard; `listDatabases`, `dbStats` and `collStats` add up what the shards report.
 */
import { Long } from 'bson';
import { ServerError } from '../errors.js';
import type { Reply } from '../sharding/node-client.js';
import { type RouterContext, type RouterReply, defineRouterCommand, collectionArg } from './commands.js';
import { clientFields, passOn, runOnShard } from './forward.js';
import { MergedCursor, readCursorReply, sourceOf } from './merge-cursor.js';
import { openRouterCursor } from './cursor-commands.js';
import { checkNamespace, num, type Router } from './router.js';

/** A shard's reply passed on as the router's (its cluster time fields dropped). */
export /**
 * Runs a DDL command on a collection: its primary shard (the reply), and for a sharded
 * collection every other shard too, as a participant.
 */
async function runDdl(ctx: RouterContext, ns: string, body: Record<string, unknown>, create: boolean): Promise<Reply | undefined> {
  const primary = await ctx.router.primaryOf(ctx.db, create);
  if (!primary) return undefined;
  const table = ctx.router.tableOf(ns);
  const reply = await runOnShard(ctx, primary.id, body);
  if (table && reply.ok) {
    const others = ctx.router.shardIds().filter((id) => id !== primary.id);
    await Promise.all(others.map((id) => runOnShard(ctx, id, { ...body, $fromMigrate: true })));
  }
  return reply;
}

for (const command of ['create', 'createIndexes', 'dropIndexes', 'collMod']) {
  defineRouterCommand({
    name: command,
    handler: async (ctx) => {
      const ns = `${ctx.db}.${collectionArg(ctx, command)}`;
      if (ctx.db === 'admin' || ctx.db === 'config') {
        return passOn(await ctx.router.config.run(ctx.db, clientFields(ctx)));
      }
      const release = await ctx.router.gates.write(ns);
      try {
        const reply = await runDdl(ctx, ns, clientFields(ctx), command !== 'dropIndexes' && command !== 'collMod');
        if (!reply) throw new ServerError('NamespaceNotFound', `ns does not exist: ${ns}`);
        return passOn(reply);
      } finally {
        release();
      }
    },
  });
}

/** Removes a collection's sharding metadata from the config server and every cache. */
async function forgetSharding(router: Router, ns: string): Promise<void> {
  const table = router.tableOf(ns);
  if (!table) return;
  await router.config.command('config', { delete: 'chunks', deletes: [{ q: { uuid: table.info.uuid }, limit: 0 }] });
  await router.config.command('config', { delete: 'collections', deletes: [{ q: { _id: ns }, limit: 0 }] });
  await Promise.all(router.shardIds().map((id) => router.shard(id).client.command('admin', { _flushRoutingTableCacheUpdates: ns })));
  await router.refreshCollection(ns);
}

defineRouterCommand({
  name: 'drop',
  handler: async (ctx) => {
    const ns = `${ctx.db}.${collectionArg(ctx, 'drop')}`;
    const release = await ctx.router.gates.exclusive(ns);
    try {
      const reply = await runDdl(ctx, ns, clientFields(ctx), false);
      if (!reply) return { ns };
      const result = passOn(reply);
      await forgetSharding(ctx.router, ns);
      return result;
    } finally {
      release();
    }
  },
});

defineRouterCommand({
  name: 'dropDatabase',
  handler: async (ctx) => {
    if (ctx.db === 'admin' || ctx.db === 'config' || ctx.db === 'local') {
      throw new ServerError('IllegalOperation', `Dropping the '${ctx.db}' database is prohibited.`);
    }
    const router = ctx.router;
    const entry = await router.database(ctx.db, false);
    if (!entry) return {};
    const reply = await runOnShard(ctx, entry.primary, clientFields(ctx));
    if (!reply.ok) throw reply.error();
    const others = router.shardIds().filter((id) => id !== entry.primary);
    await Promise.all(others.map((id) => runOnShard(ctx, id, { ...clientFields(ctx), $fromMigrate: true })));
    for (const ns of [...router.tables.keys()].filter((n) => n.startsWith(`${ctx.db}.`))) await forgetSharding(router, ns);
    await router.config.command('config', { delete: 'databases', deletes: [{ q: { _id: ctx.db }, limit: 1 }] });
    router.databases.delete(ctx.db);
    return {};
  },
});

defineRouterCommand({
  name: 'renameCollection',
  adminOnly: true,
  handler: async (ctx) => {
    const [fromDb] = checkNamespace(ctx.body.renameCollection, 'renameCollection');
    const [toDb] = checkNamespace(ctx.body.to, 'renameCollection');
    const router = ctx.router;
    const fromNs = String(ctx.body.renameCollection);
    const toNs = String(ctx.body.to);
    if (router.tableOf(toNs)) throw new ServerError('IllegalOperation', `Cannot rename to a sharded collection: ${toNs}`);
    if (router.tableOf(fromNs)) {
      if (fromDb !== toDb)
        throw new ServerError('IllegalOperation', 'The test cluster renames sharded collections within their database only');
      return renameSharded(ctx, fromDb, fromNs, toNs);
    }
    const from = await router.database(fromDb, false);
    if (!from) throw new ServerError('NamespaceNotFound', `Source collection ${String(ctx.body.renameCollection)} does not exist`);
    const to = await router.database(toDb, true);
    if (to && to.primary !== from.primary) {
      throw new ServerError('IllegalOperation', `Source and destination collections must be on the same database primary shard`);
    }
    return passOn(await runOnShard(ctx, from.primary, clientFields(ctx), [], 'admin'));
  },
});

/**
 * Renames a sharded collection (5.0+), as mongod's rename coordinator does: every shard renames its
 * part, the primary shard as the client's write and the others as participants (`fromMigrate`),
 * so a change stream reports one rename, from the primary shard; the collection keeps its UUID and
 * chunks, and its `config.collections` entry moves to the new name.
 */
async function renameSharded(ctx: RouterContext, db: string, fromNs: string, toNs: string): Promise<RouterReply> {
  const router = ctx.router;
  const releases = [await router.gates.exclusive(fromNs), await router.gates.exclusive(toNs)];
  try {
    const primary = await router.primaryOf(db, false);
    if (!primary) throw new ServerError('NamespaceNotFound', `Source collection ${fromNs} does not exist`);
    const reply = await runOnShard(ctx, primary.id, clientFields(ctx), [], 'admin');
    if (!reply.ok) return passOn(reply);
    const others = router.shardIds().filter((id) => id !== primary.id);
    await Promise.all(others.map((id) => runOnShard(ctx, id, { ...clientFields(ctx), $fromMigrate: true }, [], 'admin')));
    const found = await router.config.command('config', { find: 'collections', filter: { _id: fromNs } });
    const entry = ((found.cursor as { firstBatch: Record<string, unknown>[] }).firstBatch ?? [])[0];
    if (entry !== undefined) {
      await router.config.command('config', { insert: 'collections', documents: [{ ...entry, _id: toNs }] });
      await router.config.command('config', { delete: 'collections', deletes: [{ q: { _id: fromNs }, limit: 1 }] });
    }
    for (const ns of [fromNs, toNs]) {
      await Promise.all(router.shardIds().map((id) => router.shard(id).client.command('admin', { _flushRoutingTableCacheUpdates: ns })));
      await router.refreshCollection(ns);
    }
    return passOn(reply);
  } finally {
    for (const release of releases.reverse()) release();
  }
}

/** A listing cursor served by one shard, passed through. */
async function listOn(ctx: RouterContext, shard: string): Promise<RouterReply> {
  const reply = await runOnShard(ctx, shard, clientFields(ctx));
  if (!reply.ok) throw reply.error();
  const batch = readCursorReply(reply.raw);
  const cursor = new MergedCursor(ctx, batch.ns, [sourceOf(shard, batch)]);
  return openRouterCursor(ctx, cursor, { batchSize: batch.docs.length });
}

defineRouterCommand({
  name: 'listCollections',
  handler: async (ctx) => {
    if (ctx.db === 'admin' || ctx.db === 'config') return passOn(await ctx.router.config.run(ctx.db, clientFields(ctx)));
    const primary = await ctx.router.primaryOf(ctx.db, false);
    if (!primary) return { cursor: { firstBatch: [], id: Long.fromNumber(0), ns: `${ctx.db}.$cmd.listCollections` } };
    return listOn(ctx, primary.id);
  },
});

defineRouterCommand({
  name: 'listIndexes',
  handler: async (ctx) => {
    const ns = `${ctx.db}.${collectionArg(ctx, 'listIndexes')}`;
    if (ctx.db === 'admin' || ctx.db === 'config') return passOn(await ctx.router.config.run(ctx.db, clientFields(ctx)));
    const primary = await ctx.router.primaryOf(ctx.db, false);
    if (!primary) throw new ServerError('NamespaceNotFound', `ns does not exist: ${ns}`);
    return listOn(ctx, primary.id);
  },
});

defineRouterCommand({
  name: 'listDatabases',
  handler: async (ctx) => {
    const router = ctx.router;
    const body = clientFields(ctx);
    const replies = await Promise.all(router.shardIds().map((id) => runOnShard(ctx, id, body, [], 'admin').then((r) => [id, r] as const)));
    const configReply = await router.config.run('admin', body);
    const byName = new Map<string, { name: string; sizeOnDisk: number; empty: boolean; shards: Record<string, number> }>();
    const add = (source: string, dbs: Record<string, unknown>[], only?: Set<string>) => {
      for (const d of dbs) {
        const name = String(d.name);
        if (only ? !only.has(name) : name === 'admin' || name === 'config' || name === 'local') continue;
        const size = num(d.sizeOnDisk) || 0;
        const entry = byName.get(name) ?? { name, sizeOnDisk: 0, empty: true, shards: {} };
        entry.sizeOnDisk += size;
        entry.empty = entry.empty && d.empty === true;
        entry.shards[source] = size;
        byName.set(name, entry);
      }
    };
    for (const [id, reply] of replies) add(id, passOn(reply).databases as Record<string, unknown>[]);
    add('config', passOn(configReply).databases as Record<string, unknown>[], new Set(['admin', 'config']));
    const databases = [...byName.values()].sort((a, b) => (a.name < b.name ? -1 : 1));
    if (ctx.body.nameOnly === true) return { databases: databases.map((d) => ({ name: d.name })) };
    const totalSize = databases.reduce((n, d) => n + d.sizeOnDisk, 0);
    return { databases, totalSize, totalSizeMb: Math.floor(totalSize / (1024 * 1024)) };
  },
});

/** Adds the numeric fields of shard statistics together. */
function sumStats(replies: Record<string, unknown>[], fields: string[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const field of fields) out[field] = replies.reduce((n, r) => n + (num(r[field]) || 0), 0);
  return out;
}

defineRouterCommand({
  name: 'dbStats',
  handler: async (ctx) => {
    const router = ctx.router;
    const entries = await Promise.all(
      router.shardIds().map(async (id) => [id, passOn(await runOnShard(ctx, id, clientFields(ctx)))] as const),
    );
    const raw: Record<string, unknown> = {};
    for (const [id, stats] of entries) raw[`${id}/${router.shard(id).address}`] = stats;
    const sums = sumStats(
      entries.map(([, s]) => s),
      ['collections', 'views', 'objects', 'dataSize', 'storageSize', 'indexes', 'indexSize', 'totalSize'],
    );
    return { raw, db: ctx.db, ...sums, avgObjSize: sums.objects ? sums.dataSize / sums.objects : 0, scaleFactor: num(ctx.body.scale) || 1 };
  },
});

defineRouterCommand({
  name: 'collStats',
  handler: async (ctx) => {
    const ns = `${ctx.db}.${collectionArg(ctx, 'collStats')}`;
    const router = ctx.router;
    const table = router.tableOf(ns);
    if (!table) {
      const primary = await router.primaryOf(ctx.db, false);
      if (!primary) throw new ServerError('NamespaceNotFound', `Collection [${ns}] not found.`);
      return { sharded: false, primary: primary.id, ...passOn(await runOnShard(ctx, primary.id, clientFields(ctx))) };
    }
    const entries = await Promise.all(
      router.shardIds().map(async (id) => [id, passOn(await runOnShard(ctx, id, clientFields(ctx)))] as const),
    );
    const shards: Record<string, unknown> = {};
    for (const [id, stats] of entries) shards[id] = stats;
    const sums = sumStats(
      entries.map(([, s]) => s),
      ['count', 'size', 'storageSize', 'totalIndexSize', 'totalSize'],
    );
    const indexSizes: Record<string, number> = {};
    for (const [, stats] of entries) {
      for (const [name, size] of Object.entries((stats.indexSizes ?? {}) as Record<string, unknown>))
        indexSizes[name] = (indexSizes[name] ?? 0) + num(size);
    }
    return {
      sharded: true,
      ns,
      ...sums,
      avgObjSize: sums.count ? Math.floor(sums.size / sums.count) : 0,
      nindexes: entries[0] ? num(entries[0][1].nindexes) : 0,
      indexSizes,
      nchunks: table.chunks.length,
      shards,
    };
  },
});
