/**
 * Reads through the router: `find` (targeted or merged, sorted merges reading only sort fields),
 * `count` and `distinct` (combined across shards), `aggregate` (the leading `$match` stages run on
 * the shards, the rest on the router over their results; `$collStats`/`$indexStats` give one
 * document per shard with its `shard`, as mongos), and `explain` of the targeting.
 */
import { BSON, Long } from 'bson';
import { ServerError } from '../errors.js';
import { PullCursor } from '../cursor.js';
import { RawDocArray, serialize, typed } from '../raw.js';
import { parseProjection } from '../query/projection.js';
import { parseSort } from '../query/sort.js';
import { compareValues } from '../bson-order.js';
import { canonicalKey } from '../storage/keys.js';
import { aggregate } from '../query/aggregate/source.js';
import { isChangeStreamPipeline } from '../changestream/open.js';
import { type RouterContext, type RouterReply, defineRouterCommand, collectionArg } from './commands.js';
import { clientFields, runOnShard } from './forward.js';
import { type CursorSource, MergedCursor, type RouterCursor, readCursorReply, sourceOf } from './merge-cursor.js';
import { openRouterCursor } from './cursor-commands.js';
import { num } from './router.js';
import { promote, targetQuery, versionFields, type Target } from './targeting.js';
import { openRouterChangeStream } from './change-stream.js';
import { bytesOf } from '../storage/memory.js';

function objectArg(ctx: RouterContext, field: string): Record<string, unknown> | undefined {
  const v = ctx.body[field];
  return v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : undefined;
}

/** Sends a cursor-opening command to each shard; the first batch of each as a merge source. */
async function openSources(
  ctx: RouterContext,
  shards: string[],
  body: (shard: string) => Record<string, unknown>,
): Promise<CursorSource[]> {
  const replies = await Promise.all(shards.map((shard) => runOnShard(ctx, shard, body(shard))));
  const sources: CursorSource[] = [];
  let failure: ServerError | undefined;
  replies.forEach((reply, i) => {
    if (!reply.ok) failure ??= reply.error();
    else sources.push(sourceOf(shards[i]!, readCursorReply(reply.raw)));
  });
  if (failure) {
    new MergedCursor(ctx, '', sources).close();
    throw failure;
  }
  return sources;
}

/** A cursor with nothing in it. */
function emptyCursor(ns: string): RouterReply {
  return { cursor: { firstBatch: new RawDocArray([]), id: Long.fromNumber(0), ns } };
}

defineRouterCommand({
  name: 'find',
  handler: async (ctx) => {
    const name = collectionArg(ctx, 'find');
    const ns = `${ctx.db}.${name}`;
    const filter = objectArg(ctx, 'filter');
    const target = await targetQuery(ctx, ns, promote(filter));
    if (target.shards.length === 0) return emptyCursor(ns);
    const limit = Math.abs(num(ctx.body.limit) || 0);
    const skip = num(ctx.body.skip) || 0;
    const batchSize = ctx.body.batchSize === undefined ? undefined : num(ctx.body.batchSize);
    if (skip < 0 || batchSize! < 0) throw new ServerError(51024, `BSON field 'skip' value must be >= 0`);
    const singleBatch = ctx.body.singleBatch === true;
    const base = { ...clientFields(ctx), ...versionFields(ctx, target.table) };
    if (target.shards.length === 1) {
      // One shard: the whole query runs there; the router passes its batches on.
      const sources = await openSources(ctx, target.shards, () => base);
      return openRouterCursor(ctx, new MergedCursor(ctx, ns, sources), { batchSize: sources[0]!.buffer.length, singleBatch });
    }
    const sortSpec = objectArg(ctx, 'sort');
    const sort = sortSpec && Object.keys(sortSpec).length > 0 ? parseSort(promote(sortSpec)) : undefined;
    const projectionSpec = objectArg(ctx, 'projection');
    // A projection could drop the sort fields the merge needs: the router applies it then.
    const projectHere = sort !== undefined && projectionSpec !== undefined && Object.keys(projectionSpec).length > 0;
    const first = batchSize ?? 101;
    const shardBody: Record<string, unknown> = { ...base, skip: undefined, limit: limit > 0 ? limit + skip : undefined };
    shardBody.batchSize = limit > 0 ? Math.min(first + skip, limit + skip) : first + skip;
    delete shardBody.singleBatch;
    if (projectHere) delete shardBody.projection;
    const sources = await openSources(ctx, target.shards, () => shardBody);
    const cursor = new MergedCursor(ctx, ns, sources, {
      sort,
      skip,
      limit,
      projection: projectHere ? parseProjection(promote(projectionSpec), promote(filter)) : undefined,
    });
    return openRouterCursor(ctx, cursor, { batchSize: limit > 0 ? Math.min(first, limit) : first, singleBatch });
  },
});

