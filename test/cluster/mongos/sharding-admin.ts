/**
 * Sharding administration through the router: `addShard`, `listShards`, `enableSharding`,
 * `shardCollection` (ranged, hashed and compound keys, `unique`, `collation: {locale: 'simple'}`,
 * an empty collection with a hashed key presplit into chunks spread over the shards), `split`,
 * `moveChunk`, `moveRange`, `balancerStart` / `balancerStop` / `balancerStatus`,
 * `flushRouterConfig`. Metadata lives in the config server's `config` database in MongoDB 8.0's
 * shapes: `config.shards`, `config.databases`, `config.collections`, `config.chunks` (by
 * collection UUID, with `min`, `max`, `shard`, `lastmod`, `history`), `config.settings`.
 */
import { Long, ObjectId, Timestamp } from 'bson';
import { ServerError } from '../errors.js';
import { shardingError } from '../sharding/errors.js';
import { findAll } from '../sharding/config-reads.js';
import { uuidOf } from '../sharding/routing-table.js';
import { MIN_KEY, ShardKeyPattern, type KeyTuple, compareTuples } from '../sharding/shard-key.js';
import { type RouterContext, defineRouterCommand } from './commands.js';
import { checkNamespace, num, type Router } from './router.js';
import { chunkForRange, moveChunk, requireShard, splitChunk } from './migration.js';
import { balancerState } from './balancer.js';

defineRouterCommand({
  name: 'addShard',
  adminOnly: true,
  handler: async (ctx) => {
    const router = ctx.router;
    const connectionString = ctx.body.addShard;
    if (typeof connectionString !== 'string' || !connectionString.includes('/')) {
      throw new ServerError('BadValue', "addShard needs a replica set connection string: '<setName>/<host:port>'");
    }
    const setName = connectionString.slice(0, connectionString.indexOf('/'));
    const address = connectionString.slice(connectionString.indexOf('/') + 1).split(',')[0]!;
    const id = typeof ctx.body.name === 'string' ? ctx.body.name : setName;
    const existing = router.shards.get(id);
    if (existing) {
      if (existing.address === address) return { shardAdded: id };
      throw new ServerError('IllegalOperation', `A shard named ${id} already exists`);
    }
    const client = router.client(address);
    try {
      const hello = await client.command('admin', { hello: 1 });
      if (hello.setName !== setName) {
        throw new ServerError(
          'OperationFailed',
          `in seed list ${connectionString}, host ${address} does not belong to replica set ${setName}`,
        );
      }
      let version = (await findAll(router.config, 'config', 'version'))[0];
      if (!version) {
        await router.config.command('config', { insert: 'version', documents: [{ _id: 1, clusterId: new ObjectId() }] });
        version = (await findAll(router.config, 'config', 'version'))[0]!;
      }
      await client.command('admin', {
        _addShard: 1,
        shardIdentity: { shardName: id, clusterId: version.clusterId, configsvrConnectionString: router.options.configdb },
      });
      // The databases the shard already holds become the cluster's, with it as their primary.
      const listed = (await client.command('admin', { listDatabases: 1, nameOnly: true })).databases as { name: string }[];
      for (const { name } of listed) {
        if (name === 'admin' || name === 'config' || name === 'local' || router.databases.has(name)) continue;
        await router.database(name, true, id);
      }
      await router.config.command('config', {
        insert: 'shards',
        documents: [{ _id: id, host: connectionString, state: 1, topologyTime: router.clock.tick() }],
      });
      await router.refresh();
    } finally {
      client.close();
    }
    return { shardAdded: id };
  },
});

defineRouterCommand({
  name: 'listShards',
  adminOnly: true,
  handler: async ({ router }) => ({ shards: await findAll(router.config, 'config', 'shards', {}, { _id: 1 }) }),
});

