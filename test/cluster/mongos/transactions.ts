/**
 * Committing and aborting through the router. One participant commits in one phase; several
 * commit in two: `prepareTransaction` on every participant (each checks its part can commit),
 * then `commitTransaction` on all with the largest prepare timestamp as `commitTimestamp` — or
 * `abortTransaction` on all when any part failed to prepare. A retried commit of a committed
 * transaction succeeds (the router remembers the decision), as mongos's does.
 */
import { Binary, Long, type Timestamp, UUID } from 'bson';
import { compareTimestamps } from '../clock.js';
import { ServerError } from '../errors.js';
import { type RouterContext, defineRouterCommand } from './commands.js';
import { abortEverywhere, transactionOf } from './forward.js';
import type { Router } from './router.js';
import type { RouterTransaction } from './sessions.js';

function txnFields(lsid: { id: unknown }, txn: RouterTransaction): Record<string, unknown> {
  return { lsid, txnNumber: txn.txnNumber, autocommit: false };
}

/** Commits `txn` on its participants (two-phase when there are several). */
export async function commitAcross(
  router: Router,
  lsid: { id: unknown },
  txn: RouterTransaction,
  extra: Record<string, unknown> = {},
): Promise<void> {
  if (txn.state === 'committed') return;
  if (txn.state === 'aborted') {
    throw new ServerError('NoSuchTransaction', `Transaction with { txnNumber: ${txn.txnNumber.toString()} } has been aborted.`, {}, [
      'TransientTransactionError',
    ]);
  }
  const participants = [...txn.participants];
  if (participants.length === 1) {
    const reply = await router.shard(participants[0]!).client.run('admin', { commitTransaction: 1, ...txnFields(lsid, txn), ...extra });
    if (!reply.ok) {
      txn.state = 'aborted';
      throw reply.error();
    }
  } else if (participants.length > 1) {
    const prepared = await Promise.all(
      participants.map((shard) => router.shard(shard).client.run('admin', { prepareTransaction: 1, ...txnFields(lsid, txn), ...extra })),
    );
    const failed = prepared.find((r) => !r.ok);
    if (failed) {
      const error = failed.error();
      await abortEverywhere(router, lsid, txn);
      if (!error.labels.includes('TransientTransactionError')) error.labels.push('TransientTransactionError');
      throw error;
    }
    let commitTimestamp: Timestamp | undefined;
    for (const reply of prepared) {
      const ts = reply.typed.prepareTimestamp as Timestamp;
      if (!commitTimestamp || compareTimestamps(ts, commitTimestamp) > 0) commitTimestamp = ts;
    }
    // The decision is taken: every participant commits (a prepared part cannot fail).
    await Promise.all(
      participants.map((shard) =>
        router.shard(shard).client.run('admin', { commitTransaction: 1, commitTimestamp, ...txnFields(lsid, txn), ...extra }),
      ),
    );
  }
  txn.state = 'committed';
}

/** A transaction of the router's own (moving a document whose shard key changed, for a retryable write). */
export function internalTransaction(): { lsid: { id: Binary }; txn: RouterTransaction } {
  return {
    lsid: { id: new Binary(new UUID().toBinary().buffer, Binary.SUBTYPE_UUID) },
    txn: { txnNumber: Long.fromNumber(1), participants: new Set(), readConcern: undefined, state: 'active' },
  };
}

function writeConcernOf(ctx: RouterContext): Record<string, unknown> {
  return ctx.body.writeConcern === undefined ? {} : { writeConcern: ctx.body.writeConcern };
}

defineRouterCommand({
  name: 'commitTransaction',
  adminOnly: true,
  handler: async (ctx) => {
    if (!ctx.inTransaction) throw new ServerError('InvalidOptions', 'commitTransaction must be run within a transaction');
    const txn = transactionOf(ctx)!;
    await commitAcross(ctx.router, ctx.lsid!, txn, writeConcernOf(ctx));
    return {};
  },
});

defineRouterCommand({
  name: 'abortTransaction',
  adminOnly: true,
  handler: async (ctx) => {
    if (!ctx.inTransaction) throw new ServerError('InvalidOptions', 'abortTransaction must be run within a transaction');
    const txn = transactionOf(ctx)!;
    if (txn.state === 'committed') {
      throw new ServerError('TransactionCommitted', `Transaction with { txnNumber: ${txn.txnNumber.toString()} } has been committed.`);
    }
    if (txn.state === 'aborted') {
      throw new ServerError('NoSuchTransaction', `Transaction with { txnNumber: ${txn.txnNumber.toString()} } has been aborted.`);
    }
    await abortEverywhere(ctx.router, ctx.lsid!, txn);
    return {};
  },
});

defineRouterCommand({
  name: 'endSessions',
  noAuth: true,
  handler: async ({ router, body }) => {
    const lsids = Array.isArray(body.endSessions) ? (body.endSessions as { id: unknown }[]) : [];
    for (const { lsid, txn } of router.sessions.end(lsids)) await abortEverywhere(router, lsid, txn);
    await Promise.all(
      router.shardIds().map((id) =>
        router
          .shard(id)
          .client.run('admin', { endSessions: lsids })
          .catch(() => undefined),
      ),
    );
    return {};
  },
});
