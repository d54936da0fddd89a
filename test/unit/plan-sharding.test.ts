/**
 * The pure parts of sharding a destination collection: where its chunks are pre-split (hashed:
 * mongod's own points; ranged: quantiles of a sample, so a skewed distribution still gives chunks
 * of similar counts), which source indexes a key allows (spec §4.1 rules 5–7), and which updates
 * may change a document's shard key.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { serialize, type Document } from 'bson';
import { hashedSplitValues, planSplitPoints } from '../../src/plan/split-points.js';
import { checkShardKeyIndexes } from '../../src/plan/sharding-rules.js';
import { mayChangeShardKey } from '../../src/cea/shard-key-change.js';
import { compareKeyDocuments } from '../../src/cluster/sharding.js';

describe('split points', () => {
  it('of a leading hashed key are mongod’s for an empty collection: evenly spaced, symmetric around 0', () => {
    assert.deepEqual(hashedSplitValues(4).map(String), ['-4611686018427387902', '0', '4611686018427387902']);
    const three = hashedSplitValues(3).map((v) => v.toBigInt());
    assert.equal(three.length, 2);
    assert.equal(three[0], -three[1]!);
    assert.deepEqual(planSplitPoints({ a: 'hashed', b: 1 }, 4, []).length, 3);
  });

  it('of a ranged key split a skewed sample into chunks of about equal counts, strictly increasing', () => {
    // Three quarters of the documents have customer < 10, the rest spread to 1000.
    const values = Array.from({ length: 1000 }, (_, i) => (i % 4 === 3 ? 10 + i : i % 10));
    const points = planSplitPoints(
      { customer: 1 },
      4,
      values.map((v) => [v]),
    );
    assert.ok(points.length >= 2 && points.length <= 3, JSON.stringify(points));
    for (let i = 1; i < points.length; i++) assert.ok(compareKeyDocuments(points[i - 1]!, points[i]!) < 0);
    const bounds = [-Infinity, ...points.map((p) => p.customer as number), Infinity];
    const counts = bounds.slice(1).map((upper, i) => values.filter((v) => v >= bounds[i]! && v < upper).length);
    assert.ok(Math.max(...counts) <= 0.5 * values.length, `no chunk holds half the documents: ${JSON.stringify(counts)}`);
  });

  it('make no empty chunk from equal values, and none from a sample of one value', () => {
    assert.deepEqual(
      planSplitPoints(
        { a: 1 },
        4,
        Array.from({ length: 100 }, () => [7]),
      ),
      [],
    );
    const compound = planSplitPoints(
      { region: 1, seq: 1 },
      4,
      Array.from({ length: 400 }, (_, i) => [['eu', 'us'][i % 2], i]),
    );
    assert.equal(compound.length, 3);
    assert.deepEqual(Object.keys(compound[0]!), ['region', 'seq']);
  });
});

describe('shard key index rules at start', () => {
  const id = { key: { _id: 1 }, name: '_id_' };
  const names = (fn: () => void) => {
    try {
      fn();
      return 'accepted';
    } catch (error) {
      return (error as { code?: string; name: string }).code ?? (error as Error).name;
    }
  };

  it('refuse a unique index that does not start with the key (UniqueIndexIncompatible), even with createSupportingIndexes', () => {
    const indexes = [id, { key: { email: 1 }, name: 'email_1', unique: true }];
    assert.equal(
      names(() => checkShardKeyIndexes('d.c', { customer: 1 }, indexes, undefined, true)),
      'UniqueIndexIncompatible',
    );
    const compatible = [id, { key: { customer: 1, email: 1 }, name: 'c_e', unique: true }];
    assert.equal(
      names(() => checkShardKeyIndexes('d.c', { customer: 1 }, compatible, undefined, false)),
      'accepted',
    );
  });

  it('need a source index on the key unless createSupportingIndexes (ShardKeyIndexMissing); sparse or partial ones do not count', () => {
    const sparse = [
      id,
      { key: { customer: 1 }, name: 'c', sparse: true },
      { key: { customer: 1, x: 1 }, name: 'p', partialFilterExpression: { x: 1 } },
    ];
    assert.equal(
      names(() => checkShardKeyIndexes('d.c', { customer: 1 }, sparse, undefined, false)),
      'ShardKeyIndexMissing',
    );
    assert.equal(
      names(() => checkShardKeyIndexes('d.c', { customer: 1 }, sparse, undefined, true)),
      'accepted',
    );
    const hashed = [id, { key: { customer: 1 }, name: 'c' }];
    assert.equal(
      names(() => checkShardKeyIndexes('d.c', { customer: 'hashed' }, hashed, undefined, false)),
      'ShardKeyIndexMissing',
    );
    assert.equal(
      names(() => checkShardKeyIndexes('d.c', { customer: 1 }, hashed, undefined, false)),
      'accepted',
    );
  });

  it('need one with the simple collation on a collection with another default', () => {
    const collation = { locale: 'fr', strength: 2 };
    const inherited = [id, { key: { name: 1 }, name: 'n', collation }];
    assert.equal(
      names(() => checkShardKeyIndexes('d.c', { name: 1 }, inherited, collation, false)),
      'ShardKeyIndexMissing',
    );
    const simple = [...inherited, { key: { name: 1, x: 1 }, name: 'ns', collation: { locale: 'simple' } }];
    assert.equal(
      names(() => checkShardKeyIndexes('d.c', { name: 1 }, simple, collation, false)),
      'accepted',
    );
  });
});

describe('updates that may change a shard key', () => {
  const description = (doc: Document) => serialize({ updatedFields: {}, removedFields: [], truncatedArrays: [], ...doc });
  const key = { 'customer.region': 1 as const, _id: 1 as const };

  it('are those setting or removing a key field, a document above it or a part of it', () => {
    assert.equal(mayChangeShardKey(description({ updatedFields: { 'customer.region': 'eu' } }), key), true);
    assert.equal(mayChangeShardKey(description({ updatedFields: { customer: { region: 'us' } } }), key), true);
    assert.equal(mayChangeShardKey(description({ updatedFields: { 'customer.region.code': 1 } }), key), true);
    assert.equal(mayChangeShardKey(description({ removedFields: ['customer'] }), key), true);
    assert.equal(mayChangeShardKey(undefined, key), true, 'no description: it may have');
  });

  it('are not those touching other fields only', () => {
    assert.equal(mayChangeShardKey(description({ updatedFields: { total: 3, 'customer.name': 'x', customers: 1 } }), key), false);
    assert.equal(
      mayChangeShardKey(description({ removedFields: ['note'], truncatedArrays: [{ field: 'items', newSize: 1 }] }), key),
      false,
    );
  });
});