defineRouterCommand({
  name: 'enableSharding',
  aliases: ['enablesharding'],
  adminOnly: true,
  handler: async (ctx) => {
    const db = ctx.body.enableSharding ?? ctx.body.enablesharding;
    if (typeof db !== 'string' || db.length === 0 || db.includes('.'))
      throw new ServerError('InvalidNamespace', `invalid db name specified: ${String(db)}`);
    if (db === 'admin' || db === 'local') throw new ServerError('InvalidOptions', `can't shard ${db} database`);
    const primary = ctx.body.primaryShard === undefined ? undefined : requireShard(ctx.router, ctx.body.primaryShard);
    const entry = await ctx.router.database(db, true, primary);
    if (primary && entry!.primary !== primary) {
      throw shardingError('ConflictingOperationInProgress', `database ${db} already exists with primary shard ${entry!.primary}`);
    }
    return {};
  },
});

/** mongod's split points of an empty collection with a hashed key (InitialSplitPolicy). */
function hashedSplitPoints(chunks: number): Long[] {
  const max = 2n ** 63n - 1n;
  const interval = (max / BigInt(chunks)) * 2n;
  const points: bigint[] = [];
  let current = 0n;
  if (chunks % 2 === 0) {
    points.push(0n);
    current += interval;
  } else {
    current += interval / 2n;
  }
  for (let i = 0; i < Math.floor((chunks - 1) / 2); i++) {
    points.push(current, -current);
    current += interval;
  }
  return points.sort((a, b) => (a < b ? -1 : a > b ? 1 : 0)).map((p) => Long.fromBigInt(p));
}

defineRouterCommand({
  name: 'shardCollection',
  aliases: ['shardcollection'],
  adminOnly: true,
  handler: async (ctx) => {
    const router = ctx.router;
    const nsValue = ctx.body.shardCollection ?? ctx.body.shardcollection;
    const [db, coll] = checkNamespace(nsValue, 'shardCollection');
    const ns = `${db}.${coll}`;
    if (db === 'admin' || db === 'local' || db === 'config') throw new ServerError('IllegalOperation', `can't shard ${ns}`);
    const key = ctx.body.key as Record<string, unknown>;
    const pattern = ShardKeyPattern.parse(key);
    const unique = ctx.body.unique === true;
    if (unique && pattern.hashed)
      throw new ServerError(
        'InvalidOptions',
        'Hashed shard keys cannot be declared unique. It is possible to ensure uniqueness on other fields using a unique index.',
      );
    const collation = ctx.body.collation as Record<string, unknown> | undefined;
    if (collation !== undefined && !(Object.keys(collation).length === 1 && collation.locale === 'simple')) {
      throw new ServerError('BadValue', "The collation for shardCollection must be {locale: 'simple'}, if specified");
    }
    const existing = router.tableOf(ns);
    if (existing) {
      if (JSON.stringify(existing.info.key) === JSON.stringify(pattern.pattern))
        return { collectionsharded: ns, collectionUUID: existing.info.uuid };
      throw shardingError(
        'AlreadyInitialized',
        `sharding already enabled for collection ${ns} with options { key: ${JSON.stringify(existing.info.key)} }`,
      );
    }
    const database = (await router.database(db, true))!;
    const release = await router.gates.exclusive(ns);
    try {
      const primary = router.shard(database.primary);
      const created = await primary.client.command(db, {
        _shardsvrShardCollection: coll,
        key,
        unique,
        ...(collation ? { collation } : {}),
      });
      const uuid = uuidOf(created.uuid);
      const shardIds = router.shardIds();
      await Promise.all(
        shardIds
          .filter((id) => id !== primary.id)
          .map((id) =>
            router
              .shard(id)
              .client.command(db, { _shardsvrCreateCollectionParticipant: coll, uuid, options: created.options, indexes: created.indexes }),
          ),
      );
      const timestamp = router.clock.tick();
      const bounds: KeyTuple[] = [pattern.minTuple()];
      const owners: string[] = [];
      if (created.empty === true && pattern.fields[0]!.hashed) {
        const count = num(ctx.body.numInitialChunks) || 2 * shardIds.length;
        const rest = pattern.fields.slice(1).map(() => MIN_KEY);
        for (const point of hashedSplitPoints(count)) bounds.push([point, ...rest]);
        for (let i = 0; i < count; i++) owners.push(shardIds[Math.floor((i * shardIds.length) / count)]!);
      } else {
        owners.push(primary.id);
      }
      bounds.push(pattern.maxTuple());
      const epoch = new ObjectId();
      await router.config.command('config', {
        insert: 'collections',
        documents: [{ _id: ns, lastmodEpoch: epoch, lastmod: new Date(), timestamp, uuid, key, unique, noBalance: false }],
      });
      await router.config.command('config', {
        insert: 'chunks',
        documents: owners.map((shard, i) => ({
          _id: new ObjectId(),
          uuid,
          min: pattern.documentOf(bounds[i]!),
          max: pattern.documentOf(bounds[i + 1]!),
          shard,
          lastmod: new Timestamp({ t: 1, i }),
          onCurrentShardSince: timestamp,
          history: [{ validAfter: timestamp, shard }],
        })),
      });
      await Promise.all(shardIds.map((id) => router.shard(id).client.command('admin', { _flushRoutingTableCacheUpdates: ns })));
      await primary.client.command(db, {
        _shardsvrNotifyShardCollection: coll,
        uuid,
        description: {
          shardKey: key,
          unique,
          presplitHashedZones: ctx.body.presplitHashedZones === true,
          ...(collation ? { collation } : {}),
        },
      });
      await router.refreshCollection(ns);
      return { collectionsharded: ns, collectionUUID: uuid };
    } finally {
      release();
    }
  },
});

