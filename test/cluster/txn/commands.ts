/**
 * `commitTransaction` and `abortTransaction` (admin). A commit is idempotent (a retried commit of
 * a committed transaction succeeds); a commit after an abort is NoSuchTransaction; an abort after
 * a commit is TransactionCommitted, as mongod answers.
 */
import { defineCommand } from '../commands/registry.js';
import { ServerError } from '../errors.js';
import type { Transaction } from './transaction.js';
import { transactionOf } from './wrapper.js';

function aborted(txn: Transaction): ServerError {
  return new ServerError('NoSuchTransaction', `Transaction with { txnNumber: ${txn.txnNumber.toString()} } has been aborted.`);
}

defineCommand({
  name: 'commitTransaction',
  adminOnly: true,
  handler: (ctx) => {
    const txn = transactionOf.get(ctx)!;
    if (txn.state === 'aborted') throw aborted(txn);
    txn.commit();
    return {};
  },
});

defineCommand({
  name: 'abortTransaction',
  adminOnly: true,
  handler: (ctx) => {
    const txn = transactionOf.get(ctx)!;
    if (txn.state === 'committed') {
      throw new ServerError('TransactionCommitted', `Transaction with { txnNumber: ${txn.txnNumber.toString()} } has been committed.`);
    }
    if (txn.state === 'aborted') throw aborted(txn);
    txn.abort();
    return {};
  },
});
