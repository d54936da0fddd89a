/**
 * mongod's arithmetic on typed numbers for `$inc`/`$mul` (its SafeNum): int op int stays int
 * unless it overflows (then long); int/long op long stays long and fails on overflow; anything
 * with a double is a double; anything with a decimal is a decimal.
 */
import { Decimal128, Double, Int32, Long } from 'bson';

export type TypedNumber = Int32 | Long | Double | Decimal128;

const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;
const INT32_MIN = -(2 ** 31);
const INT32_MAX = 2 ** 31 - 1;

function kind(v: unknown): string | undefined {
  return (v as { _bsontype?: string } | null)?._bsontype;
}

export function isTypedNumber(v: unknown): v is TypedNumber {
  const k = kind(v);
  return k === 'Int32' || k === 'Long' || k === 'Double' || k === 'Decimal128';
}

function asBigInt(v: TypedNumber): bigint {
  return kind(v) === 'Long' ? BigInt((v as Long).toString()) : BigInt((v as Int32).value);
}

export function asDouble(v: TypedNumber): number {
  switch (kind(v)) {
    case 'Long':
      return (v as Long).toNumber();
    case 'Decimal128':
      return Number.parseFloat((v as Decimal128).toString());
    default:
      return (v as Int32 | Double).value;
  }
}

function decimal(n: number): Decimal128 {
  if (Number.isNaN(n)) return Decimal128.fromString('NaN');
  if (!Number.isFinite(n)) return Decimal128.fromString(n > 0 ? 'Infinity' : '-Infinity');
  return Decimal128.fromString(String(n));
}

function integerResult(result: bigint, bothInt32: boolean): TypedNumber | undefined {
  if (bothInt32 && result >= BigInt(INT32_MIN) && result <= BigInt(INT32_MAX)) return new Int32(Number(result));
  if (result < INT64_MIN || result > INT64_MAX) return undefined;
  return Long.fromBigInt(result);
}

function combine(a: TypedNumber, b: TypedNumber, op: 'add' | 'mul'): TypedNumber | undefined {
  const ka = kind(a);
  const kb = kind(b);
  if (ka === 'Decimal128' || kb === 'Decimal128') {
    // Approximation: decimal arithmetic is carried out in double precision.
    const x = asDouble(a);
    const y = asDouble(b);
    return decimal(op === 'add' ? x + y : x * y);
  }
  if (ka === 'Double' || kb === 'Double') {
    const x = asDouble(a);
    const y = asDouble(b);
    return new Double(op === 'add' ? x + y : x * y);
  }
  const x = asBigInt(a);
  const y = asBigInt(b);
  return integerResult(op === 'add' ? x + y : x * y, ka === 'Int32' && kb === 'Int32');
}

/** a + b with mongod's types; undefined when a long overflows (mongod fails the update). */
export function add(a: TypedNumber, b: TypedNumber): TypedNumber | undefined {
  return combine(a, b, 'add');
}

/** a * b with mongod's types; undefined when a long overflows. */
export function multiply(a: TypedNumber, b: TypedNumber): TypedNumber | undefined {
  return combine(a, b, 'mul');
}

/** SafeNum::isIdentical: same type and same value (so an update that yields it is a no-op). */
export function identical(a: TypedNumber, b: TypedNumber): boolean {
  if (kind(a) !== kind(b)) return false;
  if (kind(a) === 'Long') return (a as Long).equals(b as Long);
  if (kind(a) === 'Decimal128') return a.toString() === b.toString();
  return Object.is((a as Int32).value, (b as Int32).value) || (a as Int32).value === (b as Int32).value;
}

/** mongod's SafeNum debug rendering, e.g. `(NumberLong)9223372036854775807`, for messages. */
export function debugString(v: TypedNumber): string {
  switch (kind(v)) {
    case 'Int32':
      return `(NumberInt)${(v as Int32).value}`;
    case 'Long':
      return `(NumberLong)${(v as Long).toString()}`;
    case 'Double':
      return `(NumberDouble)${(v as Double).value}`;
    default:
      return `(NumberDecimal)${v.toString()}`;
  }
}

/** `$bit` on integers (and/or/xor); undefined when an operand is not an integer type. */
export function bitwise(a: TypedNumber, b: TypedNumber, op: 'and' | 'or' | 'xor'): TypedNumber | undefined {
  const ka = kind(a);
  const kb = kind(b);
  if ((ka !== 'Int32' && ka !== 'Long') || (kb !== 'Int32' && kb !== 'Long')) return undefined;
  if (ka === 'Int32' && kb === 'Int32') {
    const x = (a as Int32).value;
    const y = (b as Int32).value;
    return new Int32(op === 'and' ? x & y : op === 'or' ? x | y : x ^ y);
  }
  const x = BigInt.asIntN(64, asBigInt(a));
  const y = BigInt.asIntN(64, asBigInt(b));
  const r = op === 'and' ? x & y : op === 'or' ? x | y : x ^ y;
  return Long.fromBigInt(BigInt.asIntN(64, r));
}
