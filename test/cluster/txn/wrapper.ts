/**
 * The command wrapper (commands/dispatch.ts `setCommandWrapper`): every command passes through
 * here, which is where sessions come in.
 *  - `lsid` + `txnNumber` on a write (no `autocommit`): a retryable write. A retry with the same
 *    txnNumber gets the recorded reply without running again; an older txnNumber TransactionTooOld.
 *  - `autocommit: false` (+ `startTransaction: true` on the first command): a transaction; the
 *    command runs against the transaction's view of the instance, and an error aborts it.
 *  - `endSessions` forgets sessions and aborts their transactions.
 * Errors get mongod's TransientTransactionError label (error_labels.cpp) where it applies.
 */
import { Long } from 'bson';
import { setCommandWrapper } from '../commands/dispatch.js';
import type { CommandContext, CommandReply } from '../commands/registry.js';
import { ServerError } from '../errors.js';
import { isChangeStreamPipeline } from '../changestream/open.js';
import { recordRetryableWrite, type Session, SessionRegistry, sessionsOf } from './sessions.js';
import { Transaction } from './transaction.js';

/** Writes the driver retries (retryable writes). */
const RETRYABLE_WRITES = new Set(['insert', 'update', 'delete', 'findAndModify', 'bulkWrite']);
/** Commands mongod runs inside a multi-document transaction. */
const ALLOWED_IN_TRANSACTION = new Set([
  'find',
  'getMore',
  'killCursors',
  'insert',
  'update',
  'delete',
  'findAndModify',
  'bulkWrite',
  'aggregate',
  'distinct',
  'create',
  'createIndexes',
  'commitTransaction',
  'abortTransaction',
  'prepareTransaction',
]);
const COMMIT_OR_ABORT = new Set(['commitTransaction', 'abortTransaction', 'prepareTransaction']);
/** Codes that mean "retry the whole transaction" (mongod's isTransientTransactionError). */
const TRANSIENT_CODES = new Set([112, 24, 251]);

/** The transaction a commitTransaction/abortTransaction request addresses. */
export const transactionOf = new WeakMap<CommandContext, Transaction>();

function sessionId(session: Session): string {
  return SessionRegistry.key(session.lsid);
}

function tooOld(session: Session, n: Long, retryableWrite: boolean): ServerError {
  const current = session.transaction ? 'transaction' : 'retryable write';
  return new ServerError(
    'TransactionTooOld',
    retryableWrite
      ? `Retryable write with txnNumber ${n.toString()} is prohibited on session ${sessionId(session)} because a newer ${current} with txnNumber ${session.txnNumber!.toString()} has already started on this session.`
      : `Cannot start transaction with { txnNumber: ${n.toString()} } on session ${sessionId(session)} because a newer ${current} with txnNumberAndRetryCounter { txnNumber: ${session.txnNumber!.toString()}, txnRetryCounter: 0 } has already started on this session.`,
  );
}

async function retryableWrite(ctx: CommandContext, name: string, run: () => Promise<CommandReply>): Promise<CommandReply> {
  const session = sessionsOf(ctx.instance).get(ctx.op.lsid!);
  const n = ctx.op.txnNumber!;
  if (session.txnNumber) {
    if (n.lessThan(session.txnNumber)) throw tooOld(session, n, true);
    if (n.equals(session.txnNumber)) {
      if (session.transaction)
        throw new ServerError('IncompleteTransactionHistory', 'Cannot retry a retryable write that has been converted into a transaction');
      const recorded = session.retryable?.get(retryKey(ctx, name));
      if (recorded) return { ...recorded };
      // Another batch of the same write (a router sends one per shard, with their stmtIds).
      if (session.retryable && Array.isArray(ctx.body.stmtIds)) {
        const reply = await run();
        session.retryable.set(retryKey(ctx, name), { ...reply });
        recordRetryableWrite(ctx.instance, session);
        return reply;
      }
    }
  }
  // A newer txnNumber ends whatever the session was doing, an open transaction included.
  session.transaction?.abort();
  session.txnNumber = n;
  session.transaction = undefined;
  session.retryable = undefined;
  const reply = await run();
  session.retryable = new Map([[retryKey(ctx, name), { ...reply }]]);
  recordRetryableWrite(ctx.instance, session);
  return reply;
}

/** What identifies one part of a retryable write: the command, and its statements' ids when given. */
function retryKey(ctx: CommandContext, name: string): string {
  const ids = ctx.body.stmtIds;
  return Array.isArray(ids) ? `${name}:${ids.join(',')}` : name;
}

