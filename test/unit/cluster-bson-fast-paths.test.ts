// The test cluster's fast paths on the insert and index-build paths agree with the general ones:
// number comparison without bigints, `_id` decoding without a wrapper document, and decoding only
// the fields an index reads; replies that embed stored documents encoded as the general encoder would.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { BSON, Double, Int32, Long, ObjectId, Timestamp } from 'bson';
import { compareValues } from '../../test/cluster/bson-order.js';
import {
  decodeElement,
  decodeFields,
  encodeDocument,
  findElement,
  pathMeetsArray,
  promoted,
  RawDoc,
  RawDocArray,
  serialize,
  validateDocument,
} from '../../test/cluster/raw.js';
import { compareBsonValues } from '../../src/bson/index.js';
import { bsonNumber, bsonValue } from './bson-arbitraries.js';

const sign = (n: number) => (n < 0 ? -1 : n > 0 ? 1 : 0);

describe('test cluster: number order', () => {
  it("orders Int32, Double and Long values as Ferry's independent comparison does (by exact value, NaN lowest)", () => {
    fc.assert(
      fc.property(bsonNumber, bsonNumber, (a, b) => {
        assert.equal(sign(compareValues(a, b)), sign(compareBsonValues(a, b)));
      }),
      { numRuns: 5000 },
    );
  });

  it('orders Longs whose high words are equal by their low words as unsigned numbers (as `_id`s in a B+tree)', () => {
    const around = [
      0n,
      2n ** 31n - 1n,
      2n ** 31n,
      2n ** 32n - 1n,
      2n ** 32n,
      2n ** 32n + 2n ** 31n,
      -1n,
      -(2n ** 31n),
      -(2n ** 31n) - 1n,
      -(2n ** 32n),
    ];
    fc.assert(
      fc.property(fc.constantFrom(...around), fc.constantFrom(...around), fc.bigInt({ min: -3n, max: 3n }), (x, y, shift) => {
        const [a, b] = [Long.fromBigInt(x + shift), Long.fromBigInt(y)];
        assert.equal(sign(compareValues(a, b)), sign(Number(x + shift - y)));
      }),
    );
  });

  it("orders ObjectIds, Int32s, Longs and Timestamps of one type, or of two, as Ferry's independent comparison does", () => {
    // The test cluster compares the commonest `_id` types without ranking them first (B+tree
    // descents): a Timestamp is a Long too (an unsigned one) and must still rank apart, above numbers.
    const typed = fc.oneof(
      fc.uint8Array({ minLength: 12, maxLength: 12 }).map((bytes) => new ObjectId(bytes)),
      fc.integer({ min: -(2 ** 31), max: 2 ** 31 - 1 }).map((n) => new Int32(n)),
      fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n }).map((n) => Long.fromBigInt(n)),
      fc.record({ t: fc.nat(), i: fc.nat() }).map((parts) => new Timestamp(parts)),
    );
    fc.assert(
      fc.property(typed, typed, (a, b) => {
        assert.equal(sign(compareValues(a, b)), sign(compareBsonValues(a, b)));
      }),
      { numRuns: 5000 },
    );
  });

  it('tells apart Longs beyond 2^53 that the same double would round together', () => {
    const big = Long.fromBigInt(2n ** 53n + 1n);
    assert.equal(compareValues(big, new Double(2 ** 53)), 1);
    assert.equal(compareValues(Long.fromBigInt(2n ** 53n), new Double(2 ** 53)), 0);
    assert.equal(compareValues(new Int32(-1), Long.fromBigInt(-(2n ** 63n))), 1);
  });
});

