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
import { compareBsonValues, compareUtf8, TYPE_FAITHFUL } from '../../src/bson/index.js';
import { bsonValue } from './bson-arbitraries.js';

const cmp = compareBsonValues;

/** Asserts that `values` are in strictly ascending order, pair by pair in both directions. */
function assertAscending(values: unknown[]): void {
  for (let i = 0; i < values.length; i++) {
    for (let j = i + 1; j < values.length; j++) {
      assert.equal(cmp(values[i], values[j]), -1, `${i} < ${j}`);
      assert.equal(cmp(values[j], values[i]), 1, `${j} > ${i}`);
    }
  }
}

describe('compareBsonValues: order across types', () => {
  it(
    'follows mongod: MinKey < undefined < null < numbers < strings < objects < arrays < ' +
      'binData < ObjectId < bool < date < timestamp < regex < code < code with scope < MaxKey',
    () => {
      assertAscending([
        new MinKey(),
        undefined,
        null,
        new Int32(1_000_000),
        'a',
        {},
        [],
        new Binary(Buffer.alloc(0)),
        new ObjectId('000000000000000000000000'),
        false,
        new Date(-1e12),
        new Timestamp({ t: 0, i: 0 }),
        new BSONRegExp('', ''),
        new Code(''),
        new Code('', {}),
        new MaxKey(),
      ]);
    },
  );

  it('treats symbols as strings and all numeric types as numbers', () => {
    assert.equal(cmp(new BSONSymbol('b'), 'b'), 0);
    assert.equal(cmp('a', new BSONSymbol('b')), -1);
    assert.equal(cmp(new Int32(1), new Double(1)), 0);
    assert.equal(cmp(Long.fromNumber(1), Decimal128.fromString('1.000')), 0);
    assert.equal(cmp(1, 1n), 0);
  });
});

describe('compareBsonValues: numbers', () => {
  it('orders mixed numeric types by exact value', () => {
    assertAscending([
      new Double(NaN),
      new Double(-Infinity),
      Long.fromBigInt(-(2n ** 63n)),
      Decimal128.fromString('-1.5'),
      new Int32(-1),
      new Double(-0.25),
      Decimal128.fromString('0'),
      Decimal128.fromString('0.1'),
      new Double(0.1), // the double nearest 0.1 is slightly above it
      new Int32(1),
      new Double(2 ** 53),
      Long.fromBigInt(2n ** 53n + 1n), // rounds to 2^53 as a double: exactness matters
      Decimal128.fromString('9007199254740993.5'),
      Long.fromBigInt(2n ** 63n - 1n),
      new Double(2 ** 63),
      Decimal128.fromString('1E+400'),
      new Double(Infinity),
    ]);
  });

  it('equates NaNs of every kind, -0 with 0, and Infinity across types', () => {
    assert.equal(cmp(new Double(NaN), Decimal128.fromString('NaN')), 0);
    assert.equal(cmp(new Double(-0), new Int32(0)), 0);
    assert.equal(cmp(Decimal128.fromString('-0'), Long.fromNumber(0)), 0);
    assert.equal(cmp(new Double(Infinity), Decimal128.fromString('Infinity')), 0);
    assert.equal(cmp(new Double(NaN), Long.fromBigInt(-(2n ** 63n))), -1);
  });

  it('compares a long with a non-integral double exactly', () => {
    assert.equal(cmp(Long.fromNumber(2), new Double(2.5)), -1);
    assert.equal(cmp(Long.fromNumber(3), new Double(2.5)), 1);
    assert.equal(cmp(Long.fromNumber(-3), new Double(-2.5)), -1);
    assert.equal(cmp(Long.fromNumber(-2), new Double(-2.5)), 1);
  });
});

describe('compareBsonValues: within a type', () => {
  it('orders strings by UTF-8 bytes, not UTF-16 code units', () => {
    // U+FFFD is one UTF-16 unit above the surrogate 0xD83D of U+1F600, but below it in UTF-8.
    assert.equal(cmp('\uFFFD', '\u{1F600}'), -1);
    assert.equal('\uFFFD' < '\u{1F600}', false, 'JavaScript disagrees, which is why this matters');
    assertAscending(['', 'A', 'Z', 'a', 'ab', 'b', 'é', '\uFFFD', '\u{1F600}']);
    assert.equal(compareUtf8('abc', 'abc'), 0);
  });

  it('orders binData by length, then subtype, then bytes', () => {
    assertAscending([
      new Binary(Buffer.from([9, 9]), 5),
      new Binary(Buffer.from([0, 0, 1]), 0),
      new Binary(Buffer.from([0, 0, 2]), 0),
      new Binary(Buffer.from([0, 0, 0]), 4),
      new Binary(Buffer.alloc(16), 4),
    ]);
    assert.equal(cmp(Buffer.from([1, 2]), new Binary(Buffer.from([1, 2]), 0)), 0);
  });

  it('orders objects element by element: type, then field name, then value; prefixes first', () => {
    assertAscending([
      {},
      { a: 1 },
      { a: 1, b: 1 },
      { a: 2 },
      { b: 1 },
      { a: 'x' }, // a string value outranks a number value whatever the names
    ]);
    assert.equal(cmp({ a: new Int32(1) }, { a: new Double(1) }), 0);
  });

  it('orders arrays element by element, shorter first', () => {
    assertAscending([[], [1], [1, 1], [1, 'a'], [2], ['a']]);
  });

  it('orders ObjectIds, booleans, dates, timestamps, regexes and code by value', () => {
    assertAscending([new ObjectId('000000000000000000000001'), new ObjectId('ff0000000000000000000000')]);
    assertAscending([false, true]);
    assertAscending([new Date(-5), new Date(0), new Date(5)]);
    assertAscending([
      new Timestamp({ t: 1, i: 9 }),
      new Timestamp({ t: 2, i: 0 }),
      new Timestamp({ t: 4_000_000_000, i: 0 }), // above 2^31: unsigned
    ]);
    assertAscending([new BSONRegExp('a', 'i'), new BSONRegExp('a', 'im'), new BSONRegExp('b', '')]);
    assertAscending([new Code('a'), new Code('b')]);
    assertAscending([new Code('a', { x: 1 }), new Code('a', { x: 2 }), new Code('b', {})]);
    assert.equal(cmp(/ab/i, new BSONRegExp('ab', 'i')), 0);
  });
});

describe('compareBsonValues: properties over arbitrary BSON values', () => {
  it('is reflexive and antisymmetric', () => {
    fc.assert(
      fc.property(bsonValue, bsonValue, (a, b) => {
        assert.equal(cmp(a, a), 0);
        assert.equal(cmp(a, b), -cmp(b, a) || 0);
      }),
      { numRuns: 2000 },
    );
  });

  it('is transitive: a sorted list is ordered for every pair, not only neighbours', () => {
    fc.assert(
      fc.property(fc.array(bsonValue, { maxLength: 25 }), (values) => {
        const sorted = [...values].sort(cmp);
        for (let i = 0; i < sorted.length; i++) {
          for (let j = i + 1; j < sorted.length; j++) assert.ok(cmp(sorted[i], sorted[j]) <= 0, `${i} <= ${j}`);
        }
      }),
      { numRuns: 300 },
    );
  });

  it('gives a value the same place after a BSON round trip', () => {
    fc.assert(
      fc.property(bsonValue, bsonValue, (a, b) => {
        const back = deserialize(serialize({ a, b }), TYPE_FAITHFUL);
        assert.equal(cmp(back.a, back.b), cmp(a, b));
      }),
      { numRuns: 1000 },
    );
  });
});
