// fast-check generators of `bson` JavaScript values of every BSON type, shared by the raw-BSON,
// comparison and partitioning tests.
import fc from 'fast-check';
import { Binary, BSONRegExp, BSONSymbol, Code, Decimal128, Double, Int32, Long, MaxKey, MinKey, ObjectId, Timestamp } from 'bson';

/** Text without NUL (BSON C strings cannot hold it), any Unicode including astral planes. */
export const text = fc.string({ unit: 'grapheme', maxLength: 8 }).filter((s) => !s.includes('\0'));

/** Field names that JavaScript keeps in insertion order (no integer-like keys). */
const fieldName = fc
  .string({ unit: 'grapheme-ascii', minLength: 1, maxLength: 4 })
  .filter((s) => !s.includes('\0') && !/^\d+$/.test(s) && s !== '__proto__');

const int32 = fc.integer({ min: -(2 ** 31), max: 2 ** 31 - 1 }).map((n) => new Int32(n));
const double = fc
  .oneof(
    fc.double(),
    fc.constantFrom(0, -0, 1, -1, 0.5, 2 ** 53, 2 ** 63, -(2 ** 63), NaN, Infinity, -Infinity),
    fc.integer({ min: -1000, max: 1000 }),
  )
  .map((n) => new Double(n));
const long = fc
  .oneof(
    fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n }),
    fc.bigInt({ min: -1000n, max: 1000n }),
    fc.constantFrom(2n ** 53n + 1n, 2n ** 63n - 1n, -(2n ** 63n)),
  )
  .map((n) => Long.fromBigInt(n));
const decimal = fc
  .oneof(
    fc.tuple(fc.bigInt({ min: -(10n ** 20n), max: 10n ** 20n }), fc.integer({ min: -30, max: 30 })).map(([c, e]) => `${c}E${e}`),
    fc.constantFrom('NaN', 'Infinity', '-Infinity', '0', '-0', '1', '1.0', '0.5'),
  )
  .map((s) => Decimal128.fromString(s));

const binary = fc
  .tuple(fc.uint8Array({ maxLength: 6 }), fc.constantFrom(0, 3, 4, 5, 0x80))
  .map(([bytes, subtype]) => new Binary(bytes, subtype));
const objectId = fc.uint8Array({ minLength: 12, maxLength: 12 }).map((b) => new ObjectId(b));
const date = fc.integer({ min: -(2 ** 45), max: 2 ** 45 }).map((ms) => new Date(ms));
const timestamp = fc.tuple(fc.nat({ max: 2 ** 32 - 1 }), fc.nat({ max: 2 ** 32 - 1 })).map(([t, i]) => new Timestamp({ t, i }));
const regex = fc.tuple(text, fc.subarray(['i', 'm', 's', 'u', 'x'])).map(([pattern, flags]) => new BSONRegExp(pattern, flags.join('')));

/** Int32, Double and Long values (the numeric types compared exactly; Decimal128 aside). */
export const bsonNumber = fc.oneof(int32, double, long);

/** Scalars of every BSON type that has one (all but document, array and code with scope). */
export const bsonScalar = fc.oneof(
  fc.constant(new MinKey()),
  fc.constant(new MaxKey()),
  fc.constant(null),
  int32,
  double,
  long,
  decimal,
  text,
  text.map((s) => new BSONSymbol(s)),
  binary,
  objectId,
  fc.boolean(),
  date,
  timestamp,
  regex,
  text.map((s) => new Code(s)),
);

/** Any BSON value: scalars, documents, arrays and code with scope, nested a few levels. */
export const bsonValue: fc.Arbitrary<unknown> = fc.letrec<{ value: unknown }>((tie) => ({
  value: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    bsonScalar,
    fc.dictionary(fieldName, tie('value'), { maxKeys: 3 }),
    fc.array(tie('value'), { maxLength: 3 }),
    fc.tuple(text, fc.dictionary(fieldName, tie('value'), { maxKeys: 2 })).map(([code, scope]) => new Code(code, scope)),
  ),
})).value;

/**
 * Values MongoDB accepts as `_id`: anything but arrays, regexes and undefined (mongod rejects
 * those), including MinKey and MaxKey themselves.
 */
export const idValue: fc.Arbitrary<unknown> = fc.oneof(
  bsonScalar.filter((v) => !(v instanceof BSONRegExp)),
  fc.dictionary(fieldName, bsonScalar, { maxKeys: 2 }),
);
