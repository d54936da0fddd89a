/**
 * Writes through the router (MongoDB 8.0's rules):
 *  - insert: each document goes to the chunk owning its shard key, read from its raw bytes (a
 *    missing field counts as null); documents travel on as the bytes received, batched per shard
 *    as document sequences. Unordered batches go to every shard at once; ordered ones in runs of
 *    consecutive documents for one shard, stopping at the first error, as mongos does.
 *  - update / delete: a statement whose filter fixes the shard key goes to its shard; `multi` /
 *    `limit: 0` ones to every shard owning a chunk; a single-document write without the shard key
 *    (7.1+) finds a matching document first and runs on the shard holding it. An upsert must
 *    fix the shard key (ShardKeyNotFound otherwise).
 *  - a write that changes a document's shard key so that it belongs to another shard (the shard
 *    answers WouldChangeOwningShard) becomes a delete on the old shard and an insert on the new
 *    one in one transaction: the client's, or the router's own for a retryable write; other
 *    writes may not do it (IllegalOperation), as since 7.0.
 *  - findAndModify: targeted the same way, moving the document likewise.
 * Writes to a collection wait while a migration of it holds the collection (gates.ts).
 */
import { BSON, type Document } from 'bson';
import { ServerError } from '../errors.js';
import { MAX_WRITE_BATCH_SIZE } from '../commands/handshake.js';
import { prepareForInsert, serialize, typed } from '../raw.js';
import { shardingError } from '../sharding/errors.js';
import type { RoutingTable } from '../sharding/routing-table.js';
import type { Reply } from '../sharding/node-client.js';
import { type RouterContext, type RouterReply, defineRouterCommand, collectionArg } from './commands.js';
import { clientFields, passOn, runOnShard } from './forward.js';
import { num } from './router.js';
import { promote, versionFields } from './targeting.js';
import { commitAcross, internalTransaction } from './transactions.js';

interface WriteError {
  index: number;
  code: number;
  errmsg: string;
  [extra: string]: unknown;
}

/** What a write command's statements did, merged across shards. */
class WriteResult {
  n = 0;
  nModified = 0;
  upserted: { index: number; _id: unknown }[] = [];
  writeErrors: WriteError[] = [];
  writeConcernError: unknown;

  /** Adds a shard's reply for the statements `indexes` (its local index i is `indexes[i]`). */
  add(reply: Reply, indexes: readonly number[]): void {
    if (!reply.ok) {
      const error = reply.error();
      // A shard that failed the whole command failed each of its statements.
      for (const index of indexes) this.writeErrors.push({ index, code: error.code, errmsg: error.message, ...error.extra });
      return;
    }
    const doc = reply.typed;
    this.n += num(doc.n) || 0;
    this.nModified += num(doc.nModified) || 0;
    for (const u of (doc.upserted as { index: unknown; _id: unknown }[] | undefined) ?? []) {
      this.upserted.push({ index: indexes[num(u.index)]!, _id: u._id });
    }
    for (const e of (doc.writeErrors as WriteError[] | undefined) ?? []) {
      this.writeErrors.push({ ...e, index: indexes[num(e.index)]!, code: num(e.code) });
    }
    if (doc.writeConcernError) this.writeConcernError = doc.writeConcernError;
  }

  failed(index: number, error: ServerError): void {
    this.writeErrors.push({ index, code: error.code, errmsg: error.message, ...error.extra });
  }

  reply(kind: 'insert' | 'update' | 'delete'): RouterReply {
    const out: RouterReply = { n: this.n };
    if (kind === 'update') {
      out.nModified = this.nModified;
      if (this.upserted.length > 0) out.upserted = this.upserted.sort((a, b) => a.index - b.index);
    }
    if (this.writeErrors.length > 0) out.writeErrors = this.writeErrors.sort((a, b) => a.index - b.index);
    if (this.writeConcernError) out.writeConcernError = this.writeConcernError;
    return out;
  }
}

