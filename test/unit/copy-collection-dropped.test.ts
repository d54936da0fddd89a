// A partition copy whose read cursor is killed because its collection was dropped or renamed
// (QueryPlanKilled, 175, as mongod answers the next getMore since 4.1.7): the read restarts from
// the watermark, finds the collection gone (an empty cursor) and the partition finishes with what
// was written, instead of failing the sync.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { Document } from 'bson';
import { MongoServerError, type MongoClient } from 'mongodb';
import { copyPartition } from '../../src/copy/partition-copier.js';
import { copyResources, fakeSource, partitionTask, recordingDestination } from './copy-fakes.js';
import { isTransient } from '../../src/cluster/errors.js';

const REPLY_DOCUMENTS = 40;

function queryPlanKilled(message: string): MongoServerError {
  return new MongoServerError({ ok: 0, code: 175, codeName: 'QueryPlanKilled', errmsg: message });
}

/** A source whose collection is dropped after the first reply: getMore then fails with 175 and later finds see nothing. */
function droppingSource(ids: number[], finds: Document[]): MongoClient {
  let dropped = false;
  return fakeSource({
    finds,
    replyDocuments: REPLY_DOCUMENTS,
    serve: () => (dropped ? [] : [...ids]),
    beforeGetMore: () => {
      if (dropped) return;
      dropped = true;
      throw queryPlanKilled('collection dropped. UUID 0b9f1b1e-5d0c-4c7e-9a57-3d2f2f1c9a10');
    },
  });
}

describe('a partition copy whose collection is dropped or renamed under its cursor', () => {
  it('counts QueryPlanKilled as transient', () => {
    assert.equal(isTransient(queryPlanKilled("collection renamed from 'db.a' to 'db.b'. UUID x")), true);
    assert.equal(isTransient({ code: 175 }), true);
  });

  for (const order of ['id', 'natural'] as const) {
    it(`restarts the read, finds the collection gone and finishes (${order} order)`, async () => {
      const ids = Array.from({ length: 200 }, (_, i) => i);
      const written: number[] = [];
      const finds: Document[] = [];
      const outcome = await copyPartition(
        partitionTask({ order }),
        copyResources(droppingSource(ids, finds), recordingDestination(written)),
      );
      assert.equal(outcome.status, 'done');
      assert.equal(finds.length, 2, 'one restarted read');
      // The batches written before the drop stay (a batch still being filled is dropped with the
      // pass); change-event application then replays the drop.
      assert.ok(written.length > 0 && written.length <= REPLY_DOCUMENTS);
      assert.deepEqual(written, ids.slice(0, written.length), 'what was written before the drop, in order');
      // Natural order (capped) restarts its count from nothing, as it restarts its read.
      assert.equal(outcome.copiedDocs, order === 'id' ? written.length : 0);
      if (order === 'id') assert.equal(Number(finds[1]!.min._id), written.at(-1), 'the restart reads from the watermark');
    });
  }
});
