import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import {
  Binary,
  BSONRegExp,
  BSONSymbol,
  Code,
  Decimal128,
  deserialize,
  Double,
  Int32,
  Long,
  MaxKey,
  MinKey,
  ObjectId,
  serialize,
  Timestamp,
} from 'bson';
import {
  BsonType,
  decodeValue,
  documentBytes,
  elementName,
  findElement,
  findElements,
  forEachElement,
  TYPE_FAITHFUL,
} from '../../src/bson/index.js';
import { bsonValue } from './bson-arbitraries.js';
import { MalformedBson } from '../../src/errors/errors.js';

/** A BSON element of a type `bson` cannot serialize from JavaScript: built byte by byte. */
function rawElement(type: number, name: string, value: number[]): number[] {
  return [type, ...Buffer.from(name), 0, ...value];
}

function rawDocument(...elements: number[][]): Buffer {
  const body = elements.flat();
  const size = 4 + body.length + 1;
  return Buffer.from([size & 0xff, (size >> 8) & 0xff, 0, 0, ...body, 0]);
}

function int32LE(n: number): number[] {
  return [n & 0xff, (n >> 8) & 0xff, (n >> 16) & 0xff, (n >>> 24) & 0xff];
}

function bsonString(s: string): number[] {
  const bytes = [...Buffer.from(s), 0];
  return [...int32LE(bytes.length), ...bytes];
}

/** One element of every BSON type, each named after its type. */
const everyType = {
  double: new Double(1.5),
  string: 'héllo',
  document: { a: new Int32(1), b: { c: 'd' } },
  array: [new Int32(1), 'two', [3.5]],
  binary: new Binary(Buffer.from([1, 2, 3]), 0x80),
  uuid: new Binary(Buffer.alloc(16, 7), Binary.SUBTYPE_UUID),
  oldBinary: new Binary(Buffer.from([9, 8]), Binary.SUBTYPE_BYTE_ARRAY),
  objectId: new ObjectId('64b7f0c2a1b2c3d4e5f60718'),
  boolean: true,
  date: new Date(1_700_000_000_123),
  null: null,
  regex: new BSONRegExp('^a.*b$', 'imx'),
  code: new Code('function () { return 1; }'),
  symbol: new BSONSymbol('sym'),
  codeWithScope: new Code('x + y', { x: new Int32(1), y: 'z' }),
  int32: new Int32(-7),
  timestamp: new Timestamp({ t: 4_000_000_000, i: 7 }),
  int64: Long.fromBigInt(-(2n ** 62n) - 3n),
  decimal128: Decimal128.fromString('-12.5E-3'),
  minKey: new MinKey(),
  maxKey: new MaxKey(),
};

describe('raw BSON scanning', () => {
  const withTypes = serialize({ ...everyType, last: 'sentinel' });
  // Undefined and DBPointer are not produced by `serialize`; append them by hand.
  const oid = [...Buffer.from('64b7f0c2a1b2c3d4e5f60718', 'hex')];
  const handBuilt = rawDocument(
    [...withTypes.subarray(4, withTypes.length - 1)],
    rawElement(BsonType.undefined, 'undefined', []),
    rawElement(BsonType.dbPointer, 'dbPointer', [...bsonString('db.coll'), ...oid]),
    rawElement(BsonType.string, 'after', bsonString('end')),
  );

  it('skips every element type by its size rule and finds the fields after them', () => {
    const last = findElement(handBuilt, 'last');
    const after = findElement(handBuilt, 'after');
    assert.ok(last && after);
    assert.equal(decodeValue(handBuilt, last), 'sentinel');
    assert.equal(decodeValue(handBuilt, after), 'end');
  });

  it('decodes each type exactly as bson deserializes it with promoteValues: false', () => {
    const expected = deserialize(handBuilt, TYPE_FAITHFUL);
    const seen: string[] = [];
    forEachElement(handBuilt, (element) => {
      const name = elementName(handBuilt, element);
      seen.push(name);
      assert.deepStrictEqual(decodeValue(handBuilt, element), expected[name], name);
    });
    assert.deepEqual(seen, Object.keys(expected));
  });

  it('keeps Int32, Long and Double distinct', () => {
    const doc = serialize({ i: new Int32(5), l: Long.fromNumber(5), d: new Double(5) });
    assert.ok(decodeValue(doc, findElement(doc, 'i')!) instanceof Int32);
    assert.ok(decodeValue(doc, findElement(doc, 'l')!) instanceof Long);
    assert.ok(decodeValue(doc, findElement(doc, 'd')!) instanceof Double);
  });

  it('reports the type and value offsets of an element', () => {
    const doc = Buffer.from(serialize({ a: new Int32(1), b: 'xy' }));
    const b = findElement(doc, 'b')!;
    assert.equal(b.type, BsonType.string);
    assert.equal(b.valueEnd - b.valueOffset, 4 + 3);
    assert.equal(doc.readInt32LE(b.valueOffset), 3);
  });

  it('returns undefined for an absent field and finds the first of repeated names', () => {
    const doc = rawDocument(rawElement(BsonType.int32, 'a', int32LE(1)), rawElement(BsonType.int32, 'a', int32LE(2)));
    assert.equal(findElement(doc, 'zz'), undefined);
    assert.deepStrictEqual(decodeValue(doc, findElement(doc, 'a')!), new Int32(1));
  });

  it('finds several fields in one pass, in the order asked, with undefined for absent ones', () => {
    const doc = serialize({ a: 1, b: 2, c: 3 });
    const [c, missing, a] = findElements(doc, ['c', 'missing', 'a']);
    assert.deepStrictEqual(decodeValue(doc, c!), new Int32(3));
    assert.equal(missing, undefined);
    assert.deepStrictEqual(decodeValue(doc, a!), new Int32(1));
  });

  it('reads a document at an offset inside a larger buffer, never past its end', () => {
    const doc = Buffer.from(serialize({ x: 'in', y: new Int32(3) }));
    const other = serialize({ y: new Int32(99) });
    const batch = Buffer.concat([Buffer.from([0xde, 0xad, 0xbe]), doc, other]);
    assert.deepStrictEqual(decodeValue(batch, findElement(batch, 'y', 3)!), new Int32(3));
    assert.equal(findElement(batch, 'absent', 3), undefined);
    assert.equal(documentBytes(batch, 3).length, doc.length);
  });

  it('matches non-ASCII field names by their UTF-8 bytes', () => {
    const doc = serialize({ naïve: 1, 日本: 'yes' });
    assert.equal(decodeValue(doc, findElement(doc, '日本')!), 'yes');
  });

  it('round-trips arbitrary values of every type', () => {
    fc.assert(
      fc.property(bsonValue, (value) => {
        const doc = serialize({ before: 1, v: value, after: 2 });
        const expected = deserialize(doc, TYPE_FAITHFUL).v;
        assert.deepStrictEqual(decodeValue(doc, findElement(doc, 'v')!), expected);
      }),
      { numRuns: 300 },
    );
  });
});