defineRouterCommand({
  name: 'count',
  handler: async (ctx) => {
    const name = collectionArg(ctx, 'count');
    const ns = `${ctx.db}.${name}`;
    const query = objectArg(ctx, 'query');
    const target = await targetQuery(ctx, ns, promote(query));
    if (target.shards.length === 0) return { n: 0 };
    const base = { ...clientFields(ctx), ...versionFields(ctx, target.table) };
    if (target.shards.length === 1) {
      return { n: (await runOnShard(ctx, target.shards[0]!, base)).orThrow().n };
    }
    const limit = Math.abs(num(ctx.body.limit) || 0);
    const skip = num(ctx.body.skip) || 0;
    const replies = await Promise.all(
      target.shards.map((shard) => runOnShard(ctx, shard, { ...base, skip: undefined, limit: limit > 0 ? limit + skip : undefined })),
    );
    let total = 0;
    for (const reply of replies) total += num(reply.orThrow().n);
    let n = Math.max(0, total - skip);
    if (limit > 0) n = Math.min(n, limit);
    return { n };
  },
});

defineRouterCommand({
  name: 'distinct',
  handler: async (ctx) => {
    const name = collectionArg(ctx, 'distinct');
    const ns = `${ctx.db}.${name}`;
    const target = await targetQuery(ctx, ns, promote(objectArg(ctx, 'query')));
    if (target.shards.length === 0) return { values: [] };
    const base = { ...clientFields(ctx), ...versionFields(ctx, target.table) };
    const replies = await Promise.all(target.shards.map((shard) => runOnShard(ctx, shard, base)));
    const seen = new Map<string, unknown>();
    for (const reply of replies) {
      if (!reply.ok) throw reply.error();
      for (const value of reply.typed.values as unknown[]) {
        const key = canonicalKey(value);
        if (!seen.has(key)) seen.set(key, value);
      }
    }
    return { values: [...seen.values()].sort(compareValues) };
  },
});

/** A stage's name and argument. */
function stageOf(stage: unknown): [string, unknown] {
  const entries = Object.entries((stage ?? {}) as Record<string, unknown>);
  if (entries.length !== 1) throw new ServerError(40323, 'A pipeline stage specification object must contain exactly one field.');
  return entries[0]!;
}

/** Adds `shard: <id>` to a per-shard statistics document, as mongos does. */
function withShard(doc: Buffer, shard: string): Buffer {
  const decoded = BSON.deserialize(doc, typed) as Record<string, unknown>;
  return serialize({ ...decoded, shard });
}

let scratchCounter = 0;

/**
 * Runs `stages` on the router over the shards' results (mongos's merging half of a pipeline):
 * the documents go, as they are, into a scratch collection of the router's private node.
 */