/** The statements of a write command: its document sequence, or its body array (raw). */
function statementsOf(ctx: RouterContext, field: string): Buffer[] {
  const sequence = ctx.sequences.get(field);
  if (sequence) return sequence;
  const parsed = BSON.deserialize(ctx.raw, { fieldsAsRaw: { [field]: true }, validation: { utf8: false } });
  const docs = parsed[field] as Buffer[] | undefined;
  if (docs === undefined) {
    throw new ServerError('IDLFailedToParse', `BSON field '${Object.keys(ctx.body)[0]}.${field}' is missing but a required field`);
  }
  if (!Array.isArray(docs)) throw new ServerError('TypeMismatch', `BSON field '${field}' is the wrong type, expected type 'array'`);
  return docs.map((d) => Buffer.from(d));
}

function checkBatchSize(count: number): void {
  if (count < 1 || count > MAX_WRITE_BATCH_SIZE) {
    throw new ServerError('InvalidLength', `Write batch sizes must be between 1 and ${MAX_WRITE_BATCH_SIZE}. Got ${count} operations.`);
  }
}

/**
 * Runs `field` statements on one shard; returns its reply. A retryable write's batches carry the
 * statements' positions in the client's command (`stmtIds`), so that a shard executes each
 * batch once however many the write was split into, and a retry of the whole write again once.
 */
async function send(
  ctx: RouterContext,
  shard: string,
  base: Record<string, unknown>,
  field: string,
  statements: Buffer[],
  indexes?: number[],
): Promise<Reply> {
  const stmtIds = indexes && ctx.txnNumber !== undefined && !ctx.inTransaction ? { stmtIds: indexes } : {};
  const reply = await runOnShard(ctx, shard, { ...base, ...stmtIds }, [{ name: field, docs: statements }]);
  // In a transaction a failed statement fails the command, with its labels (it aborted the
  // transaction everywhere); a document to move (WouldChangeOwningShard) is handled by the caller.
  if (ctx.inTransaction && !reply.ok && reply.error().code !== 283) throw reply.error();
  return reply;
}

/**
 * Runs statements that each go to one shard: unordered, every shard's share at once; ordered,
 * consecutive statements for one shard together, one run after another, stopping at an error.
 * `after` sees each run's reply (the shard-key-change handling of updates).
 */
async function runSingleTargeted(
  ctx: RouterContext,
  field: string,
  base: Record<string, unknown>,
  items: { index: number; raw: Buffer; shard: string }[],
  ordered: boolean,
  result: WriteResult,
  after: (reply: Reply, run: { index: number; raw: Buffer; shard: string }[]) => Promise<number | undefined> = async () => undefined,
): Promise<boolean> {
  if (!ordered) {
    const byShard = new Map<string, { index: number; raw: Buffer; shard: string }[]>();
    for (const item of items) {
      let list = byShard.get(item.shard);
      if (!list) byShard.set(item.shard, (list = []));
      list.push(item);
    }
    const runs = [...byShard.values()];
    const replies = await Promise.all(
      runs.map((run) =>
        send(
          ctx,
          run[0]!.shard,
          base,
          field,
          run.map((i) => i.raw),
          run.map((i) => i.index),
        ),
      ),
    );
    for (let r = 0; r < runs.length; r++) {
      result.add(
        replies[r]!,
        runs[r]!.map((i) => i.index),
      );
      await after(replies[r]!, runs[r]!);
    }
    return true;
  }
  let at = 0;
  while (at < items.length) {
    let end = at + 1;
    while (end < items.length && items[end]!.shard === items[at]!.shard) end++;
    const run = items.slice(at, end);
    const reply = await send(
      ctx,
      run[0]!.shard,
      base,
      field,
      run.map((i) => i.raw),
      run.map((i) => i.index),
    );
    const before = result.writeErrors.length;
    result.add(
      reply,
      run.map((i) => i.index),
    );
    // A handled error (a moved document) lets the run go on after it.
    const resumeAt = await after(reply, run);
    if (resumeAt !== undefined) {
      at += resumeAt;
      continue;
    }
    if (result.writeErrors.length > before) return false;
    at = end;
  }
  return true;
}

