/**
 * Capped collections: eviction of the oldest documents by `max` and by `size` on insert,
 * natural order, documents larger than the collection, limits changed by collMod, and the
 * writes mongod allows on capped collections today (deletes since 5.0, resizing updates since 5.3).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { Db } from 'mongodb';
import { conformance } from './harness.js';

async function naturalIds(db: Db, name: string, direction: 1 | -1 = 1): Promise<unknown[]> {
  return (
    await db
      .collection(name)
      .find({}, { sort: { $natural: direction } })
      .toArray()
  ).map((d) => d._id);
}

async function insertEach(db: Db, name: string, docs: object[]): Promise<void> {
  for (const doc of docs) await db.collection(name).insertOne(doc as never);
}

conformance('capped collections', (target) => {
  test('max keeps the newest documents in insertion order', async () => {
    const db = target().db;
    await db.createCollection('byCount', { capped: true, size: 100000, max: 3 });
    await insertEach(
      db,
      'byCount',
      [1, 2, 3, 4, 5].map((_id) => ({ _id })),
    );
    assert.deepEqual(await naturalIds(db, 'byCount'), [3, 4, 5]);
    assert.deepEqual(await naturalIds(db, 'byCount', -1), [5, 4, 3], '$natural: -1 is newest first');
  });

  test('size bounds the bytes held; the oldest documents go first', async () => {
    const db = target().db;
    await db.createCollection('bySize', { capped: true, size: 2048 });
    const docs = Array.from({ length: 40 }, (_, i) => ({ _id: i, pad: 'p'.repeat(100) }));
    await insertEach(db, 'bySize', docs);
    const stats = await db.command({ collStats: 'bySize' });
    assert.ok(stats.size <= 2048, `size ${stats.size} stays within 2048`);
    assert.equal(stats.capped, true);
    assert.equal(stats.maxSize, 2048);
    const ids = (await naturalIds(db, 'bySize')) as number[];
    assert.ok(ids.length >= 10 && ids.length < 40, `${ids.length} documents kept`);
    assert.deepEqual(
      ids,
      Array.from({ length: ids.length }, (_, i) => 40 - ids.length + i),
      'a contiguous run of the newest',
    );
  });

  test('a document larger than the collection is refused', async () => {
    const db = target().db;
    await db.createCollection('tiny', { capped: true, size: 1024 });
    await db.collection('tiny').insertOne({ _id: 'small' } as never);
    await assert.rejects(db.collection('tiny').insertOne({ pad: 'x'.repeat(4000) }), { code: 116 });
    assert.deepEqual(await naturalIds(db, 'tiny'), ['small'], 'nothing was evicted for it');
  });

  test('a lower cappedMax takes effect on the next insert', async () => {
    const db = target().db;
    await db.createCollection('shrink', { capped: true, size: 100000, max: 10 });
    await insertEach(
      db,
      'shrink',
      Array.from({ length: 6 }, (_, i) => ({ _id: i })),
    );
    await db.command({ collMod: 'shrink', cappedMax: 2 });
    await db.collection('shrink').insertOne({ _id: 6 } as never);
    assert.deepEqual(await naturalIds(db, 'shrink'), [5, 6]);
  });

  test('documents can be deleted and updated to another size', async () => {
    const db = target().db;
    await db.createCollection('mutable', { capped: true, size: 100000 });
    await insertEach(db, 'mutable', [
      { _id: 1, v: 'a' },
      { _id: 2, v: 'b' },
      { _id: 3, v: 'c' },
    ]);
    assert.equal((await db.collection('mutable').deleteOne({ _id: 2 } as never)).deletedCount, 1);
    assert.equal((await db.collection('mutable').updateOne({ _id: 1 } as never, { $set: { v: 'a much longer value' } })).modifiedCount, 1);
    assert.deepEqual(await naturalIds(db, 'mutable'), [1, 3]);
    assert.equal((await db.collection('mutable').findOne({ _id: 1 } as never))?.v, 'a much longer value');
  });
});
