/**
 * The internal commands a shard serves to the router and to other shards (mongod has its own
 * `_shardsvr*`, `_recvChunk*` and `_migrateClone` family; these are the test cluster's, named
 * alike, doing the same steps):
 *  - `_addShard`: the shard's identity (name, cluster id, config server), from `addShard`;
 *  - `_flushRoutingTableCacheUpdates`: reload a collection's routing table from the config server;
 *  - `_shardsvrShardCollection` (primary shard): check or create the collection and its shard key
 *    index; `_shardsvrCreateCollectionParticipant` (other shards): the same collection, same UUID;
 *    `_shardsvrNotifyShardCollection`: the no-op that change streams report as `shardCollection`;
 *  - migrations: `_migrateCloneRange` (donor: copies a range's documents to the recipient),
 *    `_migrateRecvStart` / `_migrateRecvDocs` / `_migrateRecvCommit` / `_migrateRecvAbort`
 *    (recipient), `_migrateDonorCommit` (donor: the range becomes orphans, deleted after
 *    `orphanCleanupDelaySecs`, or at once with `waitForDelete`), `_shardsvrSplitPoint`;
 *  - `cleanupOrphaned` and `setParameter {orphanCleanupDelaySecs}`, as on mongod.
 * Every write these make is a migration write (`fromMigrate`), hidden from change streams.
 */
import { BSON, type ObjectId, type UUID } from 'bson';
import { defineCommand, type CommandContext } from '../commands/registry.js';
import { ServerError } from '../errors.js';
import type { Instance, OpContext } from '../instance.js';
import { prepareForInsert, typed } from '../raw.js';
import type { Collection } from '../storage/collection.js';
import type { IndexSpec } from '../storage/indexes.js';
import { storeInternal } from '../storage/system-collections.js';
import { shardingError } from './errors.js';
import { uuidOf } from './routing-table.js';
import { MIGRATION_OP, type ShardState, shardStateOf, splitNs } from './shard-state.js';
import { ShardKeyPattern, compareTuples, type KeyTuple } from './shard-key.js';

/** Bytes of documents per batch a donor sends a recipient. */
const CLONE_BATCH_BYTES = 4 * 1024 * 1024;

function stateOf(ctx: CommandContext, name: string): ShardState {
  const state = shardStateOf(ctx.instance);
  if (!state) throw new ServerError('IllegalOperation', `${name} can only run on shard servers`);
  return state;
}

/** The body decoded with BSON types kept (chunk bounds may be int64 hashes). */
function typedBody(ctx: CommandContext): Record<string, unknown> {
  return BSON.deserialize(ctx.raw, typed) as Record<string, unknown>;
}

function requireString(body: Record<string, unknown>, field: string): string {
  const value = body[field];
  if (typeof value !== 'string') throw new ServerError('TypeMismatch', `BSON field '${field}' is the wrong type, expected type 'string'`);
  return value;
}

function liveCollection(instance: Instance, ns: string): Collection | undefined {
  const [db, name] = splitNs(ns);
  const found = instance.catalog.get(db, name);
  if (found?.kind === 'view') throw new ServerError('CommandNotSupportedOnView', `Namespace ${ns} is a view, not a collection`);
  return found;
}

/** Adds the indexes of `specs` a collection lacks, recording them as `op` says. */
function ensureIndexes(instance: Instance, op: OpContext, collection: Collection, specs: IndexSpec[]): void {
  for (const spec of specs) {
    if (collection.findIndex(spec.name)) continue;
    collection.addIndex(spec);
    instance.record(op, {
      op: 'c',
      ns: `${collection.db}.$cmd`,
      ui: collection.uuid,
      o: { createIndexes: collection.name, ...spec },
      size: 128,
    });
  }
}

/** The collection of a sharded namespace on a participant shard: created with the given UUID. */
function ensureCollection(instance: Instance, ns: string, uuid: UUID, options: Record<string, unknown>, indexes: IndexSpec[]): Collection {
  const [db, name] = splitNs(ns);
  let collection = liveCollection(instance, ns);
  if (collection && !collection.uuid.equals(uuid)) {
    if (collection.count > 0) {
      throw new ServerError('InvalidUUID', `Collection ${ns} exists on this shard with another UUID (${collection.uuid.toHexString()})`);
    }
    instance.catalog.remove(db, name);
    collection = undefined;
  }
  collection ??= instance.createCollection(MIGRATION_OP, db, name, options, uuid);
  ensureIndexes(instance, MIGRATION_OP, collection, indexes);
  return collection;
}