defineRouterCommand({
  name: 'insert',
  handler: async (ctx) => {
    const name = collectionArg(ctx, 'insert');
    const ns = `${ctx.db}.${name}`;
    const docs = statementsOf(ctx, 'documents');
    checkBatchSize(docs.length);
    const ordered = ctx.body.ordered !== false;
    const release = await ctx.router.gates.write(ns);
    try {
      const table = ctx.router.tableOf(ns);
      const base = { ...clientFields(ctx, ['documents']), ...versionFields(ctx, table) };
      if (!table) {
        const primary = (await ctx.router.primaryOf(ctx.db, true))!;
        const reply = await send(ctx, primary.id, base, 'documents', docs);
        return passOn(reply);
      }
      const result = new WriteResult();
      if (!ordered) return (await insertUnordered(ctx, table, base, docs, result)).reply('insert');
      const items: { index: number; raw: Buffer; shard: string }[] = [];
      for (let i = 0; i < docs.length; i++) {
        let shard: string;
        try {
          shard = table.shardOfRaw(docs[i]!);
        } catch (e) {
          if (!(e instanceof ServerError)) throw e;
          result.failed(i, e);
          if (ordered) break;
          continue;
        }
        items.push({ index: i, raw: docs[i]!, shard });
      }
      // Ordered: only the documents before a refused one may be written.
      const firstError = result.writeErrors[0]?.index ?? Number.POSITIVE_INFINITY;
      await runSingleTargeted(ctx, 'documents', base, ordered ? items.filter((i) => i.index < firstError) : items, ordered, result);
      return result.reply('insert');
    } finally {
      release();
    }
  },
});

/**
 * An unordered insert: each document's shard read from its raw shard key, each shard's share
 * sent at once (the hot path of a bulk load through mongos: no object per document).
 */
async function insertUnordered(
  ctx: RouterContext,
  table: RoutingTable,
  base: Record<string, unknown>,
  docs: Buffer[],
  result: WriteResult,
): Promise<WriteResult> {
  const groups = new Map<string, { indexes: number[]; docs: Buffer[] }>();
  for (let i = 0; i < docs.length; i++) {
    let shard: string;
    try {
      shard = table.shardOfRaw(docs[i]!);
    } catch (e) {
      if (!(e instanceof ServerError)) throw e;
      result.failed(i, e);
      continue;
    }
    let group = groups.get(shard);
    if (!group) groups.set(shard, (group = { indexes: [], docs: [] }));
    group.indexes.push(i);
    group.docs.push(docs[i]!);
  }
  const entries = [...groups.entries()];
  const replies = await Promise.all(entries.map(([shard, group]) => send(ctx, shard, base, 'documents', group.docs, group.indexes)));
  replies.forEach((reply, i) => result.add(reply, entries[i]![1].indexes));
  return result;
}

interface Statement {
  index: number;
  raw: Buffer;
  q: Record<string, unknown>;
  /** update: multi; delete: limit 0. */
  many: boolean;
  upsert: boolean;
  sort?: Record<string, unknown>;
  collation?: unknown;
  hint?: unknown;
}

function statement(raw: Buffer, index: number, kind: 'update' | 'delete'): Statement {
  const doc = BSON.deserialize(raw, typed) as Record<string, unknown>;
  const q = (doc.q ?? {}) as Record<string, unknown>;
  const many = kind === 'update' ? doc.multi === true : num(doc.limit) === 0;
  return {
    index,
    raw,
    q,
    many,
    upsert: doc.upsert === true,
    sort: doc.sort as Record<string, unknown> | undefined,
    collation: doc.collation,
    hint: doc.hint,
  };
}

/**
 * The shard holding a document matching `q` (a single-document write without the shard key,
 * MongoDB 7.1+): every owning shard is asked for one, the first in shard order that has one wins.
 */
async function shardWithMatch(
  ctx: RouterContext,
  table: RoutingTable,
  name: string,
  q: Record<string, unknown>,
  sort: Record<string, unknown> | undefined,
  collation: unknown,
): Promise<string | undefined> {
  const shards = table.shards();
  const replies = await Promise.all(
    shards.map((shard) =>
      runOnShard(ctx, shard, {
        find: name,
        filter: q,
        ...(sort ? { sort } : {}),
        ...(collation ? { collation } : {}),
        projection: { _id: 1 },
        limit: 1,
        singleBatch: true,
        ...versionFields(ctx, table),
      }),
    ),
  );
  for (let i = 0; i < shards.length; i++) {
    const doc = replies[i]!.orThrow().cursor as { firstBatch: unknown[] };
    if (doc.firstBatch.length > 0) return shards[i];
  }
  return undefined;
}