/** The sharded collection a command names (its first field). */
function shardedTable(ctx: RouterContext, name: string) {
  const [db, coll] = checkNamespace(ctx.body[name], name);
  const table = ctx.router.tableOf(`${db}.${coll}`);
  if (!table) throw shardingError('NamespaceNotSharded', `${db}.${coll} is not sharded`);
  return table;
}

/** A bound given as a key document, as a tuple (every shard-key field, nothing else). */
function boundOf(table: ReturnType<typeof shardedTable>, doc: unknown, field: string): KeyTuple {
  if (typeof doc !== 'object' || doc === null) throw new ServerError('BadValue', `${field} must be a shard key document`);
  const keys = Object.keys(doc);
  const wanted = table.pattern.fields.map((f) => f.path);
  if (keys.length !== wanted.length || wanted.some((w) => !keys.includes(w))) {
    throw new ServerError('BadValue', `${field} ${JSON.stringify(doc)} is not a shard key of pattern ${JSON.stringify(table.info.key)}`);
  }
  return table.pattern.tupleOf(doc as Record<string, unknown>);
}

/** The key a `find` query of split/moveChunk designates (its whole shard key, hashed as needed). */
function keyOfFind(table: ReturnType<typeof shardedTable>, find: unknown): KeyTuple {
  const keys = table.pattern.keysOfQuery(find as Record<string, unknown>);
  if (!keys || keys.length !== 1) throw shardingError('ShardKeyNotFound', `no shard key found in chunk query ${JSON.stringify(find)}`);
  return keys[0]!;
}

defineRouterCommand({
  name: 'split',
  adminOnly: true,
  handler: async (ctx) => {
    const router = ctx.router;
    const table = shardedTable(ctx, 'split');
    const release = await router.gates.exclusive(table.ns);
    try {
      let at: KeyTuple;
      if (ctx.body.middle !== undefined) {
        at = boundOf(table, ctx.body.middle, 'middle');
      } else {
        const chunk =
          ctx.body.find !== undefined
            ? table.chunkOf(keyOfFind(table, ctx.body.find))
            : table.chunkOf(boundOf(table, (ctx.body.bounds as unknown[])?.[0], 'bounds'));
        const [db, coll] = checkNamespace(table.ns, 'split');
        const reply = await router.shard(chunk.shard).client.command(db, {
          _shardsvrSplitPoint: coll,
          min: table.pattern.documentOf(chunk.min),
          max: table.pattern.documentOf(chunk.max),
        });
        const points = reply.splitKeys as Record<string, unknown>[];
        if (points.length === 0) throw new ServerError('CannotSplit' as never, 'chunk has no split point (too few distinct keys)');
        at = table.pattern.tupleOf(points[0]!);
      }
      const chunk = table.chunkOf(at);
      if (compareTuples(chunk.min, at) === 0) {
        throw new ServerError(
          'InvalidOptions',
          `cannot split chunk at ${JSON.stringify(table.pattern.documentOf(at))}: it is already a boundary`,
        );
      }
      await splitChunk(router, table, at);
      return {};
    } finally {
      release();
    }
  },
});