function mergeOnRouter(ctx: RouterContext, ns: string, docs: Buffer[], stages: unknown[]): RouterCursor {
  const local = ctx.router.local;
  const name = `merge${++scratchCounter}`;
  const scratch = local.catalog.addCollection('mongos_merge', name, {});
  docs.forEach((doc, i) => scratch.insert(Buffer.from(doc), i));
  let pull: (() => { raw: Buffer } | undefined) | undefined;
  try {
    pull = aggregate(local, 'mongos_merge', name, stages, { variables: promote(ctx.body.let as Record<string, unknown> | undefined) });
  } catch (e) {
    local.catalog.remove('mongos_merge', name);
    throw e;
  }
  const cursor = new PullCursor(ns, () => pull!()?.raw);
  return {
    ns,
    nextBatch: (request) => Promise.resolve(cursor.nextBatch(request)),
    close: () => {
      cursor.close();
      if (local.catalog.get('mongos_merge', name)) local.catalog.remove('mongos_merge', name);
    },
  };
}

/** Reads every document of every source (draining the shards' cursors). */
async function drain(ctx: RouterContext, sources: CursorSource[]): Promise<Buffer[]> {
  const cursor = new MergedCursor(ctx, '', sources);
  const docs: Buffer[] = [];
  for (;;) {
    const batch = await cursor.nextBatch({}, ctx);
    for (const doc of batch.docs) docs.push(bytesOf(doc));
    if (batch.exhausted) return docs;
  }
}

defineRouterCommand({
  name: 'aggregate',
  handler: async (ctx) => {
    const pipeline = Array.isArray(ctx.body.pipeline) ? (ctx.body.pipeline as unknown[]) : undefined;
    if (!pipeline) throw new ServerError('TypeMismatch', "BSON field 'aggregate.pipeline' is the wrong type, expected type 'array'");
    if (isChangeStreamPipeline(pipeline)) return openRouterChangeStream(ctx);
    const cursorOptions = objectArg(ctx, 'cursor');
    if (!cursorOptions && ctx.body.explain === undefined) {
      throw new ServerError('FailedToParse', "The 'cursor' option is required, except for aggregate with the explain argument");
    }
    const batchSize = cursorOptions?.batchSize === undefined ? undefined : num(cursorOptions.batchSize);
    const target = ctx.body.aggregate;
    if (target === 1 || (typeof target === 'number' && target === 1) || num(target) === 1) {
      // A collectionless pipeline ($documents): the router runs it itself.
      const pull = aggregate(ctx.router.local, ctx.db, 1, promote(pipeline));
      const cursor = new PullCursor(`${ctx.db}.$cmd.aggregate`, () => pull()?.raw);
      return openRouterCursor(
        ctx,
        { ns: cursor.ns, nextBatch: (r) => Promise.resolve(cursor.nextBatch(r)), close: () => cursor.close() },
        { batchSize },
      );
    }
    const name = collectionArg(ctx, 'aggregate');
    const ns = `${ctx.db}.${name}`;
    const [firstName, firstArg] = pipeline.length > 0 ? stageOf(pipeline[0]) : ['', undefined];
    const leadingMatch = firstName === '$match' ? (promote(firstArg) as Record<string, unknown>) : undefined;
    const routed = await targetQuery(ctx, ns, leadingMatch);
    if (routed.shards.length === 0) return emptyCursor(ns);
    const base = { ...clientFields(ctx), ...versionFields(ctx, routed.table) };
    if (routed.shards.length === 1) {
      const sources = await openSources(ctx, routed.shards, () => base);
      return openRouterCursor(ctx, new MergedCursor(ctx, ns, sources), { batchSize: sources[0]!.buffer.length });
    }
    return aggregateAcrossShards(ctx, ns, pipeline, routed, base, batchSize);
  },
});