/** Finds (or starts) the transaction a request belongs to, with mongod's checks. */
function transactionFor(ctx: CommandContext, name: string): Transaction {
  const { body, op } = ctx;
  if (!op.lsid) throw new ServerError('InvalidOptions', 'Transaction number requires a session ID to also be specified');
  if (op.txnNumber === undefined)
    throw new ServerError('InvalidOptions', "'autocommit' field requires a transaction number to also be specified");
  if (body.autocommit !== false) throw new ServerError('InvalidOptions', 'Specifying autocommit=true is not allowed.');
  if (body.startTransaction !== undefined && body.startTransaction !== true) {
    throw new ServerError('InvalidOptions', 'Specifying startTransaction=false is not allowed.');
  }
  const registry = sessionsOf(ctx.instance);
  const session = registry.get(op.lsid);
  const n = op.txnNumber;
  if (session.txnNumber && n.lessThan(session.txnNumber)) throw tooOld(session, n, false);
  if (body.startTransaction === true) {
    if (session.txnNumber && n.equals(session.txnNumber)) {
      throw new ServerError(
        'ConflictingOperationInProgress',
        'Only servers in a sharded cluster can start a new transaction at the active transaction number',
      );
    }
    session.transaction?.abort();
    session.txnNumber = n;
    session.retryable = undefined;
    session.transaction = new Transaction(ctx.instance, op.lsid, n, registry.transactionLifetimeSeconds);
    return session.transaction;
  }
  const txn = session.transaction;
  if (!txn || !session.txnNumber?.equals(n)) {
    throw new ServerError(
      'NoSuchTransaction',
      `Given transaction number ${n.toString()} does not match any in-progress transactions. The active transaction number is ${(session.txnNumber ?? Long.fromNumber(-1)).toString()}`,
    );
  }
  if (!COMMIT_OR_ABORT.has(name)) {
    if (txn.state === 'aborted')
      throw new ServerError('NoSuchTransaction', `Transaction with { txnNumber: ${n.toString()} } has been aborted.`);
    if (txn.state === 'committed')
      throw new ServerError('TransactionCommitted', `Transaction with { txnNumber: ${n.toString()} } has been committed.`);
  }
  return txn;
}

async function inTransaction(ctx: CommandContext, name: string, run: () => Promise<CommandReply>): Promise<CommandReply> {
  let txn: Transaction | undefined;
  try {
    txn = transactionFor(ctx, name);
    if (!ALLOWED_IN_TRANSACTION.has(name) || (name === 'aggregate' && isChangeStreamPipeline(ctx.body.pipeline))) {
      throw new ServerError('OperationNotSupportedInTransaction', `Cannot run '${name}' in a multi-document transaction.`);
    }
    if (
      name === 'createIndexes' &&
      typeof ctx.body.createIndexes === 'string' &&
      ctx.instance.catalog.get(ctx.db, ctx.body.createIndexes)
    ) {
      // Indexes may be created in a transaction only on a collection it creates (mongod 4.4+).
      throw new ServerError(
        'OperationNotSupportedInTransaction',
        `Cannot create new indexes on existing collection ${ctx.db}.${ctx.body.createIndexes} in a multi-document transaction.`,
      );
    }
    transactionOf.set(ctx, txn);
    if (COMMIT_OR_ABORT.has(name)) return await run();
    ctx.instance = txn.view;
    ctx.op = { ...ctx.op, stage: txn.stage };
    const reply = await run();
    // In a transaction mongod fails the whole command on a write error (write_ops_exec.cpp
    // handleError), and the error aborts the transaction.
    const writeErrors = reply.writeErrors as { index: number; code: number; errmsg: string }[] | undefined;
    if (writeErrors && writeErrors.length > 0) {
      const { index: _index, code, errmsg, ...extra } = writeErrors[0];
      throw new ServerError(code, errmsg, extra);
    }
    return reply;
  } catch (e) {
    // A write that would move a document to another shard (WouldChangeOwningShard) leaves the
    // transaction open: the router then moves the document within it, as mongod allows.
    if (txn && !COMMIT_OR_ABORT.has(name) && !(e instanceof ServerError && e.code === 283)) txn.abort();
    if (e instanceof ServerError && TRANSIENT_CODES.has(e.code) && !e.labels.includes('TransientTransactionError')) {
      e.labels.push('TransientTransactionError');
    }
    throw e;
  }
}

setCommandWrapper(async (ctx, name, run) => {
  const { body, op } = ctx;
  if (name === 'endSessions') {
    const ids = Array.isArray(body.endSessions) ? (body.endSessions as { id: unknown }[]) : [];
    sessionsOf(ctx.instance).end(ids);
    return run();
  }
  if (body.autocommit !== undefined || body.startTransaction !== undefined) return inTransaction(ctx, name, run);
  if (COMMIT_OR_ABORT.has(name)) {
    throw new ServerError('InvalidOptions', `${name} must be run within a transaction`);
  }
  if (op.lsid && op.txnNumber !== undefined && RETRYABLE_WRITES.has(name)) return retryableWrite(ctx, name, run);
  return run();
});
