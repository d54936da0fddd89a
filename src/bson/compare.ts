/**
 * MongoDB's canonical order of BSON values, for `bson` JavaScript values.
 *
 * Order across types, from mongod's documentation "Comparison/Sort Order"
 * (https://www.mongodb.com/docs/manual/reference/bson-type-comparison-order/):
 * MinKey < Null < Numbers (ints, longs, doubles, decimals) < Symbol, String < Object < Array <
 * BinData < ObjectId < Boolean < Date < Timestamp < Regular Expression < JavaScript Code <
 * JavaScript Code with Scope < MaxKey. The ranks below are mongod's `canonicalizeBSONType`
 * (bsontypes.h), which also places Undefined just below Null and DBPointer between regex and code.
 *
 * Within a type, as mongod's `compareElementValues`: numbers by exact numeric value whatever their
 * BSON type (NaN below every other number, -0 equal to 0, int64 against double exactly); strings
 * and symbols by UTF-8 bytes ("simple binary comparison"); objects element by element (each
 * element: canonical type, then field name, then value; a prefix sorts first); arrays the same way
 * by position; BinData by length, then subtype, then bytes; ObjectId by bytes; false < true;
 * dates as signed milliseconds; timestamps as unsigned (t, i); regexes by pattern then flags; code
 * by its text, then (with scope) by the scope object.
 *
 * A document may be a plain object or a `Map` (string keys): fields compare in the object's key
 * order or the Map's insertion order. JavaScript moves an object's integer-like keys ("0", "1")
 * first, so a document with such a field must be a `Map` in stored order to compare as its bytes
 * do; `decodeValue` (decode.ts) decodes documents that way. A BSON DBPointer is decoded by `bson`
 * as a `DBRef` (an object) and compares as one.
 */
import type { Binary, Decimal128, Long, Timestamp } from 'bson';

/** mongod's canonical rank of each kind of value (bsontypes.h, `canonicalizeBSONType`). */
const Rank = {
  minKey: -1,
  undefined: 0,
  null: 5,
  number: 10,
  string: 15,
  object: 20,
  array: 25,
  binary: 30,
  objectId: 35,
  boolean: 40,
  date: 45,
  timestamp: 47,
  regex: 50,
  code: 60,
  codeWithScope: 65,
  maxKey: 127,
} as const;

type BsonTagged = { _bsontype?: unknown };

/** The canonical sort rank of a value (equal ranks compare by value). */
export function canonicalRank(value: unknown): number {
  if (value === null) return Rank.null;
  switch (typeof value) {
    case 'undefined':
      return Rank.undefined;
    case 'number':
    case 'bigint':
      return Rank.number;
    case 'string':
      return Rank.string;
    case 'boolean':
      return Rank.boolean;
    case 'object':
      break;
    default:
      throw new TypeError(`not a BSON value: ${typeof value}`);
  }
  switch ((value as BsonTagged)._bsontype) {
    case 'Int32':
    case 'Double':
    case 'Long':
    case 'Decimal128':
      return Rank.number;
    case 'BSONSymbol':
      return Rank.string;
    case 'Binary':
      return Rank.binary;
    case 'ObjectId':
      return Rank.objectId;
    case 'Timestamp':
      return Rank.timestamp;
    case 'BSONRegExp':
      return Rank.regex;
    case 'Code':
      return (value as { scope: unknown }).scope == null ? Rank.code : Rank.codeWithScope;
    case 'MinKey':
      return Rank.minKey;
    case 'MaxKey':
      return Rank.maxKey;
    case 'DBRef':
      return Rank.object;
  }
  if (Array.isArray(value)) return Rank.array;
  if (value instanceof Date) return Rank.date;
  if (value instanceof RegExp) return Rank.regex;
  if (value instanceof Uint8Array) return Rank.binary;
  return Rank.object;
}

function sign(n: number): -1 | 0 | 1 {
  return n < 0 ? -1 : n > 0 ? 1 : 0;
}