defineCommand({
  name: '_addShard',
  adminOnly: true,
  handler: (ctx) => {
    const state = stateOf(ctx, '_addShard');
    const identity = ctx.body.shardIdentity as
      { shardName?: unknown; clusterId?: unknown; configsvrConnectionString?: unknown } | undefined;
    if (typeof identity?.shardName !== 'string' || typeof identity.configsvrConnectionString !== 'string') {
      throw new ServerError('BadValue', '_addShard needs shardIdentity {shardName, clusterId, configsvrConnectionString}');
    }
    if (state.shardName !== undefined && state.shardName !== identity.shardName) {
      throw new ServerError('IllegalOperation', `this shard is already ${state.shardName}`);
    }
    const clusterId = identity.clusterId as ObjectId;
    state.setIdentity(identity.shardName, clusterId, identity.configsvrConnectionString);
    const version = ctx.instance.catalog.collection('admin', 'system.version');
    if (version && !version.get('shardIdentity')) {
      storeInternal(version, {
        _id: 'shardIdentity',
        shardName: identity.shardName,
        clusterId,
        configsvrConnectionString: identity.configsvrConnectionString,
      });
    }
    return {};
  },
});

defineCommand({
  name: '_flushRoutingTableCacheUpdates',
  adminOnly: true,
  handler: async (ctx) => {
    const state = stateOf(ctx, '_flushRoutingTableCacheUpdates');
    const ns = ctx.body._flushRoutingTableCacheUpdates;
    await state.refresh(typeof ns === 'string' ? ns : undefined);
    return {};
  },
});

/** Index specifications as listIndexes shows them. */
function indexSpecs(collection: Collection): IndexSpec[] {
  return collection.indexes.map((i) => ({ ...i.spec }));
}

/** The name mongod gives an index it creates for a shard key (`a_1_b_hashed`). */
function indexName(key: Record<string, unknown>): string {
  return Object.entries(key)
    .map(([field, kind]) => `${field}_${String(kind)}`)
    .join('_');
}

/** Whether an index can serve as the shard key index (its key starts with the shard key). */
function supportsShardKey(spec: IndexSpec, key: Record<string, unknown>): boolean {
  if (spec.partialFilterExpression !== undefined || spec.sparse === true || spec.hidden === true) return false;
  const fields = Object.entries(spec.key);
  const wanted = Object.entries(key);
  if (fields.length < wanted.length) return false;
  return wanted.every(
    ([field, kind], i) => fields[i]![0] === field && (kind === 'hashed' ? fields[i]![1] === 'hashed' : fields[i]![1] === 1),
  );
}

defineCommand({
  name: '_shardsvrShardCollection',
  handler: (ctx) => {
    stateOf(ctx, '_shardsvrShardCollection');
    const body = typedBody(ctx);
    const name = requireString(body, '_shardsvrShardCollection');
    const ns = `${ctx.db}.${name}`;
    const key = body.key as Record<string, unknown>;
    const unique = body.unique === true;
    const pattern = ShardKeyPattern.parse(key);
    let collection = liveCollection(ctx.instance, ns);
    collection ??= ctx.instance.createCollection(ctx.op, ctx.db, name);
    if (collection.capped) throw new ServerError('InvalidOptions', `can't shard a capped collection`);
    const existing = collection.indexes.find((i) => supportsShardKey(i.spec, key) && (!unique || i.spec.unique === true));
    if (!existing) {
      if (collection.count > 0) {
        throw new ServerError(
          'InvalidOptions',
          'Please create an index that starts with the proposed shard key before sharding the collection',
        );
      }
      const spec: IndexSpec = { v: 2, key, name: indexName(key), ...(unique ? { unique: true } : {}) };
      ctx.instance.assertWritable(ctx.op, ctx.db);
      ensureIndexes(ctx.instance, ctx.op, collection, [spec]);
    }
    // Every existing document must have a usable shard key (no arrays).
    for (const entry of collection.byRid.values()) pattern.keyOfRaw(entry.raw);
    const { capped: _capped, ...options } = collection.options;
    return { uuid: collection.uuid, options, indexes: indexSpecs(collection), count: collection.count, empty: collection.count === 0 };
  },
});

defineCommand({
  name: '_shardsvrCreateCollectionParticipant',
  handler: (ctx) => {
    stateOf(ctx, '_shardsvrCreateCollectionParticipant');
    const body = typedBody(ctx);
    const name = requireString(body, '_shardsvrCreateCollectionParticipant');
    ensureCollection(
      ctx.instance,
      `${ctx.db}.${name}`,
      uuidOf(body.uuid),
      (body.options ?? {}) as Record<string, unknown>,
      body.indexes as IndexSpec[],
    );
    return {};
  },
});

