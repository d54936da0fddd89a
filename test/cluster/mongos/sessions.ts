/**
 * Sessions as the router sees them: per `lsid`, the transaction in progress and the shards it
 * has touched (its participants). A participant's first command of the transaction carries
 * `startTransaction: true` (and the transaction's read concern); commit is one-phase for one
 * participant and two-phase (prepare everywhere, then commit everywhere) for several.
 */
import { Binary, Long } from 'bson';
import { ServerError } from '../errors.js';

export interface RouterTransaction {
  txnNumber: Long;
  /** Shards that have begun the transaction, in the order they joined. */
  participants: Set<string>;
  readConcern: unknown;
  state: 'active' | 'committed' | 'aborted';
}

interface RouterSession {
  lsid: { id: unknown };
  txnNumber: Long | undefined;
  transaction: RouterTransaction | undefined;
}

export function sessionKey(lsid: { id: unknown }): string {
  const id = lsid.id as Binary | undefined;
  return id instanceof Binary ? Buffer.from(id.buffer).toString('hex') : String(id);
}

export class RouterSessions {
  private readonly sessions = new Map<string, RouterSession>();

  private session(lsid: { id: unknown }): RouterSession {
    const key = sessionKey(lsid);
    let session = this.sessions.get(key);
    if (!session) this.sessions.set(key, (session = { lsid, txnNumber: undefined, transaction: undefined }));
    return session;
  }

  /**
   * The transaction a command with `autocommit: false` belongs to, starting it on
   * `startTransaction: true`, with mongod's errors otherwise.
   */
  transactionFor(lsid: { id: unknown } | undefined, txnNumber: Long | undefined, body: Record<string, unknown>): RouterTransaction {
    if (!lsid) throw new ServerError('InvalidOptions', 'Transaction number requires a session ID to also be specified');
    if (txnNumber === undefined)
      throw new ServerError('InvalidOptions', "'autocommit' field requires a transaction number to also be specified");
    const session = this.session(lsid);
    if (session.txnNumber && txnNumber.lessThan(session.txnNumber)) {
      throw new ServerError(
        'TransactionTooOld',
        `Cannot start transaction with { txnNumber: ${txnNumber.toString()} } on session ${sessionKey(lsid)} because a newer transaction with txnNumber ${session.txnNumber.toString()} has already started on this session.`,
      );
    }
    if (body.startTransaction === true) {
      session.txnNumber = txnNumber;
      session.transaction = { txnNumber, participants: new Set(), readConcern: body.readConcern, state: 'active' };
      return session.transaction;
    }
    const txn = session.transaction;
    if (!txn || !txn.txnNumber.equals(txnNumber)) {
      throw new ServerError(
        'NoSuchTransaction',
        `Given transaction number ${txnNumber.toString()} does not match any in-progress transactions. The active transaction number is ${(session.txnNumber ?? Long.fromNumber(-1)).toString()}`,
        {},
        ['TransientTransactionError'],
      );
    }
    return txn;
  }

  /** Notes a retryable write's txnNumber (a later transaction must use a higher one). */
  noteTxnNumber(lsid: { id: unknown } | undefined, txnNumber: Long | undefined): void {
    if (!lsid || txnNumber === undefined) return;
    const session = this.session(lsid);
    if (!session.txnNumber || txnNumber.greaterThan(session.txnNumber)) session.txnNumber = txnNumber;
  }

  /** Forgets sessions; returns their transactions still open (to be aborted). */
  end(lsids: { id: unknown }[]): { lsid: { id: unknown }; txn: RouterTransaction }[] {
    const open: { lsid: { id: unknown }; txn: RouterTransaction }[] = [];
    for (const lsid of lsids) {
      const key = sessionKey(lsid);
      const txn = this.sessions.get(key)?.transaction;
      if (txn?.state === 'active') open.push({ lsid, txn });
      this.sessions.delete(key);
    }
    return open;
  }
}
