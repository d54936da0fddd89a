/**
 * mongod's canonical comparison of BSON values, used for `_id` order, index keys, sorts and
 * range bounds. Type order (mongod's canonicalizeBSONType, documented in "Comparison/Sort Order"):
 * MinKey < undefined < null < numbers < symbol/string < object < array < binData < ObjectId
 * < bool < date < timestamp < regex < dbPointer < code < codeWScope < MaxKey.
 * Numbers of any type compare by value (1 == 1.0 == NumberLong(1)); strings by UTF-8 bytes
 * (the simple collation); objects field by field (type, then name, then value); binData by
 * length, then subtype, then bytes.
 */
import { ObjectId, type Binary, type BSONRegExp, type Decimal128, type Long, type Timestamp } from 'bson';

const enum Rank {
  MinKey = -1,
  Undefined = 0,
  Null = 5,
  Number = 10,
  String = 15,
  Object = 20,
  Array = 25,
  BinData = 30,
  ObjectId = 35,
  Bool = 40,
  Date = 45,
  Timestamp = 47,
  Regex = 50,
  DBPointer = 55,
  Code = 60,
  CodeWScope = 65,
  MaxKey = 127,
}

function bsontype(v: object): string | undefined {
  return (v as { _bsontype?: string })._bsontype;
}

/** The canonical type rank of a decoded value (promoted or not). */
export function typeRank(v: unknown): number {
  if (v === undefined) return Rank.Undefined;
  if (v === null) return Rank.Null;
  switch (typeof v) {
    case 'number':
    case 'bigint':
      return Rank.Number;
    case 'string':
      return Rank.String;
    case 'boolean':
      return Rank.Bool;
    case 'object':
      break;
    default:
      return Rank.Object;
  }
  if (Array.isArray(v)) return Rank.Array;
  if (v instanceof Date) return Rank.Date;
  if (v instanceof RegExp) return Rank.Regex;
  switch (bsontype(v as object)) {
    case 'MinKey':
      return Rank.MinKey;
    case 'MaxKey':
      return Rank.MaxKey;
    case 'Int32':
    case 'Double':
    case 'Long':
    case 'Decimal128':
      return Rank.Number;
    case 'BSONSymbol':
      return Rank.String;
    case 'Binary':
      return Rank.BinData;
    case 'ObjectId':
      return Rank.ObjectId;
    case 'Timestamp':
      return Rank.Timestamp;
    case 'BSONRegExp':
      return Rank.Regex;
    case 'DBRef':
      return Rank.Object; // a DBRef is an ordinary embedded document on the wire
    case 'Code':
      return (v as { scope?: unknown }).scope ? Rank.CodeWScope : Rank.Code;
    default:
      return Rank.Object;
  }
}

/** A number as an exact bigint when it is integral and representable, else undefined. */
function asBigInt(v: unknown): bigint | undefined {
  if (typeof v === 'bigint') return v;
  if (typeof v === 'number') return Number.isInteger(v) ? BigInt(v) : undefined;
  const t = bsontype(v as object);
  if (t === 'Long') return BigInt((v as Long).toString());
  if (t === 'Int32') return BigInt((v as { value: number }).value);
  if (t === 'Double') {
    const n = (v as { value: number }).value;
    return Number.isInteger(n) ? BigInt(n) : undefined;
  }
  return undefined;
}

function asDouble(v: unknown): number {
  if (typeof v === 'number') return v;
  if (typeof v === 'bigint') return Number(v);
  const t = bsontype(v as object);
  if (t === 'Decimal128') return Number.parseFloat((v as Decimal128).toString());
  if (t === 'Long') return (v as Long).toNumber();
  return (v as { value: number }).value;
}

/**
 * A number as a double when that double is its exact value (every number, Int32 and Double, and
 * a Long within ±2^53), else undefined (bigints, Decimal128, larger Longs).
 */
function exactDouble(v: unknown): number | undefined {
  if (typeof v === 'number') return v;
  const t = bsontype(v as object);
  if (t === 'Int32' || t === 'Double') return (v as { value: number }).value;
  if (t === 'Long') {
    const long = v as Long;
    // high·2^32 + low is exact while |high| < 2^21.
    if (!long.unsigned && long.high >= -0x200000 && long.high < 0x200000) return long.high * 0x100000000 + (long.low >>> 0);
  }
  return undefined;
}

