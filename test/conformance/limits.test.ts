/**
 * mongod's limits and strict parsing: maxBsonObjectSize for inserted and updated documents,
 * maxWriteBatchSize for insert/update/delete, and unknown command fields refused by name.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { conformance } from './harness.js';

const MiB = 1024 * 1024;

conformance('limits', (target) => {
  test('a document over 16 MiB is refused with BSONObjectTooLarge', async () => {
    const db = target().db;
    const reply = await db.command({ insert: 'big', documents: [{ _id: 1, s: 'x'.repeat(16 * MiB) }] });
    assert.equal(reply.n, 0);
    assert.equal(reply.writeErrors[0].code, 10334);
    assert.equal(reply.writeErrors[0].index, 0);
    assert.equal((await db.collection('big').find().toArray()).length, 0);
  });

  test('an update that would grow a document past 16 MiB is refused', async () => {
    const coll = target().db.collection('growing');
    await coll.insertOne({ _id: 1, a: 'a'.repeat(9 * MiB) } as never);
    await assert.rejects(coll.updateOne({ _id: 1 } as never, { $set: { b: 'b'.repeat(9 * MiB) } }), { code: 10334 });
    const doc = await coll.findOne({ _id: 1 } as never);
    assert.equal(doc?.b, undefined, 'the document is unchanged');
  });

  test('write batches hold between 1 and 100,000 operations', async () => {
    const db = target().db;
    const tooMany = Array.from({ length: 100_001 }, (_, i) => ({ _id: i }));
    const invalidLength = { code: 16, codeName: 'InvalidLength' };
    await assert.rejects(db.command({ insert: 'batch', documents: tooMany }), {
      ...invalidLength,
      message: 'Write batch sizes must be between 1 and 100000. Got 100001 operations.',
    });
    await assert.rejects(db.command({ insert: 'batch', documents: [] }), invalidLength);
    await assert.rejects(db.command({ update: 'batch', updates: tooMany.map((d) => ({ q: d, u: { $set: { a: 1 } } })) }), invalidLength);
    await assert.rejects(db.command({ delete: 'batch', deletes: tooMany.map((d) => ({ q: d, limit: 1 })) }), invalidLength);
    assert.equal((await db.collection('batch').find().toArray()).length, 0, 'nothing was written');
    const exactly = await db.command({ insert: 'batch', documents: tooMany.slice(0, 100_000) });
    assert.equal(exactly.n, 100_000);
  });

  test('unknown fields are refused by name on strictly parsed commands', async () => {
    const db = target().db;
    const unknown = (field: string) => ({
      code: 40415,
      codeName: 'IDLUnknownField',
      message: `BSON field '${field}' is an unknown field.`,
    });
    await assert.rejects(db.command({ find: 'strict', filtr: {} }), unknown('find.filtr'));
    await assert.rejects(db.command({ aggregate: 'strict', pipeline: [], cursor: {}, explainn: true }), unknown('aggregate.explainn'));
    await assert.rejects(db.command({ insert: 'strict', documents: [{}], orderd: false }), unknown('insert.orderd'));
    await assert.rejects(db.command({ create: 'strict', cappedd: true }), unknown('create.cappedd'));
    assert.equal((await db.collection('strict').find().toArray()).length, 0);
  });
});