describe('test cluster: decoding part of a document', () => {
  it('decodes an Int32, Long or Double `_id` as the type-faithful decoder does', () => {
    fc.assert(
      fc.property(bsonNumber, (id) => {
        const doc = serialize({ _id: id, x: 1 });
        const expected = BSON.deserialize(doc, { promoteValues: false }) as { _id: unknown };
        const decoded = decodeElement(doc, findElement(doc, '_id')!);
        assert.equal((decoded as { _bsontype: string })._bsontype, (expected._id as { _bsontype: string })._bsontype);
        assert.equal(compareBsonValues(decoded, expected._id), 0);
      }),
    );
  });

  it('decodes ObjectId `_id`s that stay their own when the next one is decoded', () => {
    const ids = [new ObjectId(), new ObjectId(), new ObjectId('ffffffffffffffffffffffff')];
    const decoded = ids.map((id) => {
      const doc = serialize({ _id: id, x: 1 });
      return decodeElement(doc, findElement(doc, '_id')!) as ObjectId;
    });
    assert.deepEqual(
      decoded.map((id) => id.toHexString()),
      ids.map((id) => id.toHexString()),
    );
  });

  it('tells an insert whether a document has a top-level timestamp to look at, and only then', () => {
    const empty = new Timestamp({ t: 0, i: 0 });
    assert.equal(validateDocument(serialize({ a: 1, at: empty })), true);
    assert.equal(validateDocument(serialize({ _id: empty })), true, '_id: the insert looks, and leaves it alone');
    assert.equal(validateDocument(serialize({ a: 1, nested: { at: empty }, list: [empty] })), false);
    assert.equal(validateDocument(serialize({ a: 'x', b: [1, 2] })), false);
  });

  it('decodes chosen top-level fields exactly as a whole-document decode shows them', () => {
    const field = fc.constantFrom('a', 'b', 'é', 'c');
    fc.assert(
      fc.property(fc.array(fc.tuple(field, bsonValue), { maxLength: 6 }), fc.subarray(['a', 'b', 'é', 'zz']), (fields, names) => {
        const doc = serialize(Object.fromEntries(fields));
        let whole: Record<string, unknown>;
        try {
          whole = BSON.deserialize(doc, promoted);
        } catch {
          // A BSON regex that is no JavaScript RegExp ("(") fails a whole decode; fields not chosen do not matter.
          fc.pre(false);
          return;
        }
        const expected = Object.fromEntries(Object.entries(whole).filter(([name]) => names.includes(name)));
        assert.deepEqual(decodeFields(doc, names, promoted), expected);
      }),
    );
  });

  it('keeps the last of a repeated field name, as a whole-document decode does', () => {
    // { a: 1, a: 2 }: built by hand, serializers cannot repeat a name.
    const one = serialize({ a: 1 });
    const element = one.subarray(4, one.length - 1);
    const two = serialize({ a: 2 }).subarray(4, -1);
    const doc = Buffer.concat([Buffer.alloc(4), element, two, Buffer.from([0])]);
    doc.writeInt32LE(doc.length, 0);
    assert.deepEqual(decodeFields(doc, ['a'], promoted), BSON.deserialize(doc, promoted));
    assert.deepEqual(decodeFields(doc, ['a'], promoted), { a: 2 });
  });
});

/** Whether a decoded document's dotted path meets an array (is one, or runs through one). */
function decodedPathMeetsArray(value: unknown, parts: readonly string[]): boolean {
  if (parts.length === 0) return false;
  if (typeof value !== 'object' || value === null || '_bsontype' in value || value instanceof Date) return false;
  const next = (value as Record<string, unknown>)[parts[0]!];
  if (Array.isArray(next)) return true;
  return Object.prototype.hasOwnProperty.call(value, parts[0]!) && decodedPathMeetsArray(next, parts.slice(1));
}

describe('test cluster: key paths read raw', () => {
  it('finds an array along a dotted path exactly when the decoded document has one there', () => {
    const name = fc.constantFrom('a', 'b', 'é');
    const value: fc.Arbitrary<unknown> = fc.letrec<{ value: unknown }>((tie) => ({
      value: fc.oneof(
        { depthSize: 'small' },
        fc.integer(),
        fc.string(),
        fc.array(tie('value'), { maxLength: 3 }),
        fc.dictionary(name, tie('value'), { maxKeys: 3 }),
      ),
    })).value;
    fc.assert(
      fc.property(fc.dictionary(name, value, { maxKeys: 3 }), fc.array(name, { minLength: 1, maxLength: 3 }), (doc, path) => {
        const raw = serialize(doc);
        const parts = path.map((part) => Buffer.from(part, 'utf8'));
        assert.equal(pathMeetsArray(raw, parts), decodedPathMeetsArray(BSON.deserialize(raw, promoted), path));
      }),
      { numRuns: 2000 },
    );
  });
});

describe('test cluster: replies that embed stored documents', () => {
  const document = fc.dictionary(
    fc.constantFrom('a', 'b', 'é', 'name'),
    fc.oneof(fc.integer(), fc.string(), fc.boolean(), fc.dictionary(fc.constantFrom('x', 'y'), fc.integer(), { maxKeys: 2 })),
    { maxKeys: 4 },
  );
  const withIds = (docs: Record<string, unknown>[]) => docs.map((doc, i) => ({ _id: i, ...doc }));

  it("encodes a cursor batch byte for byte as serializing the decoded reply would (every index's field name)", () => {
    fc.assert(
      fc.property(fc.array(document, { maxLength: 130 }), fc.string(), (docs, ns) => {
        const batch = withIds(docs);
        const reply = (firstBatch: unknown) => ({ cursor: { firstBatch, id: Long.fromNumber(7), ns }, ok: 1 });
        const encoded = encodeDocument(reply(new RawDocArray(batch.map((doc) => serialize(doc)))));
        assert.deepEqual(encoded, serialize(reply(batch)));
      }),
      { numRuns: 300 },
    );
  });

  it('encodes a batch past 1,000 documents (four-digit field names) and documents embedded alone or in arrays', () => {
    const batch = withIds(Array.from({ length: 1234 }, (_, i) => ({ a: `v${i}` })));
    const nested = { _id: 'n', list: [1, 2] };
    const value = { pre: nested, images: [nested, 3] };
    const encoded = encodeDocument({
      cursor: { nextBatch: new RawDocArray(batch.map((doc) => serialize(doc))), id: Long.fromNumber(0) },
      pre: new RawDoc(serialize(nested)),
      images: [new RawDoc(serialize(nested)), 3],
      ok: 1,
    });
    assert.deepEqual(encoded, serialize({ cursor: { nextBatch: batch, id: Long.fromNumber(0) }, ...value, ok: 1 }));
    validateDocument(encoded);
  });
});
