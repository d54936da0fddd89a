/**
 * Sending raw write statements to the destination: `update` (`updates`) and `delete`
 * (`deletes`) commands whose statements travel as an OP_MSG document sequence of the bytes
 * already built (write-plan.ts), through the cluster layer's raw writes (src/cluster/raw-writes.ts),
 * as the copy's raw write path does.
 *
 * Statements are unordered (at most one per document, see write-plan.ts), bypass document
 * validation (the source accepted these documents) and use majority write concern: a batch is
 * acknowledged only once durable, because the resume token moves past it afterwards.
 *
 * Every write error is a failure, except a duplicate key on an upsert: two upserts of one `_id`
 * may race (a copy worker's insert and an event's upsert), and the statement is sent again once,
 * when it finds the document and replaces it.
 */
import type { Db } from 'mongodb';
import { MAX_WRITE_BATCH_SIZE } from '../domain/constants.js';
import { isDuplicateKey } from '../cluster/errors.js';
import { writeRaw, type ServerWriteError } from '../cluster/raw-writes.js';
import { ApplyWriteRefused } from '../errors/errors.js';

/** Bytes of statements per command, well inside a 48 MB message. */
const MAX_COMMAND_BYTES = 16 * 1024 * 1024;
/** Times an upsert refused for a duplicate key is sent again. */
const DUPLICATE_RETRIES = 2;

type StatementKind = 'update' | 'delete';

/** Splits statements into command-sized chunks (a statement larger than the limit travels alone). */
export function chunkStatements(
  statements: readonly Uint8Array[],
  maxBytes = MAX_COMMAND_BYTES,
  maxCount = MAX_WRITE_BATCH_SIZE,
): Uint8Array[][] {
  const chunks: Uint8Array[][] = [];
  let current: Uint8Array[] = [];
  let bytes = 0;
  for (const statement of statements) {
    if (current.length > 0 && (bytes + statement.length > maxBytes || current.length >= maxCount)) {
      chunks.push(current);
      current = [];
      bytes = 0;
    }
    current.push(statement);
    bytes += statement.length;
  }
  if (current.length > 0) chunks.push(current);
  return chunks;
}

async function sendChunk(db: Db, kind: StatementKind, coll: string, statements: Uint8Array[]): Promise<ServerWriteError[]> {
  const reply = await writeRaw(db, kind, coll, statements, { bypassDocumentValidation: kind === 'update' });
  const concern = reply.writeConcernError;
  if (concern !== undefined) {
    throw new ApplyWriteRefused(`${kind} on ${db.databaseName}.${coll}: write concern not satisfied: ${concern.errmsg ?? ''}`, {
      serverCode: concern.code,
    });
  }
  return reply.writeErrors;
}

/** Sends `statements` of one kind to `db.coll`; resolves once all are durably applied. */
export async function sendStatements(db: Db, kind: StatementKind, coll: string, statements: readonly Uint8Array[]): Promise<void> {
  for (const chunk of chunkStatements(statements)) {
    let pending = chunk;
    for (let attempt = 0; pending.length > 0; attempt++) {
      const errors = await sendChunk(db, kind, coll, pending);
      const retry: Uint8Array[] = [];
      for (const error of errors) {
        if (kind === 'update' && isDuplicateKey(error) && attempt < DUPLICATE_RETRIES) {
          retry.push(pending[error.index]!);
          continue;
        }
        // The statement is user data: name it by position and size only.
        throw new ApplyWriteRefused(
          `${kind} on ${db.databaseName}.${coll} refused statement #${error.index} of ${pending.length} ` +
            `(${pending[error.index]?.length ?? '?'} bytes): code ${error.code}: ${error.errmsg ?? 'no message'}`,
          { serverCode: error.code },
        );
      }
      pending = retry;
    }
  }
}
