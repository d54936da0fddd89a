/**
 * The hashed shard key function: mongod's `BSONElementHasher::hash64` (src/mongo/db/hasher.cpp)
 * with seed 0, so that hashed chunk bounds, hashed index keys and routing agree with a real
 * cluster's. MD5 over: the seed (int32), then per element its canonical type (int32), the field
 * name with its terminator (embedded elements only), and the value: numbers as their int64
 * (truncated, clamped), embedded documents and arrays element by element up to the terminator,
 * anything else as its value bytes. The first 8 digest bytes, little-endian, are the hash.
 */
import { createHash, type Hash } from 'node:crypto';
import { endianness } from 'node:os';
import { Decimal128, Long } from 'bson';
import { serialize, valueSize } from '../raw.js';

/** mongod's canonicalizeBSONType, by BSON type byte. */
function canonicalType(type: number): number {
  switch (type) {
    case 0xff:
      return -1; // MinKey
    case 0x7f:
      return 127; // MaxKey
    case 0x00: // EOO
    case 0x06: // undefined
      return 0;
    case 0x0a:
      return 5; // null
    case 0x01:
    case 0x10:
    case 0x12:
    case 0x13:
      return 10; // numbers
    case 0x02:
    case 0x0e:
      return 15; // string, symbol
    case 0x03:
      return 20;
    case 0x04:
      return 25;
    case 0x05:
      return 30;
    case 0x07:
      return 35;
    case 0x08:
      return 40;
    case 0x09:
      return 45;
    case 0x11:
      return 47;
    case 0x0b:
      return 50;
    case 0x0c:
      return 55;
    case 0x0d:
      return 60;
    case 0x0f:
      return 65;
    default:
      return 0;
  }
}

const TWO_63 = 2 ** 63;

/** mongod's safeNumberLongForHash: NaN is 0, out-of-range doubles clamp (2^63 itself wraps to -2^63). */
function numberForHash(buf: Buffer, type: number, at: number): bigint {
  if (type === 0x10) return BigInt(buf.readInt32LE(at));
  if (type === 0x12) return buf.readBigInt64LE(at);
  const value = type === 0x01 ? buf.readDoubleLE(at) : Number(new Decimal128(buf.subarray(at, at + 16)).toString());
  if (Number.isNaN(value)) return 0n;
  if (value === TWO_63) return -(2n ** 63n);
  if (value > TWO_63) return 2n ** 63n - 1n;
  if (value <= -TWO_63) return -(2n ** 63n);
  return BigInt(Math.trunc(value));
}

function int32(value: number): Buffer {
  const b = Buffer.allocUnsafe(4);
  b.writeInt32LE(value, 0);
  return b;
}

/** Hashes the elements of the document at `start` (then its terminator, as mongod's iterator does). */
function hashElements(h: Hash, buf: Buffer, start: number): void {
  const end = start + buf.readInt32LE(start) - 1;
  for (let at = start + 4; at < end;) {
    const type = buf[at]!;
    const nameEnd = buf.indexOf(0, at + 1);
    const valueAt = nameEnd + 1;
    const next = valueAt + valueSize(buf, type, valueAt);
    hashElement(h, buf, type, at + 1, valueAt, next);
    at = next;
  }
  h.update(int32(0)); // the EOO element: canonical type 0, empty name, no value
}

/** One element; `nameAt` is where its name starts (-1: a top-level value, hashed without it). */
function hashElement(h: Hash, buf: Buffer, type: number, nameAt: number, valueAt: number, end: number): void {
  h.update(int32(canonicalType(type)));
  if (nameAt >= 0) h.update(buf.subarray(nameAt, valueAt));
  if (type === 0x03 || type === 0x04) {
    hashElements(h, buf, valueAt);
  } else if (type === 0x0f) {
    // code with scope: the code string (with its terminator), then the scope's elements
    const codeLength = buf.readInt32LE(valueAt + 4);
    h.update(buf.subarray(valueAt + 8, valueAt + 8 + codeLength));
    hashElements(h, buf, valueAt + 8 + codeLength);
  } else if (type === 0x01 || type === 0x10 || type === 0x12 || type === 0x13) {
    const b = Buffer.allocUnsafe(8);
    b.writeBigInt64LE(numberForHash(buf, type, valueAt), 0);
    h.update(b);
  } else {
    h.update(buf.subarray(valueAt, end));
  }
}

