/**
 * The copy's inserts on Ferry's own wire connections to a replica set's primary (the `wire`
 * write path, src/copy/write-path.ts): the batch's bytes go out as the document sequence of an
 * OP_MSG `insert`, framed once and written with the command's header in one vectored write
 * (src/cluster/op-msg.ts), where the driver's `db.command` copies the batch twice more
 * (bench/RESULTS.md, "Copy: write path"). The connections, their authentication, TLS and the
 * primary's address are src/cluster/wire-connection.ts's.
 *
 * What the driver would give, kept besides those:
 * - Retryable writes: every insert carries a session id and a transaction number; a network error
 *   or a retryable server error is retried once, with the same number, on a new connection to the
 *   (possibly new) primary, so the server applies it once (unless `retryWrites=false`).
 * - Write concern errors: the reply is read like the driver's (`WriteReply`); the caller decides.
 */
import { randomUUID } from 'node:crypto';
import { Long, UUID, type Document } from 'bson';
import { MongoNetworkError, MongoServerError, type MongoClient } from 'mongodb';
import { MAJORITY } from './concerns.js';
import { isTransient } from './errors.js';
import { documentsSections, type FramedDocuments } from './op-msg.js';
import type { WriteReply } from './raw-writes.js';
import { PRIMARY_LOST_CODES, wirePoolOf, type WirePool } from './wire-connection.js';

export { WireUnsupported } from './wire-connection.js';

/** Inserts on the wire connections of one client's primary. */
export class WireWriter {
  readonly #pool: WirePool;
  /** Server sessions not in use: one insert at a time per session, its transaction numbers rising. */
  readonly #sessions: { lsid: { id: UUID }; txnNumber: number }[] = [];

  constructor(pool: WirePool) {
    this.#pool = pool;
  }

  /** Undefined when the wire path serves this client, else why not (see WirePool.unsupported). */
  unsupported(): Promise<string | undefined> {
    return this.#pool.unsupported();
  }

  /**
   * An unordered, majority-acknowledged `insert` of the documents into `db.coll`, validation
   * bypassed. Framed in the room before them, or (`shared`) with a header of their own.
   */
  async insert(db: string, coll: string, documents: FramedDocuments): Promise<WriteReply> {
    const session = this.#sessions.pop() ?? { lsid: { id: new UUID(randomUUID()) }, txnNumber: 0 };
    const txnNumber = Long.fromNumber(++session.txnNumber);
    const attempt = async () => {
      const connection = await this.#pool.checkOut();
      try {
        const sections = documentsSections(documents, connection.limits);
        const reply = await connection.command(
          db,
          { insert: coll, ordered: false, bypassDocumentValidation: true, writeConcern: MAJORITY, lsid: session.lsid, txnNumber },
          sections,
        );
        this.#pool.checkIn(connection);
        return reply;
      } catch (error) {
        this.#pool.checkInAfter(connection, error);
        throw error;
      }
    };
    let reply: Document;
    try {
      reply = await attempt();
    } catch (error) {
      if (!this.#pool.client.options.retryWrites || !retryable(error)) throw error;
      reply = await attempt();
    } finally {
      this.#sessions.push(session);
    }
    const result: WriteReply = { n: Number(reply.n ?? 0), writeErrors: (reply.writeErrors ?? []) as WriteReply['writeErrors'] };
    if (reply.writeConcernError !== undefined) result.writeConcernError = reply.writeConcernError as WriteReply['writeConcernError'];
    return result;
  }
}

// Replies that fail are thrown as the driver's own MongoServerError (its constructor is marked
// internal, but it is how the rest of Ferry reads a server's code and labels: isTransient, retries).

/** Whether an insert may be retried once, as a retryable write (the driver's rule). */
function retryable(error: unknown): boolean {
  if (error instanceof MongoNetworkError) return true;
  if (error instanceof MongoServerError)
    return error.hasErrorLabel('RetryableWriteError') || PRIMARY_LOST_CODES.has(Number(error.code)) || isTransient(error);
  return false;
}

const writers = new WeakMap<MongoClient, WireWriter>();

/** The wire writer of `client` (one per client, its connections shared by every collection written). */
export function wireWriterOf(client: MongoClient): WireWriter {
  let writer = writers.get(client);
  if (writer === undefined) {
    writer = new WireWriter(wirePoolOf(client));
    writers.set(client, writer);
  }
  return writer;
}