function upsertNeedsShardKey(): ServerError {
  return shardingError('ShardKeyNotFound', 'Failed to target upsert by query :: could not extract exact shard key');
}

/** The bytes of an image a shard sent back (decoded with types kept, so re-encoding is exact). */
function imageBytes(value: unknown): Buffer {
  return serialize(value as Document);
}

/**
 * Moves a document whose shard key changed to another shard: deletes it where it was and inserts
 * its new version where it belongs, in the client's transaction or in one of the router's own.
 */
async function moveDocument(
  ctx: RouterContext,
  table: RoutingTable,
  name: string,
  from: string,
  pre: Buffer | undefined,
  post: Buffer,
): Promise<void> {
  const to = table.shardOf(table.pattern.keyOfRaw(post));
  const version = versionFields(ctx, table);
  const deleteBody = pre && {
    delete: name,
    deletes: [{ q: table.pattern.documentKeyOfRaw(pre, prepareForInsert(pre).id), limit: 1 }],
    ...version,
  };
  const insertBody = { insert: name, ...version };
  if (ctx.inTransaction) {
    if (deleteBody) (await runOnShard(ctx, from, deleteBody)).orThrow();
    (await runOnShard(ctx, to, insertBody, [{ name: 'documents', docs: [post] }])).orThrow();
    return;
  }
  // The router's own transaction, as mongos runs one for a retryable write (an internal session).
  const { lsid, txn } = internalTransaction();
  const run = async (shard: string, body: Record<string, unknown>, docs?: Buffer[]) => {
    const first = !txn.participants.has(shard);
    txn.participants.add(shard);
    const reply = await ctx.router
      .shard(shard)
      .client.run(
        ctx.db,
        { ...body, lsid, txnNumber: txn.txnNumber, autocommit: false, ...(first ? { startTransaction: true } : {}) },
        docs ? [{ name: 'documents', docs }] : [],
      );
    return reply.orThrow();
  };
  if (deleteBody) await run(from, deleteBody);
  await run(to, insertBody, [post]);
  await commitAcross(ctx.router, lsid, txn);
}

/** Handles WouldChangeOwningShard errors of a run of update statements; returns where to resume. */
async function handleMoves(
  ctx: RouterContext,
  table: RoutingTable,
  name: string,
  result: WriteResult,
  run: { index: number; raw: Buffer; shard: string }[],
  ordered: boolean,
): Promise<number | undefined> {
  let resumeAt: number | undefined;
  for (const error of [...result.writeErrors]) {
    if (error.code !== 283) continue;
    const local = run.findIndex((i) => i.index === error.index);
    if (local < 0) continue;
    result.writeErrors.splice(result.writeErrors.indexOf(error), 1);
    try {
      const post = imageBytes(error.postImage);
      await moveDocument(ctx, table, name, run[local]!.shard, error.preImage ? imageBytes(error.preImage) : undefined, post);
      result.n += 1;
      if (error.shouldUpsert) result.upserted.push({ index: error.index, _id: prepareForInsert(post).id });
      else result.nModified += 1;
    } catch (e) {
      if (!(e instanceof ServerError)) throw e;
      result.failed(error.index, e);
      if (ordered) return undefined;
    }
    if (ordered) resumeAt = local + 1;
  }
  return resumeAt;
}