function negate(order: -1 | 0 | 1): -1 | 0 | 1 {
  return order === 0 ? 0 : order === 1 ? -1 : 1;
}

function compareBigInts(a: bigint, b: bigint): -1 | 0 | 1 {
  return a < b ? -1 : a > b ? 1 : 0;
}

// ---- numbers ----------------------------------------------------------------------------------

/** An exact rational `num / den` (den > 0), or a special value. */
type Exact = { num: bigint; den: bigint } | 'nan' | 'inf' | '-inf';

/** A number in the form compared: a double (int32 and double), a long, or a decimal. */
type NumberForm = { kind: 'double'; value: number } | { kind: 'long'; value: bigint } | { kind: 'decimal'; value: Exact };

function numberForm(value: unknown): NumberForm {
  if (typeof value === 'number') return { kind: 'double', value };
  if (typeof value === 'bigint') return { kind: 'long', value };
  const tagged = value as BsonTagged & { value: number };
  switch (tagged._bsontype) {
    case 'Int32':
    case 'Double':
      return { kind: 'double', value: tagged.value };
    case 'Long':
      return { kind: 'long', value: (value as Long).toBigInt() };
    default:
      return { kind: 'decimal', value: decimalToExact(value as Decimal128) };
  }
}

/** NaN below every number and equal to itself; -0 equal to 0 (mongod's `compareDoubles`). */
function compareDoubles(a: number, b: number): -1 | 0 | 1 {
  if (a < b) return -1;
  if (a > b) return 1;
  if (a === b) return 0;
  const aNaN = Number.isNaN(a);
  const bNaN = Number.isNaN(b);
  return aNaN && bNaN ? 0 : aNaN ? -1 : 1;
}

/** An int64 against a double, exactly (no rounding of the long to a double). */
function compareLongToDouble(a: bigint, b: number): -1 | 0 | 1 {
  if (Number.isNaN(b)) return 1;
  if (b === Infinity) return -1;
  if (b === -Infinity) return 1;
  const floor = Math.floor(b);
  const byFloor = compareBigInts(a, BigInt(floor));
  if (floor === b || byFloor > 0) return byFloor;
  return -1; // a <= floor(b) < b
}

const DECIMAL_TEXT = /^(-)?(\d+)(?:\.(\d+))?(?:E([+-]\d+))?$/;

function decimalToExact(value: Decimal128): Exact {
  const text = value.toString();
  if (text === 'NaN' || text === '-NaN') return 'nan';
  if (text === 'Infinity') return 'inf';
  if (text === '-Infinity') return '-inf';
  const match = DECIMAL_TEXT.exec(text);
  if (match === null) throw new TypeError(`unexpected Decimal128 text ${text}`);
  const [, negative, whole, fraction = '', exponentText = '0'] = match;
  let num = BigInt(whole! + fraction);
  if (negative) num = -num;
  const exponent = Number(exponentText) - fraction.length;
  return exponent >= 0 ? { num: num * 10n ** BigInt(exponent), den: 1n } : { num, den: 10n ** BigInt(-exponent) };
}

const doubleBits = new DataView(new ArrayBuffer(8));

function doubleToExact(value: number): Exact {
  if (Number.isNaN(value)) return 'nan';
  if (value === Infinity) return 'inf';
  if (value === -Infinity) return '-inf';
  doubleBits.setFloat64(0, value);
  const high = doubleBits.getUint32(0);
  const low = doubleBits.getUint32(4);
  const biased = (high >>> 20) & 0x7ff;
  let mantissa = (BigInt(high & 0xfffff) << 32n) | BigInt(low);
  let exponent: number;
  if (biased === 0) exponent = -1074;
  else {
    mantissa |= 1n << 52n;
    exponent = biased - 1075;
  }
  if (high >>> 31) mantissa = -mantissa;
  return exponent >= 0 ? { num: mantissa << BigInt(exponent), den: 1n } : { num: mantissa, den: 1n << BigInt(-exponent) };
}