defineCommand({
  name: '_shardsvrNotifyShardCollection',
  handler: (ctx) => {
    stateOf(ctx, '_shardsvrNotifyShardCollection');
    const body = typedBody(ctx);
    const name = requireString(body, '_shardsvrNotifyShardCollection');
    const ns = `${ctx.db}.${name}`;
    ctx.instance.record(
      {},
      {
        op: 'n',
        ns,
        ui: uuidOf(body.uuid),
        o: { msg: { shardCollection: ns } },
        o2: { shardCollection: ns, ...(body.description as Record<string, unknown>) },
        size: 128,
      },
    );
    return {};
  },
});

/** A range of a migration request as key tuples, with the collection's table. */
function migrationRange(state: ShardState, body: Record<string, unknown>, ns: string) {
  const table = state.tables.get(ns);
  if (!table) throw shardingError('NamespaceNotSharded', `${ns} is not sharded on ${String(state.shardName)}`);
  const min = table.pattern.tupleOf(body.min as Record<string, unknown>);
  const max = table.pattern.tupleOf(body.max as Record<string, unknown>);
  return { table, min, max };
}

defineCommand({
  name: '_migrateCloneRange',
  handler: async (ctx) => {
    const state = stateOf(ctx, '_migrateCloneRange');
    const body = typedBody(ctx);
    const name = requireString(body, '_migrateCloneRange');
    const ns = `${ctx.db}.${name}`;
    const { table, min, max } = migrationRange(state, body, ns);
    const collection = liveCollection(ctx.instance, ns);
    if (!collection) throw new ServerError('NamespaceNotFound', `ns does not exist: ${ns}`);
    // The documents as they are now (the router holds writes to the collection meanwhile).
    const docs = state.documentsInRange(collection, table, min, max).map((e) => e.raw);
    const recipient = state.client(requireString(body, 'toHost'));
    const { capped: _capped, ...options } = collection.options;
    await recipient.command(ctx.db, {
      _migrateRecvStart: name,
      uuid: collection.uuid,
      options,
      indexes: indexSpecs(collection),
      min: body.min,
      max: body.max,
    });
    for (let at = 0; at < docs.length;) {
      const batch: Buffer[] = [];
      let bytes = 0;
      while (at < docs.length && (batch.length === 0 || bytes + docs[at]!.length <= CLONE_BATCH_BYTES)) {
        bytes += docs[at]!.length;
        batch.push(docs[at++]!);
      }
      await recipient.command(ctx.db, { _migrateRecvDocs: name }, [{ name: 'documents', docs: batch }]);
    }
    return { cloned: docs.length };
  },
});

defineCommand({
  name: '_migrateRecvStart',
  handler: (ctx) => {
    const state = stateOf(ctx, '_migrateRecvStart');
    const body = typedBody(ctx);
    const name = requireString(body, '_migrateRecvStart');
    const ns = `${ctx.db}.${name}`;
    const { table, min, max } = migrationRange(state, body, ns);
    const uuid = uuidOf(body.uuid);
    ensureCollection(ctx.instance, ns, uuid, (body.options ?? {}) as Record<string, unknown>, body.indexes as IndexSpec[]);
    // Orphans left in the range by an earlier migration go first (mongod waits for them).
    for (const task of state.rangeDeletions.filter((r) => r.ns === ns && overlaps(r.min, r.max, min, max))) state.runRangeDeletion(task);
    state.addRangeDeletion(ns, uuid, min, max, true, table.pattern);
    return {};
  },
});

function overlaps(aMin: KeyTuple, aMax: KeyTuple, bMin: KeyTuple, bMax: KeyTuple): boolean {
  return compareTuples(aMin, bMax) < 0 && compareTuples(bMin, aMax) < 0;
}

defineCommand({
  name: '_migrateRecvDocs',
  handler: (ctx) => {
    stateOf(ctx, '_migrateRecvDocs');
    const name = requireString(ctx.body, '_migrateRecvDocs');
    const collection = liveCollection(ctx.instance, `${ctx.db}.${name}`);
    if (!collection) throw new ServerError('NamespaceNotFound', `ns does not exist: ${ctx.db}.${name}`);
    const docs = ctx.sequences.get('documents') ?? [];
    for (const doc of docs) {
      const prepared = prepareForInsert(Buffer.from(doc));
      const present = collection.get(prepared.id);
      if (present) ctx.instance.updateDocument(MIGRATION_OP, collection, present, prepared.doc, undefined);
      else ctx.instance.insertDocument(MIGRATION_OP, collection, prepared.doc, prepared.id);
    }
    return { n: docs.length };
  },
});