async function routeUpdateOrDelete(ctx: RouterContext, kind: 'update' | 'delete'): Promise<RouterReply> {
  const field = kind === 'update' ? 'updates' : 'deletes';
  const name = collectionArg(ctx, kind);
  const ns = `${ctx.db}.${name}`;
  const raws = statementsOf(ctx, field);
  checkBatchSize(raws.length);
  const ordered = ctx.body.ordered !== false;
  const release = await ctx.router.gates.write(ns);
  try {
    const table = ctx.router.tableOf(ns);
    const base = { ...clientFields(ctx, [field]), ...versionFields(ctx, table) };
    if (!table) {
      const primary = await ctx.router.primaryOf(ctx.db, kind === 'update');
      if (!primary) return kind === 'update' ? { n: 0, nModified: 0 } : { n: 0 };
      return passOn(await send(ctx, primary.id, base, field, raws));
    }
    const result = new WriteResult();
    let pending: { index: number; raw: Buffer; shard: string }[] = [];
    const flush = async (): Promise<boolean> => {
      const items = pending;
      pending = [];
      if (items.length === 0) return true;
      return runSingleTargeted(ctx, field, base, items, ordered, result, (_reply, run) =>
        kind === 'update' ? handleMoves(ctx, table, name, result, run, ordered) : Promise.resolve(undefined),
      );
    };
    for (let i = 0; i < raws.length; i++) {
      const st = statement(raws[i]!, i, kind);
      const keys = table.pattern.keysOfQuery(promote(st.q));
      const shards = keys ? [...new Set(keys.map((k) => table.shardOf(k)))] : table.shards();
      if (!st.many && shards.length === 1) {
        pending.push({ index: i, raw: st.raw, shard: shards[0]! });
        continue;
      }
      if (ordered && !(await flush())) return result.reply(kind);
      if (st.many) {
        // Broadcast to every shard that may hold matches.
        const replies = await Promise.all(shards.map((shard) => send(ctx, shard, base, field, [st.raw], [i])));
        const before = result.writeErrors.length;
        for (const reply of replies) result.add(reply, [i]);
        // One error per statement, as one server would report it.
        result.writeErrors.splice(before + 1);
        if (ordered && result.writeErrors.length > before) return result.reply(kind);
        continue;
      }
      // A single-document write without the whole shard key.
      if (st.upsert) {
        result.failed(i, upsertNeedsShardKey());
        if (ordered) return result.reply(kind);
        continue;
      }
      const shard = await shardWithMatch(ctx, table, name, st.q, st.sort, st.collation);
      if (shard === undefined) continue; // nothing matches: n stays 0
      const item = [{ index: i, raw: st.raw, shard }];
      const ok = await runSingleTargeted(ctx, field, base, item, true, result, (_reply, run) =>
        kind === 'update' ? handleMoves(ctx, table, name, result, run, true) : Promise.resolve(undefined),
      );
      if (!ok && ordered) return result.reply(kind);
    }
    await flush();
    return result.reply(kind);
  } finally {
    release();
  }
}

defineRouterCommand({ name: 'update', handler: (ctx) => routeUpdateOrDelete(ctx, 'update') });
defineRouterCommand({ name: 'delete', handler: (ctx) => routeUpdateOrDelete(ctx, 'delete') });

defineRouterCommand({
  name: 'findAndModify',
  aliases: ['findandmodify'],
  handler: async (ctx) => {
    const name = collectionArg(ctx, Object.keys(ctx.body)[0]!);
    const ns = `${ctx.db}.${name}`;
    const release = await ctx.router.gates.write(ns);
    try {
      const table = ctx.router.tableOf(ns);
      const base = { ...clientFields(ctx), ...versionFields(ctx, table) };
      if (!table) {
        const primary = (await ctx.router.primaryOf(ctx.db, true))!;
        return passOn(await runOnShard(ctx, primary.id, base));
      }
      const query = (ctx.body.query ?? {}) as Record<string, unknown>;
      const keys = table.pattern.keysOfQuery(promote(query));
      let shard: string | undefined;
      if (keys && new Set(keys.map((k) => table.shardOf(k))).size === 1) shard = table.shardOf(keys[0]!);
      else if (ctx.body.upsert === true) throw upsertNeedsShardKey();
      else shard = await shardWithMatch(ctx, table, name, query, ctx.body.sort as Record<string, unknown> | undefined, ctx.body.collation);
      if (shard === undefined) return { lastErrorObject: { n: 0, updatedExisting: false }, value: null };
      const reply = await runOnShard(ctx, shard, base);
      if (reply.ok) return passOn(reply);
      const error = reply.error();
      if (error.code !== 283) throw error;
      const pre = error.extra.preImage ? imageBytes(error.extra.preImage) : undefined;
      const post = imageBytes(error.extra.postImage);
      await moveDocument(ctx, table, name, shard, pre, post);
      const returnNew = ctx.body.new === true;
      const value = returnNew ? BSON.deserialize(post, typed) : pre ? BSON.deserialize(pre, typed) : null;
      if (error.extra.shouldUpsert) {
        return { lastErrorObject: { n: 1, updatedExisting: false, upserted: prepareForInsert(post).id }, value: returnNew ? value : null };
      }
      return { lastErrorObject: { n: 1, updatedExisting: true }, value };
    } finally {
      release();
    }
  },
});