describe('malformed BSON', () => {
  const good = Buffer.from(serialize({ a: 'text', b: { c: [1, 2] }, d: new Binary(Buffer.from('xyz')), e: 1.5 }));

  it('rejects every truncation; a patched-up prefix is malformed or a prefix of the original', () => {
    const names: string[] = [];
    forEachElement(good, (element) => void names.push(elementName(good, element)));
    for (let length = 0; length < good.length; length++) {
      const cut = Buffer.from(good.subarray(0, length));
      assert.throws(() => findElement(cut, 'zz'), MalformedBson, `truncated to ${length}`);
      if (length < 5) continue;
      cut.writeInt32LE(length, 0);
      cut[length - 1] = 0;
      const seen: string[] = [];
      try {
        forEachElement(cut, (element) => void seen.push(elementName(cut, element)));
      } catch (error) {
        assert.ok(error instanceof MalformedBson, String(error));
        continue;
      }
      assert.deepEqual(seen, names.slice(0, seen.length), `patched at ${length}`);
    }
  });

  it('rejects bad sizes, unknown types and a missing terminator with a clear message', () => {
    const tooBig = Buffer.from(good);
    tooBig.writeInt32LE(good.length + 1, 0);
    assert.throws(() => findElement(tooBig, 'a'), /document size .* does not fit/);

    const badString = Buffer.from(good);
    badString.writeInt32LE(-5, findElement(good, 'a')!.valueOffset);
    assert.throws(() => findElement(badString, 'zz'), /string length -5/);

    const unknownType = Buffer.from(good);
    unknownType[4] = 0x42;
    assert.throws(() => findElement(unknownType, 'zz'), /unknown element type 0x42/);

    const noTerminator = Buffer.from(good);
    noTerminator[noTerminator.length - 1] = 1;
    assert.throws(() => findElement(noTerminator, 'a'), /does not end with a zero byte/);

    assert.throws(() => findElement(good, 'a', good.length - 2), MalformedBson);
  });

  it('rejects an embedded document whose size runs past its parent', () => {
    const doc = Buffer.from(serialize({ a: { b: 1 }, z: 1 }));
    const inner = findElement(doc, 'a')!;
    doc.writeInt32LE(1000, inner.valueOffset);
    assert.throws(() => findElement(doc, 'z'), /embedded document size 1000/);
  });

  it('rejects code with scope whose total size disagrees with its parts', () => {
    const doc = Buffer.from(serialize({ c: new Code('x', { a: 1 }), z: 1 }));
    const c = findElement(doc, 'c')!;
    const total = doc.readInt32LE(c.valueOffset);
    const bad = Buffer.from(doc);
    bad.writeInt32LE(total - 1, c.valueOffset);
    assert.throws(() => findElement(bad, 'z'), MalformedBson);
  });

  it('rejects an invalid boolean byte and invalid UTF-8 when decoding', () => {
    const doc = serialize({ t: true, s: 'ab' });
    const t = findElement(doc, 't')!;
    doc[t.valueOffset] = 2;
    assert.throws(() => decodeValue(doc, t), /boolean byte 2/);
    const s = findElement(doc, 's')!;
    doc[s.valueOffset + 4] = 0xff;
    assert.throws(() => decodeValue(doc, s), /invalid UTF-8/);
  });

  it('never throws anything but MalformedBson on corrupted bytes', () => {
    fc.assert(
      fc.property(
        fc.array(fc.tuple(fc.nat({ max: good.length - 1 }), fc.nat({ max: 255 })), {
          minLength: 1,
          maxLength: 4,
        }),
        (edits) => {
          const bad = Buffer.from(good);
          for (const [at, byte] of edits) bad[at] = byte;
          // Framed by garbage on both sides: a scanner that strays outside would trip on it.
          const framed = Buffer.concat([Buffer.from([7, 7]), bad, Buffer.from([0, 0, 0, 0, 0])]);
          try {
            forEachElement(
              framed,
              (element) => {
                assert.ok(element.valueEnd <= 2 + bad.readInt32LE(0), 'element stays inside');
                decodeValue(framed, element);
              },
              2,
            );
          } catch (error) {
            assert.ok(error instanceof MalformedBson, String(error));
          }
        },
      ),
      { numRuns: 500 },
    );
  });
});