// MD5 (RFC 1321) of one block, for the short inputs most shard keys are: a router hashes every
// document it routes, and node:crypto's per-call overhead was most of that cost.
const SHIFTS = [
  7, 12, 17, 22, 7, 12, 17, 22, 7, 12, 17, 22, 7, 12, 17, 22, 5, 9, 14, 20, 5, 9, 14, 20, 5, 9, 14, 20, 5, 9, 14, 20, 4, 11, 16, 23, 4, 11,
  16, 23, 4, 11, 16, 23, 4, 11, 16, 23, 6, 10, 15, 21, 6, 10, 15, 21, 6, 10, 15, 21, 6, 10, 15, 21,
];
const SINES = Array.from({ length: 64 }, (_, i) => Math.floor(Math.abs(Math.sin(i + 1)) * 2 ** 32) | 0);
const BLOCK = Buffer.alloc(64);
/** The block as little-endian words (the machines Node runs on here are little-endian). */
const WORDS = new Int32Array(BLOCK.buffer, BLOCK.byteOffset, 16);
/** Bytes of input one padded block holds (the rest is the 0x80 marker and the bit length). */
const ONE_BLOCK = 55;
const LITTLE_ENDIAN = endianness() === 'LE';

/** MD5 of `BLOCK[0, length)` (length ≤ 55): its first 8 digest bytes as a little-endian int64. */
function md5OneBlock(length: number): Long {
  BLOCK[length] = 0x80;
  for (let i = length + 1; i < 56; i++) BLOCK[i] = 0;
  WORDS[14] = length * 8;
  WORDS[15] = 0;
  let a = 0x67452301;
  let b = 0xefcdab89 | 0;
  let c = 0x98badcfe | 0;
  let d = 0x10325476;
  for (let i = 0; i < 64; i++) {
    let f: number;
    let g: number;
    if (i < 16) {
      f = (b & c) | (~b & d);
      g = i;
    } else if (i < 32) {
      f = (d & b) | (~d & c);
      g = (5 * i + 1) & 15;
    } else if (i < 48) {
      f = b ^ c ^ d;
      g = (3 * i + 5) & 15;
    } else {
      f = c ^ (b | ~d);
      g = (7 * i) & 15;
    }
    f = (f + a + SINES[i]! + WORDS[g]!) | 0;
    a = d;
    d = c;
    c = b;
    const s = SHIFTS[i]!;
    b = (b + ((f << s) | (f >>> (32 - s)))) | 0;
  }
  return Long.fromBits((a + 0x67452301) | 0, (b + (0xefcdab89 | 0)) | 0);
}

/** The hash of a raw element's value (`type` its BSON type, the value in `buf[valueAt, end)`). */
export function hashRawValue(buf: Buffer, type: number, valueAt: number, end: number): Long {
  const number = type === 0x01 || type === 0x10 || type === 0x12 || type === 0x13;
  const valueBytes = number ? 8 : end - valueAt;
  if (LITTLE_ENDIAN && type !== 0x03 && type !== 0x04 && type !== 0x0f && 8 + valueBytes <= ONE_BLOCK) {
    WORDS[0] = 0; // the seed
    WORDS[1] = canonicalType(type);
    if (type === 0x10) {
      const n = buf.readInt32LE(valueAt);
      WORDS[2] = n;
      WORDS[3] = n < 0 ? -1 : 0;
    } else if (type === 0x12) {
      for (let i = 0; i < 8; i++) BLOCK[8 + i] = buf[valueAt + i]!;
    } else if (number) {
      BLOCK.writeBigInt64LE(numberForHash(buf, type, valueAt), 8);
    } else {
      for (let i = 0; i < valueBytes; i++) BLOCK[8 + i] = buf[valueAt + i]!;
    }
    return md5OneBlock(8 + valueBytes);
  }
  return hashByCrypto(buf, type, valueAt, end);
}

/** `hashRawValue` through node:crypto's MD5, for any value (the one-block path is checked against it). */
export function hashByCrypto(buf: Buffer, type: number, valueAt: number, end: number): Long {
  const h = createHash('md5');
  h.update(int32(0)); // the seed
  hashElement(h, buf, type, -1, valueAt, end);
  const digest = h.digest();
  return Long.fromBits(digest.readInt32LE(0), digest.readInt32LE(4));
}

/** The hash of a decoded value (keep its BSON type: Int32, Double, Long wrappers, as `typed` decodes). */
export function hashValue(value: unknown): Long {
  const doc = serialize({ v: value === undefined ? null : value });
  const type = doc[4]!;
  const valueAt = 7; // after the length, the type byte and "v\0"
  return hashRawValue(doc, type, valueAt, doc.length - 1);
}