async function aggregateAcrossShards(
  ctx: RouterContext,
  ns: string,
  pipeline: unknown[],
  routed: Target,
  base: Record<string, unknown>,
  batchSize: number | undefined,
): Promise<RouterReply> {
  const [firstName] = pipeline.length > 0 ? stageOf(pipeline[0]) : [''];
  let shardStages: unknown[];
  let rest: unknown[];
  if (firstName === '$collStats' || firstName === '$indexStats') {
    shardStages = [pipeline[0]];
    rest = pipeline.slice(1);
  } else {
    let split = 0;
    while (split < pipeline.length && stageOf(pipeline[split])[0] === '$match') split++;
    shardStages = pipeline.slice(0, split);
    rest = pipeline.slice(split);
    // Each shard samples its part; the router samples the union again.
    if (rest.length > 0 && stageOf(rest[0])[0] === '$sample') shardStages = [...shardStages, rest[0]];
  }
  const shardBody = { ...base, pipeline: shardStages, cursor: {} };
  delete (shardBody as Record<string, unknown>).explain;
  const sources = await openSources(ctx, routed.shards, () => shardBody);
  if (firstName === '$collStats' || firstName === '$indexStats') {
    const docs: Buffer[] = [];
    for (const source of sources) {
      const one = await drain(ctx, [source]);
      docs.push(...one.map((d) => withShard(d, source.shard)));
    }
    if (rest.length === 0) {
      const cursor = mergeOnRouter(ctx, ns, docs, []);
      return openRouterCursor(ctx, cursor, { batchSize });
    }
    return openRouterCursor(ctx, mergeOnRouter(ctx, ns, docs, promote(rest)), { batchSize });
  }
  if (rest.length === 0) return openRouterCursor(ctx, new MergedCursor(ctx, ns, sources), { batchSize });
  const docs = await drain(ctx, sources);
  return openRouterCursor(ctx, mergeOnRouter(ctx, ns, docs, promote(rest)), { batchSize });
}

/** The query a command explains targets with. */
function explainedQuery(name: string, command: Record<string, unknown>): Record<string, unknown> | undefined {
  switch (name) {
    case 'find':
      return command.filter as Record<string, unknown> | undefined;
    case 'count':
    case 'distinct':
    case 'findAndModify':
      return command.query as Record<string, unknown> | undefined;
    case 'aggregate': {
      const first = (command.pipeline as Record<string, unknown>[] | undefined)?.[0];
      return first && '$match' in first ? (first.$match as Record<string, unknown>) : undefined;
    }
    case 'update':
      return (command.updates as { q?: Record<string, unknown> }[] | undefined)?.[0]?.q;
    case 'delete':
      return (command.deletes as { q?: Record<string, unknown> }[] | undefined)?.[0]?.q;
    default:
      return undefined;
  }
}

defineRouterCommand({
  name: 'explain',
  handler: async (ctx) => {
    const command = objectArg(ctx, 'explain');
    if (!command) throw new ServerError('BadValue', 'explain command requires a nested object');
    const name = Object.keys(command)[0]!;
    const coll = command[name];
    if (typeof coll !== 'string') throw new ServerError('InvalidNamespace', `explain of ${name} needs a collection`);
    const ns = `${ctx.db}.${coll}`;
    const target = await targetQuery(ctx, ns, promote(explainedQuery(name, command)));
    const write = name === 'update' || name === 'delete' || name === 'findAndModify';
    const sorted = name === 'find' && command.sort !== undefined && Object.keys(command.sort as object).length > 0;
    const stage = write ? 'SHARD_WRITE' : target.shards.length === 1 ? 'SINGLE_SHARD' : sorted ? 'SHARD_MERGE_SORT' : 'SHARD_MERGE';
    const shards = target.shards.map((id) => {
      const shard = ctx.router.shard(id);
      const [host, port] = shard.address.split(':');
      return {
        shardName: id,
        connectionString: shard.connectionString,
        serverInfo: { host, port: Number(port), version: '8.0.4', gitVersion: 'ferry-test-cluster' },
        namespace: ns,
      };
    });
    return {
      queryPlanner: { mongosPlannerVersion: 1, winningPlan: { stage, shards } },
      serverInfo: { host: ctx.router.host, version: '8.0.4', gitVersion: 'ferry-test-cluster' },
      command: { ...command, $db: ctx.db },
    };
  },
});