function toExact(form: NumberForm): Exact {
  if (form.kind === 'decimal') return form.value;
  if (form.kind === 'long') return { num: form.value, den: 1n };
  return doubleToExact(form.value);
}

const SPECIAL_ORDER = { nan: 0, '-inf': 1, inf: 3 } as const;

function compareExact(a: Exact, b: Exact): -1 | 0 | 1 {
  const aOrder = typeof a === 'string' ? SPECIAL_ORDER[a] : 2;
  const bOrder = typeof b === 'string' ? SPECIAL_ORDER[b] : 2;
  if (aOrder !== 2 || bOrder !== 2) return sign(aOrder - bOrder);
  const x = a as { num: bigint; den: bigint };
  const y = b as { num: bigint; den: bigint };
  return compareBigInts(x.num * y.den, y.num * x.den);
}

function compareNumbers(a: unknown, b: unknown): -1 | 0 | 1 {
  const x = numberForm(a);
  const y = numberForm(b);
  if (x.kind === 'double' && y.kind === 'double') return compareDoubles(x.value, y.value);
  if (x.kind === 'long' && y.kind === 'long') return compareBigInts(x.value, y.value);
  if (x.kind === 'long' && y.kind === 'double') return compareLongToDouble(x.value, y.value);
  if (x.kind === 'double' && y.kind === 'long') return negate(compareLongToDouble(y.value, x.value));
  return compareExact(toExact(x), toExact(y));
}

// ---- strings and bytes ------------------------------------------------------------------------

/**
 * Strings in UTF-8 byte order, which is code point order. JavaScript compares UTF-16 code units,
 * which differs only where a surrogate (a code point above U+FFFF) meets a unit in U+E000..U+FFFF:
 * this moves surrogates above that range before comparing.
 */
export function compareUtf8(a: string, b: string): -1 | 0 | 1 {
  const length = Math.min(a.length, b.length);
  for (let i = 0; i < length; i++) {
    let x = a.charCodeAt(i);
    let y = b.charCodeAt(i);
    if (x === y) continue;
    if (x >= 0xd800 && y >= 0xd800) {
      x += x >= 0xe000 ? -0x800 : 0x2000;
      y += y >= 0xe000 ? -0x800 : 0x2000;
    }
    return x < y ? -1 : 1;
  }
  return sign(a.length - b.length);
}

function compareBytes(a: Uint8Array, b: Uint8Array): -1 | 0 | 1 {
  const length = Math.min(a.length, b.length);
  for (let i = 0; i < length; i++) if (a[i] !== b[i]) return a[i]! < b[i]! ? -1 : 1;
  return sign(a.length - b.length);
}

function stringOf(value: unknown): string {
  return typeof value === 'string' ? value : (value as { value: string }).value;
}

function binaryParts(value: unknown): { bytes: Uint8Array; subtype: number } {
  if (value instanceof Uint8Array && (value as BsonTagged)._bsontype === undefined) {
    return { bytes: value, subtype: 0 };
  }
  const binary = value as Binary;
  return { bytes: binary.buffer.subarray(0, binary.position), subtype: binary.sub_type };
}

function regexParts(value: unknown): [string, string] {
  if (value instanceof RegExp) return [value.source, value.flags];
  const regex = value as { pattern: string; options: string };
  return [regex.pattern, regex.options];
}

// ---- documents --------------------------------------------------------------------------------

function entriesOf(value: object): [string, unknown][] {
  // A Map keeps its fields in stored order (see the module comment).
  if (value instanceof Map) return [...(value as Map<string, unknown>).entries()];
  if ((value as BsonTagged)._bsontype === 'DBRef') {
    return Object.entries((value as { toJSON(): object }).toJSON());
  }
  return Object.entries(value);
}

