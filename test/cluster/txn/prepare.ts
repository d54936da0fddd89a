/**
 * `prepareTransaction` (admin): the first phase of a two-phase commit, which a router sends each
 * shard of a transaction that wrote to several (mongod's participant side). The shard checks
 * that its part can commit (WriteConflict otherwise, and the part aborts) and answers with a
 * `prepareTimestamp`; the router then sends `commitTransaction` to every participant, or
 * `abortTransaction` to all when any failed to prepare. Between the two, the part keeps its
 * documents (a later writer of one gets WriteConflict when it is another transaction).
 */
import { defineCommand } from '../commands/registry.js';
import { ServerError } from '../errors.js';
import { transactionOf } from './wrapper.js';

defineCommand({
  name: 'prepareTransaction',
  adminOnly: true,
  handler: (ctx) => {
    const txn = transactionOf.get(ctx)!;
    if (txn.state === 'aborted') {
      throw new ServerError('NoSuchTransaction', `Transaction with { txnNumber: ${txn.txnNumber.toString()} } has been aborted.`, {}, [
        'TransientTransactionError',
      ]);
    }
    if (txn.state === 'committed') {
      throw new ServerError('TransactionCommitted', `Transaction with { txnNumber: ${txn.txnNumber.toString()} } has been committed.`);
    }
    txn.prepare();
    return { prepareTimestamp: ctx.instance.clock.tick() };
  },
});