defineRouterCommand({
  name: 'moveChunk',
  aliases: ['movechunk'],
  adminOnly: true,
  handler: async (ctx) => {
    const router = ctx.router;
    const table = shardedTable(ctx, Object.keys(ctx.body)[0]!);
    const to = requireShard(router, ctx.body.to);
    let chunk;
    if (ctx.body.find !== undefined) chunk = table.chunkOf(keyOfFind(table, ctx.body.find));
    else if (Array.isArray(ctx.body.bounds)) {
      const [min, max] = ctx.body.bounds;
      chunk = table.exactChunk(boundOf(table, min, 'bounds'), boundOf(table, max, 'bounds'));
      if (!chunk) throw new ServerError('InvalidOptions', 'bounds do not match a chunk');
    } else throw new ServerError('InvalidOptions', 'need either find or bounds');
    const release = await router.gates.exclusive(table.ns);
    try {
      await moveChunk(
        router,
        table.ns,
        router.tableOf(table.ns)!.chunkOf(chunk.min),
        to,
        ctx.body._waitForDelete === true || ctx.body.waitForDelete === true,
      );
    } finally {
      release();
    }
    return { millis: 0 };
  },
});

defineRouterCommand({
  name: 'moveRange',
  adminOnly: true,
  handler: async (ctx) => {
    const router = ctx.router;
    const table = shardedTable(ctx, 'moveRange');
    const to = requireShard(router, ctx.body.toShard);
    if (ctx.body.min === undefined) throw new ServerError('IDLFailedToParse', "BSON field 'moveRange.min' is missing but a required field");
    const min = boundOf(table, ctx.body.min, 'min');
    const max = ctx.body.max === undefined ? undefined : boundOf(table, ctx.body.max, 'max');
    const release = await router.gates.exclusive(table.ns);
    try {
      const chunk = await chunkForRange(router, table.ns, min, max);
      await moveChunk(router, table.ns, chunk, to, ctx.body._waitForDelete === true || ctx.body.waitForDelete === true);
    } finally {
      release();
    }
    return {};
  },
});

defineRouterCommand({
  name: 'balancerStart',
  adminOnly: true,
  handler: async ({ router }) => {
    await setBalancerMode(router, 'full');
    return {};
  },
});

defineRouterCommand({
  name: 'balancerStop',
  adminOnly: true,
  handler: async ({ router }) => {
    await setBalancerMode(router, 'off');
    // The round under way, if any, finishes first (mongod waits for it too).
    await balancerState(router).idle();
    return {};
  },
});

async function setBalancerMode(router: Router, mode: 'full' | 'off'): Promise<void> {
  await router.config.command('config', {
    update: 'settings',
    updates: [{ q: { _id: 'balancer' }, u: { $set: { mode, stopped: mode === 'off' } }, upsert: true }],
  });
  balancerState(router).mode = mode;
}

defineRouterCommand({
  name: 'balancerStatus',
  adminOnly: true,
  handler: ({ router }) => {
    const state = balancerState(router);
    return { mode: state.mode, inBalancerRound: state.inRound, numBalancerRounds: Long.fromNumber(state.rounds) };
  },
});

defineRouterCommand({
  name: 'flushRouterConfig',
  aliases: ['flushrouterconfig'],
  adminOnly: true,
  handler: async ({ router }) => {
    await router.refresh();
    return { flushed: true };
  },
});
