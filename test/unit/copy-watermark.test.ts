import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { Watermark, type BatchMark } from '../../src/copy/watermark.js';

const mark = (i: number): BatchMark<number> => ({ lastId: i * 10 + 9, documents: (i + 1) * 10, bytes: (i + 1) * 1000 });

describe('Watermark', () => {
  it('moves only over batches written with every batch before them', () => {
    const watermark = new Watermark<number>();
    assert.equal(watermark.complete(1, mark(1)), undefined, 'batch 1 before batch 0: no move');
    assert.equal(watermark.complete(2, mark(2)), undefined);
    assert.equal(watermark.current, undefined);
    assert.equal(watermark.waiting, 2);
    assert.deepEqual(watermark.complete(0, mark(0)), mark(2), 'batch 0 releases 1 and 2');
    assert.equal(watermark.waiting, 0);
    assert.deepEqual(watermark.complete(3, mark(3)), mark(3));
  });

  it('starts from a checkpoint', () => {
    const start = { lastId: 99, documents: 100, bytes: 10_000 };
    const watermark = new Watermark<number>(start);
    assert.deepEqual(watermark.current, start);
    assert.equal(watermark.complete(1, mark(1)), undefined);
    assert.deepEqual(watermark.current, start);
  });

  it('refuses a batch completed twice or never issued', () => {
    const watermark = new Watermark<number>();
    watermark.complete(0, mark(0));
    assert.throws(() => watermark.complete(0, mark(0)), RangeError);
    watermark.complete(2, mark(2));
    assert.throws(() => watermark.complete(2, mark(2)), RangeError);
    assert.throws(() => watermark.complete(-1, mark(0)), RangeError);
  });

  it('after any completion order, covers exactly the longest completed prefix (property)', () => {
    fc.assert(
      fc.property(
        fc
          .integer({ min: 1, max: 40 })
          .chain((n) => fc.tuple(fc.constant(n), fc.shuffledSubarray([...Array(n).keys()], { minLength: 0, maxLength: n }))),
        ([, order]) => {
          const watermark = new Watermark<number>();
          const done = new Set<number>();
          for (const sequence of order) {
            watermark.complete(sequence, mark(sequence));
            done.add(sequence);
            let prefix = 0;
            while (done.has(prefix)) prefix++;
            assert.deepEqual(watermark.current, prefix === 0 ? undefined : mark(prefix - 1));
          }
        },
      ),
    );
  });
});