function compareNumbers(a: unknown, b: unknown): number {
  // Exact doubles compare exactly as doubles: no bigint per comparison (B+tree descents do many).
  const exactA = exactDouble(a);
  const exactB = exactDouble(b);
  if (exactA !== undefined && exactB !== undefined) {
    if (Number.isNaN(exactA)) return Number.isNaN(exactB) ? 0 : -1;
    if (Number.isNaN(exactB)) return 1;
    return exactA < exactB ? -1 : exactA > exactB ? 1 : 0;
  }
  const ai = asBigInt(a);
  const bi = asBigInt(b);
  if (ai !== undefined && bi !== undefined) return ai < bi ? -1 : ai > bi ? 1 : 0;
  const x = asDouble(a);
  const y = asDouble(b);
  // NaN sorts below every other number, and equals itself.
  if (Number.isNaN(x)) return Number.isNaN(y) ? 0 : -1;
  if (Number.isNaN(y)) return 1;
  if (x < y) return -1;
  if (x > y) return 1;
  return 0; // Decimal128 is compared through its nearest double: an approximation.
}

/**
 * Binary comparison of UTF-8 bytes, which is code point order. UTF-16 code units already are in
 * code point order except that surrogates (U+D800–U+DFFF, used for code points above U+FFFF)
 * must sort after U+E000–U+FFFF: shifting them up makes the comparison exact without encoding.
 */
function compareStrings(a: string, b: string): number {
  if (a === b) return 0;
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    let x = a.charCodeAt(i);
    let y = b.charCodeAt(i);
    if (x === y) continue;
    if (x >= 0xd800) x = x >= 0xe000 ? x - 0x800 : x + 0x2000;
    if (y >= 0xd800) y = y >= 0xe000 ? y - 0x800 : y + 0x2000;
    return x < y ? -1 : 1;
  }
  return a.length < b.length ? -1 : a.length > b.length ? 1 : 0;
}

/** Signed Longs by value: the high words as signed numbers, then the low words as unsigned ones. */
function compareSignedLongs(a: Long, b: Long): number {
  if (a.high !== b.high) return a.high < b.high ? -1 : 1;
  const x = a.low >>> 0;
  const y = b.low >>> 0;
  return x < y ? -1 : x > y ? 1 : 0;
}

/** ObjectIds by their 12 bytes; bson keeps them as four 24-bit big-endian words (i0–i3). */
function compareObjectIds(a: ObjectId, b: ObjectId): number {
  const x = a as unknown as { i0?: number; i1: number; i2: number; i3: number };
  const y = b as unknown as { i0?: number; i1: number; i2: number; i3: number };
  if (typeof x.i0 === 'number' && typeof y.i0 === 'number') {
    if (x.i0 !== y.i0) return x.i0 < y.i0 ? -1 : 1;
    if (x.i1 !== y.i1) return x.i1 < y.i1 ? -1 : 1;
    if (x.i2 !== y.i2) return x.i2 < y.i2 ? -1 : 1;
    return x.i3 < y.i3 ? -1 : x.i3 > y.i3 ? 1 : 0;
  }
  return compareBytes(a.id, b.id);
}

function stringOf(v: unknown): string {
  return typeof v === 'string' ? v : (v as { value: string }).value;
}

function compareBytes(a: Uint8Array, b: Uint8Array): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) if (a[i] !== b[i]) return a[i] < b[i] ? -1 : 1;
  return a.length < b.length ? -1 : a.length > b.length ? 1 : 0;
}

function entriesOf(v: object): [string, unknown][] {
  if (bsontype(v) === 'DBRef') return Object.entries((v as { toJSON(): object }).toJSON());
  return Object.entries(v);
}

/** Objects field by field (type, then name, then value by `compare`: a collation's for its strings). */
export function compareObjects(a: object, b: object, compare: (x: unknown, y: unknown) => number = compareValues): number {
  const ea = entriesOf(a);
  const eb = entriesOf(b);
  const n = Math.min(ea.length, eb.length);
  for (let i = 0; i < n; i++) {
    const byType = typeRank(ea[i][1]) - typeRank(eb[i][1]);
    if (byType !== 0) return byType < 0 ? -1 : 1;
    const byName = compareStrings(ea[i][0], eb[i][0]);
    if (byName !== 0) return byName;
    const byValue = compare(ea[i][1], eb[i][1]);
    if (byValue !== 0) return byValue;
  }
  return ea.length - eb.length < 0 ? -1 : ea.length > eb.length ? 1 : 0;
}