defineCommand({
  name: '_migrateRecvCommit',
  handler: async (ctx) => {
    const state = stateOf(ctx, '_migrateRecvCommit');
    const body = typedBody(ctx);
    const ns = `${ctx.db}.${requireString(body, '_migrateRecvCommit')}`;
    const { min, max } = migrationRange(state, body, ns);
    await state.refresh(ns);
    const task = state.findRangeDeletion(ns, min, max);
    if (task) state.removeRangeDeletion(task);
    return {};
  },
});

defineCommand({
  name: '_migrateRecvAbort',
  handler: (ctx) => {
    const state = stateOf(ctx, '_migrateRecvAbort');
    const body = typedBody(ctx);
    const ns = `${ctx.db}.${requireString(body, '_migrateRecvAbort')}`;
    const { min, max } = migrationRange(state, body, ns);
    const task = state.findRangeDeletion(ns, min, max);
    return { deleted: task ? state.runRangeDeletion(task) : 0 };
  },
});

defineCommand({
  name: '_migrateDonorCommit',
  handler: async (ctx) => {
    const state = stateOf(ctx, '_migrateDonorCommit');
    const body = typedBody(ctx);
    const ns = `${ctx.db}.${requireString(body, '_migrateDonorCommit')}`;
    const { table, min, max } = migrationRange(state, body, ns);
    await state.refresh(ns);
    const task = state.addRangeDeletion(ns, table.info.uuid, min, max, false, table.pattern);
    // mongod: waitForDelete cleans the range at once (CleanWhen::kNow) and waits for it.
    if (body.waitForDelete === true || state.orphanCleanupDelaySecs === 0) return { deleted: state.runRangeDeletion(task) };
    state.scheduleRangeDeletion(task);
    return { deleted: 0 };
  },
});

defineCommand({
  name: '_shardsvrSplitPoint',
  handler: (ctx) => {
    const state = stateOf(ctx, '_shardsvrSplitPoint');
    const body = typedBody(ctx);
    const ns = `${ctx.db}.${requireString(body, '_shardsvrSplitPoint')}`;
    const { table, min, max } = migrationRange(state, body, ns);
    const collection = liveCollection(ctx.instance, ns);
    const keys = collection ? state.documentsInRange(collection, table, min, max).map((e) => table.pattern.keyOfRaw(e.raw)) : [];
    keys.sort(compareTuples);
    const median = keys[keys.length >> 1];
    // A median equal to the lower bound cannot split the range.
    if (median === undefined || compareTuples(median, min) === 0) return { splitKeys: [] };
    return { splitKeys: [table.pattern.documentOf(median)] };
  },
});

defineCommand({
  name: 'cleanupOrphaned',
  adminOnly: true,
  handler: (ctx) => {
    const state = stateOf(ctx, 'cleanupOrphaned');
    const ns = ctx.body.cleanupOrphaned;
    if (typeof ns !== 'string') throw new ServerError('BadValue', 'cleanupOrphaned needs a namespace');
    state.cleanupNow(ns);
    return {};
  },
});

/** Server parameters `setParameter` may change at run time here. */
const SETTABLE = new Set(['orphanCleanupDelaySecs']);

defineCommand({
  name: 'setParameter',
  adminOnly: true,
  handler: (ctx) => {
    const reply: Record<string, unknown> = {};
    const names = Object.keys(ctx.body).filter((k) => k !== 'setParameter' && !k.startsWith('$') && k !== 'lsid' && k !== 'comment');
    if (names.length === 0) throw new ServerError('BadValue', 'no option found to set, use help:true to see options ');
    for (const name of names) {
      if (!SETTABLE.has(name)) {
        throw new ServerError('InvalidOptions', `attempted to set unrecognized parameter [${name}], use help:true to see options `);
      }
    }
    const state = shardStateOf(ctx.instance);
    const value = Number(ctx.body.orphanCleanupDelaySecs);
    if (!Number.isInteger(value) || value < 0) throw new ServerError('BadValue', 'orphanCleanupDelaySecs must be a non-negative integer');
    reply.was = state?.orphanCleanupDelaySecs ?? 900;
    if (state) state.orphanCleanupDelaySecs = value;
    return reply;
  },
});