/** Element by element: canonical type, then field name, then value; a prefix sorts first. */
function compareEntries(a: [string, unknown][], b: [string, unknown][], byName: boolean): -1 | 0 | 1 {
  const length = Math.min(a.length, b.length);
  for (let i = 0; i < length; i++) {
    const [nameA, valueA] = a[i]!;
    const [nameB, valueB] = b[i]!;
    const byRank = sign(canonicalRank(valueA) - canonicalRank(valueB));
    if (byRank !== 0) return byRank;
    if (byName) {
      const byFieldName = compareUtf8(nameA, nameB);
      if (byFieldName !== 0) return byFieldName;
    }
    const byValue = compareBsonValues(valueA, valueB);
    if (byValue !== 0) return byValue;
  }
  return sign(a.length - b.length);
}

function compareArrays(a: unknown[], b: unknown[]): -1 | 0 | 1 {
  const length = Math.min(a.length, b.length);
  for (let i = 0; i < length; i++) {
    const byRank = sign(canonicalRank(a[i]) - canonicalRank(b[i]));
    if (byRank !== 0) return byRank;
    const byValue = compareBsonValues(a[i], b[i]);
    if (byValue !== 0) return byValue;
  }
  return sign(a.length - b.length);
}

// ---- entry point ------------------------------------------------------------------------------

/**
 * Compares two `bson` JavaScript values in MongoDB's canonical order (see the module comment):
 * negative if `a` sorts first, positive if `b` does, 0 if mongod treats them as equal (which
 * includes numbers of different types with the same value, e.g. `Int32(1)` and `Double(1)`).
 * This is the order of `_id` index keys under the simple collation.
 */
export function compareBsonValues(a: unknown, b: unknown): -1 | 0 | 1 {
  const rankA = canonicalRank(a);
  const rankB = canonicalRank(b);
  if (rankA !== rankB) return rankA < rankB ? -1 : 1;
  switch (rankA) {
    case Rank.minKey:
    case Rank.maxKey:
    case Rank.undefined:
    case Rank.null:
      return 0;
    case Rank.number:
      return compareNumbers(a, b);
    case Rank.string:
      return compareUtf8(stringOf(a), stringOf(b));
    case Rank.object:
      return compareEntries(entriesOf(a as object), entriesOf(b as object), true);
    case Rank.array:
      return compareArrays(a as unknown[], b as unknown[]);
    case Rank.binary: {
      const x = binaryParts(a);
      const y = binaryParts(b);
      if (x.bytes.length !== y.bytes.length) return x.bytes.length < y.bytes.length ? -1 : 1;
      if (x.subtype !== y.subtype) return x.subtype < y.subtype ? -1 : 1;
      return compareBytes(x.bytes, y.bytes);
    }
    case Rank.objectId:
      return compareBytes((a as { id: Uint8Array }).id, (b as { id: Uint8Array }).id);
    case Rank.boolean:
      return a === b ? 0 : a ? 1 : -1;
    case Rank.date:
      return compareDoubles((a as Date).getTime(), (b as Date).getTime());
    case Rank.timestamp: {
      const x = a as Timestamp;
      const y = b as Timestamp;
      return x.t !== y.t ? (x.t < y.t ? -1 : 1) : sign(x.i - y.i);
    }
    case Rank.regex: {
      const [patternA, flagsA] = regexParts(a);
      const [patternB, flagsB] = regexParts(b);
      return compareUtf8(patternA, patternB) || compareUtf8(flagsA, flagsB);
    }
    case Rank.code:
      return compareUtf8((a as { code: string }).code, (b as { code: string }).code);
    case Rank.codeWithScope: {
      const x = a as { code: string; scope: object };
      const y = b as { code: string; scope: object };
      return compareUtf8(x.code, y.code) || compareEntries(entriesOf(x.scope), entriesOf(y.scope), true);
    }
    default:
      throw new TypeError(`no comparison for rank ${rankA}`);
  }
}
