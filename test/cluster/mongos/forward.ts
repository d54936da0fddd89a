/**
 * Sending a client's command on to a shard: the command's own fields as the router rewrote them,
 * plus the client's session fields — `lsid` and `txnNumber` (a retryable write is retried, and
 * deduplicated, by each shard), and inside a transaction `autocommit: false` with
 * `startTransaction: true` on a shard's first command. A statement that fails inside a
 * transaction aborts it on every participant, as mongos does.
 */
import type { DocumentSequence } from '../sharding/framing.js';
import type { Reply } from '../sharding/node-client.js';
import type { RouterContext, RouterReply } from './commands.js';
import type { Router } from './router.js';
import type { RouterTransaction } from './sessions.js';

/** Fields the router sets itself (never passed on as the client sent them). */
const ROUTER_OWN = new Set([
  '$db',
  '$clusterTime',
  'lsid',
  'txnNumber',
  'autocommit',
  'startTransaction',
  'readConcern',
  '$readPreference',
  'mayBypassWriteBlocking',
  'shardVersion',
  'databaseVersion',
  '$audit',
  '$client',
]);

/** The client's command without the fields the router sets (and without `exclude`). */
export function clientFields(ctx: RouterContext, exclude: readonly string[] = []): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(ctx.body)) {
    if (!ROUTER_OWN.has(key) && !exclude.includes(key)) out[key] = value;
  }
  return out;
}

/** The transaction of a command in one (`autocommit: false`), started or continued. */
export function transactionOf(ctx: RouterContext): RouterTransaction | undefined {
  if (!ctx.inTransaction) return undefined;
  return ctx.router.sessions.transactionFor(ctx.lsid, ctx.txnNumber, ctx.body);
}

/** Session fields for one shard's copy of the command. */
function sessionFields(ctx: RouterContext, shard: string, txn: RouterTransaction | undefined): Record<string, unknown> {
  const fields: Record<string, unknown> = {};
  if (ctx.lsid) fields.lsid = ctx.lsid;
  if (ctx.txnNumber !== undefined) fields.txnNumber = ctx.txnNumber;
  if (txn) {
    fields.autocommit = false;
    if (!txn.participants.has(shard)) {
      txn.participants.add(shard);
      fields.startTransaction = true;
      if (txn.readConcern !== undefined) fields.readConcern = txn.readConcern;
    }
  } else if (ctx.body.readConcern !== undefined) {
    fields.readConcern = ctx.body.readConcern;
  }
  const bypass = ctx.router.mayBypassWriteBlocking?.(ctx.connection);
  if (bypass !== undefined) fields.mayBypassWriteBlocking = bypass;
  return fields;
}

/** Runs `body` on a shard for the client's command (session fields added). */
export async function runOnShard(
  ctx: RouterContext,
  shard: string,
  body: Record<string, unknown>,
  sequences: readonly DocumentSequence[] = [],
  db = ctx.db,
): Promise<Reply> {
  const txn = transactionOf(ctx);
  const reply = await ctx.router.shard(shard).client.run(db, { ...body, ...sessionFields(ctx, shard, txn) }, sequences);
  // WouldChangeOwningShard leaves the transaction open: the router moves the document in it.
  if (txn && !reply.ok && reply.error().code !== 283) await abortEverywhere(ctx.router, ctx.lsid!, txn);
  return reply;
}

/** Aborts a transaction on every participant (best effort) and forgets them. */
export async function abortEverywhere(router: Router, lsid: { id: unknown }, txn: RouterTransaction, except?: string): Promise<void> {
  if (txn.state !== 'active') return;
  txn.state = 'aborted';
  const participants = [...txn.participants].filter((s) => s !== except);
  await Promise.all(
    participants.map((shard) =>
      router
        .shard(shard)
        .client.run('admin', { abortTransaction: 1, lsid, txnNumber: txn.txnNumber, autocommit: false })
        .catch(() => undefined),
    ),
  );
}

/** A retryable write: `lsid` and `txnNumber`, outside a transaction. */
export function isRetryableWrite(ctx: RouterContext): boolean {
  return ctx.lsid !== undefined && ctx.txnNumber !== undefined && !ctx.inTransaction;
}

/** A shard's reply passed on as the router's (its cluster time fields dropped); an error is thrown. */
export function passOn(reply: Reply): RouterReply {
  if (!reply.ok) throw reply.error();
  const { $clusterTime: _t, operationTime: _o, ok: _ok, ...rest } = reply.typed;
  return rest;
}
