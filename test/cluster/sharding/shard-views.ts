/**
 * How a shard runs the commands a router sends it. A versioned command (it carries
 * `shardVersion`, as mongos's do) sees the sharded collection as its shard owns it:
 *  - reads (find, aggregate, count, distinct) leave out orphans — documents this shard holds in
 *    ranges it does not own (mongod's shard filtering); direct, unversioned reads see them all;
 *  - an update or findAndModify whose new document belongs to another shard fails with
 *    WouldChangeOwningShard (283) carrying the images, and the router moves the document;
 *  - `$fromMigrate` marks a DDL participant's writes (not the primary shard) as migration writes,
 *    and `mayBypassWriteBlocking` from an internal connection carries the user's privilege.
 */
import { addInnerCommandWrapper } from '../commands/dispatch.js';
import type { CommandContext } from '../commands/registry.js';
import { ServerError } from '../errors.js';
import { compareTuples } from './shard-key.js';
import { shardingError } from './errors.js';
import type { Instance, OpContext } from '../instance.js';
import type { Catalog } from '../storage/catalog.js';
import type { Collection, DocEntry } from '../storage/collection.js';
import { forkCollection } from '../txn/snapshot.js';
import { RawDoc } from '../raw.js';
import { isChangeStreamPipeline } from '../changestream/open.js';
import { type ShardState, shardStateOf } from './shard-state.js';

const FILTERED_READS = new Set(['find', 'aggregate', 'count', 'distinct']);
const OWNERSHIP_CHECKED_WRITES = new Set(['update', 'findAndModify']);

/** The internal user the members of a sharded cluster authenticate as. */
export const INTERNAL_USER = '__system';

/** mongod's error when an update would move a document to another shard. */
export function wouldChangeOwningShard(pre: Buffer | undefined, post: Buffer, shouldUpsert: boolean): ServerError {
  return shardingError('WouldChangeOwningShard', 'This update would cause the doc to change owning shards', {
    ...(pre ? { preImage: new RawDoc(pre) } : {}),
    postImage: new RawDoc(post),
    shouldUpsert,
  });
}

/** The collection named by a command (its first field), for the commands handled here. */
function targetNs(ctx: CommandContext, name: string): string | undefined {
  const target = ctx.body[name];
  return typeof target === 'string' ? `${ctx.db}.${target}` : undefined;
}

/** A copy of the collection without the documents this shard does not own (a snapshot). */
function ownedPart(state: ShardState, live: Collection): Collection {
  const table = state.tables.get(live.ns)!;
  const fork = forkCollection(live);
  for (const entry of live.byRid.values()) {
    if (!state.owns(table, table.pattern.keyOfRaw(entry.raw))) fork.remove(entry);
  }
  return fork;
}

/** The instance as a versioned read of `ns` sees it: that collection without its orphans. */
function filteredView(state: ShardState, base: Instance, ns: string): Instance {
  const dot = ns.indexOf('.');
  const db = ns.slice(0, dot);
  const name = ns.slice(dot + 1);
  const live = base.catalog.get(db, name);
  if (live?.kind !== 'collection' || !state.tables.has(ns) || !state.hasOrphans(ns)) return base;
  const owned = ownedPart(state, live);
  const catalog = Object.create(base.catalog) as Catalog;
  const get = base.catalog.get.bind(base.catalog);
  const collection = base.catalog.collection.bind(base.catalog);
  Object.assign(catalog, {
    get: (d: string, n: string) => (d === db && n === name ? owned : get(d, n)),
    collection: (d: string, n: string) => (d === db && n === name ? owned : collection(d, n)),
  });
  const view = Object.create(base) as Instance;
  Object.defineProperty(view, 'catalog', { value: catalog });
  return view;
}

/** The instance as a versioned update sees it: writes that would move a document fail with 283. */
function ownershipCheckingView(state: ShardState, base: Instance): Instance {
  const view = Object.create(base) as Instance;
  const check = (ctx: OpContext, collection: Collection, raw: Buffer, pre: Buffer | undefined) => {
    const table = state.tables.get(collection.ns);
    if (!table) return;
    const key = table.pattern.keyOfRaw(raw);
    if (pre !== undefined && ctx.txnNumber === undefined && compareTuples(key, table.pattern.keyOfRaw(pre)) !== 0) {
      // mongod's UpdateStage: a shard key value changes only in a retryable write or a transaction.
      throw new ServerError(
        'IllegalOperation',
        'Must run update to shard key field in a multi-statement transaction or with retryWrites: true.',
      );
    }
    if (!state.owns(table, key)) throw wouldChangeOwningShard(pre, raw, pre === undefined);
  };
  Object.assign(view, {
    insertDocument(ctx: OpContext, collection: Collection, raw: Buffer, id: unknown): DocEntry {
      check(ctx, collection, raw, undefined);
      return base.insertDocument(ctx, collection, raw, id);
    },
    updateDocument(
      ctx: OpContext,
      collection: Collection,
      entry: DocEntry,
      raw: Buffer,
      description: Record<string, unknown> | undefined,
    ): void {
      check(ctx, collection, raw, entry.raw);
      base.updateDocument(ctx, collection, entry, raw, description);
    },
  });
  return view;
}

/** Installs the shard side of command handling (once per process; acts on shard nodes only). */
export function installShardCommandHandling(): void {
  if (installed) return;
  installed = true;
  addInnerCommandWrapper((ctx, name, run) => {
    const state = shardStateOf(ctx.instance);
    if (!state) return run();
    const { body } = ctx;
    if (body.$fromMigrate === true) ctx.op = { ...ctx.op, fromMigrate: true };
    if (typeof body.mayBypassWriteBlocking === 'boolean' && ctx.connection.user?.startsWith(`${INTERNAL_USER}@`)) {
      ctx.op = { ...ctx.op, bypassWriteBlocking: body.mayBypassWriteBlocking };
    }
    if (body.shardVersion !== undefined) {
      const ns = targetNs(ctx, name);
      if (
        ns &&
        FILTERED_READS.has(name) &&
        !(name === 'aggregate' && isChangeStreamPipeline(body.pipeline)) &&
        body.autocommit === undefined
      ) {
        ctx.instance = filteredView(state, ctx.instance, ns);
      } else if (ns && OWNERSHIP_CHECKED_WRITES.has(name) && state.tables.has(ns)) {
        ctx.instance = ownershipCheckingView(state, ctx.instance);
      }
    }
    return run();
  });
}
let installed = false;
