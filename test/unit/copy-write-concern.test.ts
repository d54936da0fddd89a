// The decode write path (`FERRY_COPY_WRITE_PATH=decode`) writes with `insertMany` and majority
// write concern. A batch whose write concern failed may be rolled back by a failover of the
// destination, so it must fail the partition (never pass as written, which would let a checkpoint
// cover it). The driver's failures are built here the way driver 7.9 builds them.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { serialize, type Document } from 'bson';
import { createRequire } from 'node:module';
import { MongoBulkWriteError, MongoNetworkError, type BulkWriteResult, type Db } from 'mongodb';
import { Batcher, type RawBatch } from '../../src/copy/batcher.js';
import { createBatchWriter } from '../../src/copy/write-path.js';
import { CopyWriteRefused } from '../../src/errors/errors.js';

// The driver's own result and error classes (not exported as values by the package).
type Ctor = new (...args: never[]) => unknown;
const common = createRequire(import.meta.url)('mongodb/lib/bulk/common.js') as Record<
  'BulkWriteResult' | 'WriteError' | 'WriteConcernError',
  Ctor
>;
const make = <T>(name: keyof typeof common, ...args: unknown[]) => new (common[name] as unknown as new (...a: unknown[]) => T)(...args);

const DOCUMENTS = 3;

function batch(): RawBatch {
  const batcher = new Batcher({ maxBytes: 10_000, maxDocuments: 100 });
  for (let i = 0; i < DOCUMENTS; i++) {
    const doc = Buffer.from(serialize({ _id: i, body: 'x' }));
    batcher.add(doc, 0, doc.length);
  }
  return batcher.flush()!;
}

/** A driver `BulkWriteResult` as an unordered insert of `DOCUMENTS` leaves it. */
function bulkResult(options: { inserted: number; duplicates?: number; writeConcernErrors?: Document[] }): BulkWriteResult {
  const writeErrors = Array.from({ length: options.duplicates ?? 0 }, (_, i) =>
    make('WriteError', { index: i, code: 11000, errmsg: 'E11000 duplicate key error' }),
  );
  return make<BulkWriteResult>(
    'BulkWriteResult',
    {
      ok: 1,
      writeErrors,
      writeConcernErrors: (options.writeConcernErrors ?? []).map((e) => make('WriteConcernError', e)),
      insertedIds: [],
      nInserted: options.inserted,
      nUpserted: 0,
      nMatched: 0,
      nModified: 0,
      nRemoved: 0,
      upserted: [],
    },
    false,
  );
}

/** A decode-path writer whose `insertMany` fails with `error`. */
function writerFailingWith(error: unknown) {
  const collection = {
    namespace: 'db.coll',
    insertMany: async () => {
      throw error;
    },
  };
  const db = { databaseName: 'db', collection: () => collection } as unknown as Db;
  return createBatchWriter(db, 'coll', 'decode');
}

const WRITE_CONCERN_FAILED = { code: 64, errmsg: 'waiting for replication timed out' };

describe('decode write path: write concern failures', () => {
  it('fails a batch whose write concern failed although every document was inserted (code 64, no err, no write errors)', async () => {
    // driver 7.9: the server replied with a writeConcernError; insertMany throws this.
    const error = new MongoBulkWriteError({ message: WRITE_CONCERN_FAILED.errmsg, code: 64 }, bulkResult({ inserted: DOCUMENTS }));
    assert.equal(error.err, undefined);
    assert.deepEqual(error.writeErrors, []);
    await assert.rejects(
      writerFailingWith(error).write(batch()),
      (e: unknown) => e instanceof CopyWriteRefused && e.serverCode === 64 && /write concern/.test(e.message),
    );
  });

  it('fails a batch with duplicates whose write concern failed too (writeConcernErrors in the result)', async () => {
    const result = bulkResult({ inserted: DOCUMENTS - 1, duplicates: 1, writeConcernErrors: [WRITE_CONCERN_FAILED] });
    const error = new MongoBulkWriteError(
      { message: 'E11000 duplicate key error', code: 11000, writeErrors: result.getWriteErrors() },
      result,
    );
    await assert.rejects(writerFailingWith(error).write(batch()), (e: unknown) => e instanceof CopyWriteRefused && e.serverCode === 64);
  });

  it('fails a batch whose only error is a write concern error (err)', async () => {
    const error = new MongoBulkWriteError(
      make('WriteConcernError', WRITE_CONCERN_FAILED) as never,
      bulkResult({ inserted: DOCUMENTS, writeConcernErrors: [WRITE_CONCERN_FAILED] }),
    );
    await assert.rejects(writerFailingWith(error).write(batch()), (e: unknown) => e instanceof CopyWriteRefused && e.serverCode === 64);
  });

  it('does not report a failed insert with no write errors as written', async () => {
    const error = new MongoBulkWriteError(new MongoNetworkError('connection reset'), bulkResult({ inserted: 0 }));
    await assert.rejects(writerFailingWith(error).write(batch()));
  });

  it('still tolerates duplicates alone (a re-copied range)', async () => {
    const result = bulkResult({ inserted: DOCUMENTS - 2, duplicates: 2 });
    const error = new MongoBulkWriteError(
      { message: 'E11000 duplicate key error', code: 11000, writeErrors: result.getWriteErrors() },
      result,
    );
    assert.deepEqual(await writerFailingWith(error).write(batch()), { inserted: DOCUMENTS - 2, duplicates: 2 });
  });
});
