/**
 * Which document a change event is about, as a string key, and which lane applies it.
 *
 * mongod finds a document by the *value* of its `_id`, not its bytes: `{_id: 1}` (int32),
 * `{_id: 1.0}` (double) and `{_id: NumberLong(1)}` are the same document, as are `{_id: {a: 1}}`
 * and `{_id: {a: 1.0}}`. Events for one document must reach the destination in order, so they
 * must share a lane and, inside a batch, coalesce with each other: the key is therefore canonical
 * in numbers (every numeric type by its value, `-0` as `0`), and otherwise the value's bytes with
 * its type class (a string and a symbol with the same text compare equal in mongod, so they share
 * a class). Strings and field names are length-prefixed, so that no text can forge the key's
 * punctuation (`{a: "x,b=sy"}` and `{a: "x", b: "y"}` must stay two documents). Collation is not taken into account:
 * with a case-insensitive default collation two
 * `_id` strings differing in case are one document on the server and two keys here (they then
 * still converge unless events for both spellings interleave within the same moments).
 */
import { serialize } from 'bson';
import { BsonType, decodeValue, findElement, forEachElement, type RawElement } from '../bson/index.js';
import type { HotDocuments } from '../domain/hot-documents.js';
import { decodeUtf8, readInt32LE } from '../bson/scan.js';
import type { Decimal128 } from 'bson';

const float64 = new Float64Array(1);
const float64Bytes = new Uint8Array(float64.buffer);

function hex(buf: Uint8Array, start: number, end: number): string {
  return Buffer.from(buf.buffer, buf.byteOffset + start, end - start).toString('hex');
}

/** An integral number as digits, anything else as JavaScript prints it (NaN, Infinity, fractions). */
function numberText(value: number): string {
  if (Object.is(value, -0)) return '0';
  if (Number.isInteger(value) && Math.abs(value) < 2 ** 63) return BigInt(value).toString();
  return String(value);
}

/** A decimal as the other numeric types print the same value (`1.00` → `1`, `1E+2` → `100`). */
function decimalText(value: Decimal128): string {
  const text = value.toString();
  const match = /^(-?)(\d+)(?:\.(\d*))?(?:E([+-]\d+))?$/i.exec(text);
  if (match === null) return text; // NaN, Infinity
  const [, sign, whole, fraction = '', exponentText = '0'] = match;
  // value = digits × 10^exponent, with digits free of leading and trailing zeros
  let digits = (whole! + fraction).replace(/^0+/, '');
  let exponent = Number(exponentText) - fraction.length;
  const trailing = digits.length - digits.replace(/0+$/, '').length;
  digits = digits.slice(0, digits.length - trailing);
  exponent += trailing;
  if (digits === '') return '0';
  let body: string;
  if (exponent >= 0) body = digits + '0'.repeat(exponent);
  else {
    const point = digits.length + exponent;
    body = point <= 0 ? `0.${'0'.repeat(-point)}${digits}` : `${digits.slice(0, point)}.${digits.slice(point)}`;
  }
  return `${sign}${body}`;
}

function valueKey(buf: Uint8Array, element: RawElement): string {
  const { type, valueOffset: p, valueEnd: end } = element;
  switch (type) {
    case BsonType.int32:
      return `n${readInt32LE(buf, p)}`;
    case BsonType.int64:
      return `n${Buffer.from(buf.buffer, buf.byteOffset + p, 8)
        .readBigInt64LE(0)
        .toString()}`;
    case BsonType.double:
      float64Bytes.set(buf.subarray(p, p + 8));
      return `n${numberText(float64[0]!)}`;
    case BsonType.decimal128:
      return `n${decimalText(decodeValue(buf, element) as Decimal128)}`;
    case BsonType.string:
    case BsonType.symbol: {
      const text = decodeUtf8(buf, p + 4, end - 1);
      return `s${text.length}:${text}`;
    }
    case BsonType.document:
    case BsonType.array: {
      const parts: string[] = [];
      forEachElement(
        buf,
        (child) => {
          const name = type === BsonType.document ? decodeUtf8(buf, child.nameOffset, child.valueOffset - 1) : '';
          parts.push(`${name.length}:${name}=${valueKey(buf, child)}`);
        },
        p,
      );
      return type === BsonType.document ? `o{${parts.join(',')}}` : `a[${parts.join(',')}]`;
    }
    default:
      return `t${type}:${hex(buf, p, end)}`;
  }
}

/** The canonical key of an `_id` element found in `buf` (see the module comment). */
export function idKey(buf: Uint8Array, id: RawElement): string {
  return valueKey(buf, id);
}

/** 32-bit FNV-1a of a string's UTF-16 code units: cheap, allocation-free, well spread. */
export function fnv1a(text: string, seed = 0x811c9dc5): number {
  let hash = seed;
  for (let i = 0; i < text.length; i++) {
    hash ^= text.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193);
  }
  return hash >>> 0;
}

/** The lane of a document: a hash of its namespace and canonical `_id` key, modulo `lanes`. */
export function laneOf(namespace: string, key: string, lanes: number): number {
  return fnv1a(key, fnv1a(namespace)) % lanes;
}

/** A document of `db.coll` by the key of its `_id` (`idKey`): the same for its events and for `--hotDocIDs`. */
export function documentKeyOf(db: string, coll: string, idKeyText: string): string {
  return `${db}.${coll}\0${idKeyText}`;
}

/** The keys of hot documents (`--hotDocIDs`), to recognise their events. */
export function hotDocumentKeys(hot: readonly HotDocuments[]): Set<string> {
  const keys = new Set<string>();
  for (const { db, coll, ids } of hot) {
    for (const id of ids) {
      const bytes = serialize({ _id: id });
      keys.add(documentKeyOf(db, coll, idKey(bytes, findElement(bytes, '_id')!)));
    }
  }
  return keys;
}
