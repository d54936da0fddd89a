import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { AnyBulkWriteOperation, Document } from 'mongodb';
import type { FencedCollection } from '../../src/meta/fence.js';
import { GroupedWrites, GROUPED_WRITES_MAX } from '../../src/meta/grouped-writes.js';

/** A collection whose bulkWrites wait until released, recording what each carried. */
function slowCollection() {
  const calls: { operations: AnyBulkWriteOperation<Document>[]; release: (error?: Error) => void }[] = [];
  const collection = {
    bulkWrite: (operations: AnyBulkWriteOperation<Document>[]) =>
      new Promise<void>((resolve, reject) => {
        calls.push({ operations, release: (error) => (error === undefined ? resolve() : reject(error)) });
      }),
  } as unknown as FencedCollection<Document>;
  return { collection, calls };
}

const op = (n: number): AnyBulkWriteOperation<Document> => ({ updateOne: { filter: { n }, update: { $set: { n } } } });
const tick = () => new Promise((resolve) => setImmediate(resolve));

describe('grouped metadata writes', () => {
  it('sends a lone write at once, and the writes asked for meanwhile together in the next bulkWrite, in order', async () => {
    const { collection, calls } = slowCollection();
    const grouped = new GroupedWrites(collection);
    const settled: number[] = [];
    const first = grouped.write(op(1)).then(() => settled.push(1));
    await tick();
    assert.equal(calls.length, 1);
    assert.deepEqual(calls[0]!.operations, [op(1)]);
    const later = [2, 3, 4].map((n) => grouped.write(op(n)).then(() => settled.push(n)));
    await tick();
    assert.equal(calls.length, 1, 'nothing more goes while the first write is on its way');
    assert.deepEqual(settled, []);
    calls[0]!.release();
    await first;
    await tick();
    assert.equal(calls.length, 2);
    assert.deepEqual(calls[1]!.operations, [op(2), op(3), op(4)]);
    assert.deepEqual(settled, [1], 'a write resolves only once its own bulkWrite is acknowledged');
    calls[1]!.release();
    await Promise.all(later);
    assert.deepEqual(settled, [1, 2, 3, 4]);
  });

  it('rejects every write of a failed bulkWrite, and only those', async () => {
    const { collection, calls } = slowCollection();
    const grouped = new GroupedWrites(collection);
    const first = grouped.write(op(1));
    const second = grouped.write(op(2));
    const third = grouped.write(op(3));
    await tick();
    calls[0]!.release(new Error('network'));
    await assert.rejects(first, /network/);
    await tick();
    assert.deepEqual(calls[1]!.operations, [op(2), op(3)]);
    calls[1]!.release();
    await Promise.all([second, third]);
    // The next write goes at once again.
    const fourth = grouped.write(op(4));
    await tick();
    assert.equal(calls.length, 3);
    calls[2]!.release();
    await fourth;
  });

  it(`splits a long queue into bulkWrites of at most ${GROUPED_WRITES_MAX}`, async () => {
    const { collection, calls } = slowCollection();
    const grouped = new GroupedWrites(collection);
    const writes = Array.from({ length: GROUPED_WRITES_MAX + 2 }, (_, n) => grouped.write(op(n)));
    await tick();
    calls[0]!.release();
    await tick();
    assert.equal(calls[1]!.operations.length, GROUPED_WRITES_MAX);
    calls[1]!.release();
    await tick();
    assert.equal(calls[2]!.operations.length, 1);
    calls[2]!.release();
    await Promise.all(writes);
  });
});
