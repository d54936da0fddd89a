/**
 * The sharded test cluster's shard keys: mongod's hash (its own test vector, and the one-block
 * MD5 fast path against node:crypto's), shard keys read from raw documents (missing fields as
 * null, dotted paths, arrays refused), keys a query fixes, and chunk lookup in a routing table.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { BSON, Int32, Long, MaxKey, MinKey, ObjectId, Timestamp, UUID } from 'bson';
import { hashByCrypto, hashRawValue, hashValue } from '../cluster/sharding/hash.js';
import { ShardKeyPattern, compareTuples } from '../cluster/sharding/shard-key.js';
import { RoutingTable } from '../cluster/sharding/routing-table.js';
import { serialize } from '../cluster/raw.js';

test("hash64 matches mongod's own test vector and its hash of null", () => {
  // src/mongo/db/hasher.cpp: BSONElementHasher::hash64({check: 42}, 0) == -944302157085130861
  assert.equal(hashValue(42).toString(), '-944302157085130861');
  assert.equal(hashValue(new Int32(42)).toString(), '-944302157085130861');
  assert.equal(hashValue(Long.fromNumber(42)).toString(), '-944302157085130861', 'numbers hash by value, whatever their type');
  assert.equal(hashValue(42.7).toString(), '-944302157085130861', 'doubles are truncated');
  assert.equal(hashValue(null).toString(), '2338878944348059895');
});

const shortValue = fc.oneof(
  fc.integer().map((n) => new Int32(n | 0)),
  fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n }).map((n) => Long.fromBigInt(n)),
  fc.double({ noNaN: false }),
  fc.string({ maxLength: 40 }),
  fc.uint8Array({ minLength: 12, maxLength: 12 }).map((b) => new ObjectId(Buffer.from(b))),
  fc.boolean(),
  fc.date({ noInvalidDate: true }),
  fc.constant(null),
);

test('the one-block MD5 path gives what node:crypto gives', () => {
  fc.assert(
    fc.property(shortValue, (value) => {
      const doc = serialize({ v: value });
      const type = doc[4]!;
      assert.equal(hashRawValue(doc, type, 7, doc.length - 1).toString(), hashByCrypto(doc, type, 7, doc.length - 1).toString());
    }),
  );
});

test('a shard key is read from raw bytes: dotted paths, missing fields as null, arrays refused', () => {
  const pattern = new ShardKeyPattern({ 'a.b': 1, c: 1 });
  const raw = (doc: Record<string, unknown>) => serialize(doc);
  assert.deepEqual(pattern.keyOfRaw(raw({ _id: 1, a: { b: 'x' }, c: 5 })), ['x', new Int32(5)]);
  assert.deepEqual(pattern.keyOfRaw(raw({ _id: 1 })), [null, null]);
  assert.deepEqual(pattern.keyOfRaw(raw({ _id: 1, a: 3, c: null })), [null, null]);
  assert.throws(() => pattern.keyOfRaw(raw({ _id: 1, a: { b: [1, 2] }, c: 1 })), /array/);
  assert.deepEqual(pattern.documentKeyOfRaw(raw({ c: 5, _id: 7, a: { b: 'x' } }), 7), { 'a.b': 'x', c: new Int32(5), _id: 7 });
  const hashed = new ShardKeyPattern({ _id: 'hashed' });
  const id = new ObjectId();
  assert.equal(hashed.keyOfRaw(raw({ _id: id, x: 1 }))[0]!.toString(), hashValue(id).toString());
});

test('the keys a query fixes: equality, $eq, $in, inside $and; anything else broadcasts', () => {
  const pattern = new ShardKeyPattern({ region: 1, n: 1 });
  assert.deepEqual(pattern.keysOfQuery({ region: 'eu', n: 3, other: { $gt: 1 } }), [['eu', 3]]);
  assert.deepEqual(pattern.keysOfQuery({ $and: [{ region: { $eq: 'eu' } }, { n: { $in: [1, 2] } }] }), [
    ['eu', 1],
    ['eu', 2],
  ]);
  assert.equal(pattern.keysOfQuery({ region: 'eu' }), undefined, 'part of the key');
  assert.equal(pattern.keysOfQuery({ region: 'eu', n: { $gt: 1 } }), undefined, 'a range');
  assert.equal(pattern.keysOfQuery({ region: /e/, n: 1 }), undefined, 'a regex');
  const hashed = new ShardKeyPattern({ k: 'hashed' });
  assert.equal(hashed.keysOfQuery({ k: 7 })![0]![0]!.toString(), hashValue(7).toString());
});

test('a routing table finds the chunk holding any key (MinKey and MaxKey bounds, int64 hashes)', () => {
  const points = [
    new MinKey(),
    Long.fromString('-4611686018427387902'),
    Long.fromNumber(0),
    Long.fromString('4611686018427387902'),
    new MaxKey(),
  ];
  const chunks = points
    .slice(0, -1)
    .map((min, i) => ({ min: [min], max: [points[i + 1]], shard: `shard0${1 + (i >> 1)}`, lastmod: new Timestamp({ t: 1, i }) }));
  const table = new RoutingTable(
    {
      ns: 'db.c',
      uuid: new UUID(),
      key: { _id: 'hashed' },
      unique: false,
      epoch: new ObjectId(),
      timestamp: new Timestamp({ t: 1, i: 0 }),
    },
    [...chunks].reverse(),
  );
  fc.assert(
    fc.property(fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n }), (n) => {
      const key = [Long.fromBigInt(n)];
      const chunk = table.chunkOf(key);
      assert.ok(compareTuples(chunk.min, key) <= 0 && compareTuples(key, chunk.max) < 0);
    }),
  );
  fc.assert(
    fc.property(shortValue, (value) => {
      const doc = serialize({ _id: value, other: 1 });
      assert.equal(table.shardOfRaw(doc), table.shardOf(table.pattern.keyOfRaw(doc)), 'the one-field fast path agrees');
    }),
  );
  assert.equal(table.shardOf([Long.fromNumber(0)]), 'shard02');
  assert.equal(table.shardOf([Long.fromNumber(-1)]), 'shard01');
  assert.deepEqual(table.shards(), ['shard01', 'shard02']);
  assert.ok(table.version().equals(new Timestamp({ t: 1, i: 3 })));
});

test('an ObjectId hashes the same through a document and through the routing path', () => {
  const id = new ObjectId();
  const doc = Buffer.from(BSON.serialize({ _id: id }));
  assert.equal(hashRawValue(doc, 0x07, 9, 21).toString(), hashValue(id).toString());
});