/** Arrays element by element (type, then value by `compare`). */
export function compareArrays(a: unknown[], b: unknown[], compare: (x: unknown, y: unknown) => number = compareValues): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    const byType = typeRank(a[i]) - typeRank(b[i]);
    if (byType !== 0) return byType < 0 ? -1 : 1;
    const byValue = compare(a[i], b[i]);
    if (byValue !== 0) return byValue;
  }
  return a.length < b.length ? -1 : a.length > b.length ? 1 : 0;
}

/** Compares two decoded BSON values in mongod's canonical order: negative, 0 or positive. */
export function compareValues(a: unknown, b: unknown): number {
  // Fast paths for the commonest keys: plain numbers and strings.
  if (typeof a === 'number' && typeof b === 'number' && !Number.isNaN(a) && !Number.isNaN(b)) return a < b ? -1 : a > b ? 1 : 0;
  if (typeof a === 'string' && typeof b === 'string') return compareStrings(a, b);
  // ObjectId `_id`s by their class: the `_bsontype` getter below is a megamorphic load (every BSON
  // type passes through here), the larger part of a B+tree comparison's cost.
  if (a instanceof ObjectId && b instanceof ObjectId) return compareObjectIds(a, b);
  if (typeof a === 'object' && a !== null && typeof b === 'object' && b !== null) {
    // Typed `_id`s of one type (ObjectIds, Int32s, signed Longs): no type ranking per B+tree comparison.
    const type = bsontype(a);
    if (type !== undefined && type === bsontype(b)) {
      if (type === 'ObjectId') return compareObjectIds(a as ObjectId, b as ObjectId);
      if (type === 'Int32') {
        const x = (a as { value: number }).value;
        const y = (b as { value: number }).value;
        return x < y ? -1 : x > y ? 1 : 0;
      }
      if (type === 'Long' && !(a as Long).unsigned && !(b as Long).unsigned) return compareSignedLongs(a as Long, b as Long);
    }
  }
  const ra = typeRank(a);
  const rb = typeRank(b);
  if (ra !== rb) return ra < rb ? -1 : 1;
  switch (ra) {
    case Rank.MinKey:
    case Rank.MaxKey:
    case Rank.Undefined:
    case Rank.Null:
      return 0;
    case Rank.Number:
      return compareNumbers(a, b);
    case Rank.String:
      return compareStrings(stringOf(a), stringOf(b));
    case Rank.Object:
      return compareObjects(a as object, b as object);
    case Rank.Array:
      return compareArrays(a as unknown[], b as unknown[]);
    case Rank.BinData: {
      const x = a as Binary;
      const y = b as Binary;
      if (x.position !== y.position) return x.position < y.position ? -1 : 1;
      if (x.sub_type !== y.sub_type) return x.sub_type < y.sub_type ? -1 : 1;
      return compareBytes(x.buffer.subarray(0, x.position), y.buffer.subarray(0, y.position));
    }
    case Rank.ObjectId:
      return compareObjectIds(a as ObjectId, b as ObjectId);
    case Rank.Bool:
      return a === b ? 0 : a ? 1 : -1;
    case Rank.Date: {
      const x = (a as Date).getTime();
      const y = (b as Date).getTime();
      return x < y ? -1 : x > y ? 1 : 0;
    }
    case Rank.Timestamp: {
      const x = a as Timestamp;
      const y = b as Timestamp;
      return x.t !== y.t ? (x.t < y.t ? -1 : 1) : x.i < y.i ? -1 : x.i > y.i ? 1 : 0;
    }
    case Rank.Regex: {
      const [pa, fa] = regexParts(a);
      const [pb, fb] = regexParts(b);
      return compareStrings(pa, pb) || compareStrings(fa, fb);
    }
    default: {
      const ca = a as { code: string | { toString(): string } };
      const cb = b as { code: string | { toString(): string } };
      return compareStrings(String(ca.code), String(cb.code));
    }
  }
}

function regexParts(v: unknown): [string, string] {
  if (v instanceof RegExp) return [v.source, v.flags];
  const r = v as BSONRegExp;
  return [r.pattern, r.options];
}

/** True when two values are equal under canonical comparison (so 1 equals 1.0). */
export function valuesEqual(a: unknown, b: unknown): boolean {
  return compareValues(a, b) === 0;
}
