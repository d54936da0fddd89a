/**
 * Logical sessions: per `lsid`, the highest txnNumber seen, the reply of the latest retryable
 * write (returned again, without re-executing, when the driver retries it) and the session's
 * transaction. Sessions live until `endSessions`.
 */
import { Binary, BSON, type Long } from 'bson';
import type { Instance } from '../instance.js';
import type { Collection } from '../storage/collection.js';
import { encodeDocument, prepareForInsert, typed } from '../raw.js';
import type { CommandReply } from '../commands/registry.js';
import type { Transaction } from './transaction.js';

export interface Session {
  lsid: { id: Binary };
  /** The active txnNumber (retryable write or transaction); undefined before the first. */
  txnNumber: Long | undefined;
  /**
   * The replies recorded for the retryable write at `txnNumber`, by command name (and, for a
   * router's batches of one write, by the `stmtIds` each carried).
   */
  retryable: Map<string, CommandReply> | undefined;
  /** The transaction at `txnNumber`, when that number started one. */
  transaction: Transaction | undefined;
}

/** Default `transactionLifetimeLimitSeconds` (mongod's default). */
export const DEFAULT_TRANSACTION_LIFETIME_SECONDS = 60;

export class SessionRegistry {
  private readonly sessions = new Map<string, Session>();
  /** mongod's transactionLifetimeLimitSeconds for transactions started from now on. */
  transactionLifetimeSeconds = DEFAULT_TRANSACTION_LIFETIME_SECONDS;

  static key(lsid: { id: unknown }): string {
    const id = lsid.id as Binary | undefined;
    return id instanceof Binary ? Buffer.from(id.buffer).toString('hex') : String(id);
  }

  get(lsid: { id: Binary }): Session {
    const key = SessionRegistry.key(lsid);
    let session = this.sessions.get(key);
    if (!session) {
      session = { lsid, txnNumber: undefined, retryable: undefined, transaction: undefined };
      this.sessions.set(key, session);
    }
    return session;
  }

  /** Ends sessions (endSessions): their open transactions abort. */
  end(lsids: { id: unknown }[]): void {
    for (const lsid of lsids) {
      const key = SessionRegistry.key(lsid);
      this.sessions.get(key)?.transaction?.abort();
      this.sessions.delete(key);
    }
  }
}

const registries = new WeakMap<Instance, SessionRegistry>();

/** The session registry of a node. */
export function sessionsOf(instance: Instance): SessionRegistry {
  let registry = registries.get(instance);
  if (!registry) {
    registry = new SessionRegistry();
    restoreRetryableWrites(instance, registry);
    registries.set(instance, registry);
  }
  return registry;
}

/**
 * Where a session's latest retryable write is kept: `config.transactions`, one document per
 * session as mongod keeps it (`_id: lsid`, `txnNum`, `lastWriteDate`), with the recorded replies
 * in `ferryReplies` (mongod finds it again in the oplog instead), so that a node restarted on its
 * data directory still answers a retried write without running it again.
 */
function transactionsCollection(instance: Instance): Collection | undefined {
  const ns = instance.catalog.get('config', 'transactions');
  return ns?.kind === 'collection' ? ns : undefined;
}

/** Records a session's latest retryable write (see transactionsCollection). */
export function recordRetryableWrite(instance: Instance, session: Session): void {
  const collection = transactionsCollection(instance);
  if (!collection || !session.retryable || !session.txnNumber) return;
  const { doc, id } = prepareForInsert(
    encodeDocument({
      _id: { id: session.lsid.id },
      txnNum: session.txnNumber,
      lastWriteDate: new Date(),
      // One reply per part of the write (a router sends one batch per shard, each with its stmtIds).
      ferryReplies: [...session.retryable].map(([key, reply]) => ({ key, reply: new Binary(encodeDocument(reply)) })),
    }),
  );
  const existing = collection.get(id);
  if (existing) collection.replace(existing, doc);
  else collection.insert(doc, id);
}

function restoreRetryableWrites(instance: Instance, registry: SessionRegistry): void {
  for (const { raw } of transactionsCollection(instance)?.byRid.values() ?? []) {
    const doc = BSON.deserialize(raw, { promoteLongs: false }) as {
      _id: { id: Binary };
      txnNum: Long;
      ferryReplies?: { key: string; reply: Binary }[];
    };
    if (!doc.ferryReplies) continue;
    const session = registry.get(doc._id);
    session.txnNumber = doc.txnNum;
    session.retryable = new Map(doc.ferryReplies.map(({ key, reply }) => [key, BSON.deserialize(reply.buffer, typed)]));
  }
}
