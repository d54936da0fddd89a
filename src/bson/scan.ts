/**
 * Finding top-level elements of a raw BSON document without deserializing it.
 *
 * The copy and change-apply paths hold documents as bytes; they need one or two fields of each
 * (`_id`, `operationType`, `ns`...). This walks the element list, skipping each value by the size
 * rule of its type (bsonspec.org), and stops at the first match. Every size read from the input is
 * checked against the enclosing document before it is used, so malformed input raises
 * `MalformedBson` and nothing is read past the end of the buffer. Embedded documents are only
 * bounds-checked here; decoding one (see decode.ts) validates its contents.
 *
 * (bson's `onDemand.parseToElements` does a similar walk but is marked experimental, materializes
 * every element and checks less; this scanner stops early and allocates nothing while skipping.)
 */
import { BsonType } from './element-types.js';
import { MalformedBson } from '../errors/errors.js';

/** Where one element lies in a buffer. All offsets are absolute offsets into that buffer. */
export interface RawElement {
  /** The type byte (see `BsonType`). */
  readonly type: number;
  /** Offset of the element's name (a NUL-terminated UTF-8 string). */
  readonly nameOffset: number;
  /** Offset of the first byte of the value. */
  readonly valueOffset: number;
  /** Offset one past the last byte of the value. */
  readonly valueEnd: number;
}

/** A field name, as a string or already encoded to UTF-8 (encode once for names used per document). */
export type FieldName = string | Uint8Array;

const encoder = new TextEncoder();
const utf8 = new TextDecoder('utf-8', { fatal: true });
const encodedNames = new Map<string, Uint8Array>();
const ENCODED_NAME_CACHE_LIMIT = 1024;

/** UTF-8 bytes of a field name; names used on hot paths are encoded once and cached. */
export function encodeFieldName(name: FieldName): Uint8Array {
  if (typeof name !== 'string') return name;
  let bytes = encodedNames.get(name);
  if (bytes === undefined) {
    bytes = encoder.encode(name);
    if (encodedNames.size < ENCODED_NAME_CACHE_LIMIT) encodedNames.set(name, bytes);
  }
  return bytes;
}

/** Little-endian signed 32-bit integer at `p` (caller has checked `p + 4 <= length`). */
export function readInt32LE(buf: Uint8Array, p: number): number {
  return buf[p]! | (buf[p + 1]! << 8) | (buf[p + 2]! << 16) | (buf[p + 3]! << 24);
}

/**
 * Checks the header and terminator of the document starting at `offset` and returns the offset
 * of its terminating zero byte.
 */
export function documentEnd(buf: Uint8Array, offset = 0): number {
  if (!Number.isInteger(offset) || offset < 0 || offset + 5 > buf.length) {
    throw new MalformedBson({ detail: `a document needs at least 5 bytes, ${Math.max(0, buf.length - offset)} available`, offset: offset });
  }
  const size = readInt32LE(buf, offset);
  if (size < 5 || size > buf.length - offset) {
    throw new MalformedBson({ detail: `document size ${size} does not fit the ${buf.length - offset} bytes available`, offset: offset });
  }
  const last = offset + size - 1;
  if (buf[last] !== 0) throw new MalformedBson({ detail: 'document does not end with a zero byte', offset: last });
  return last;
}

/** Offset of the NUL ending the C string at `from`, which must come before `limit`. */
function cstringEnd(buf: Uint8Array, from: number, limit: number): number {
  const end = buf.indexOf(0, from);
  if (end < 0 || end >= limit) throw new MalformedBson({ detail: 'unterminated C string', offset: from });
  return end;
}

/** End of a length-prefixed, NUL-terminated string value at `p`, within `limit`. */
function stringEnd(buf: Uint8Array, p: number, limit: number): number {
  if (p + 4 > limit) throw new MalformedBson({ detail: 'string length runs past the document', offset: p });
  const length = readInt32LE(buf, p);
  if (length < 1 || length > limit - p - 4) {
    throw new MalformedBson({ detail: `string length ${length} does not fit the document`, offset: p });
  }
  const end = p + 4 + length;
  if (buf[end - 1] !== 0) throw new MalformedBson({ detail: 'string does not end with a zero byte', offset: end - 1 });
  return end;
}

/** End of an embedded document or array value at `p`, within `limit`. */
function embeddedEnd(buf: Uint8Array, p: number, limit: number): number {
  if (p + 4 > limit) throw new MalformedBson({ detail: 'embedded document size runs past the document', offset: p });
  const size = readInt32LE(buf, p);
  if (size < 5 || size > limit - p) {
    throw new MalformedBson({ detail: `embedded document size ${size} does not fit the document`, offset: p });
  }
  const end = p + size;
  if (buf[end - 1] !== 0) {
    throw new MalformedBson({ detail: 'embedded document does not end with a zero byte', offset: end - 1 });
  }
  return end;
}

function fixedEnd(p: number, size: number, limit: number): number {
  if (p + size > limit) throw new MalformedBson({ detail: `${size}-byte value runs past the document`, offset: p });
  return p + size;
}

/**
 * Offset one past the value of type `type` that starts at `p`; the value must end at or before
 * `limit` (the offset of the enclosing document's terminating zero).
 */
export function valueEnd(buf: Uint8Array, type: number, p: number, limit: number): number {
  switch (type) {
    case BsonType.double:
    case BsonType.date:
    case BsonType.timestamp:
    case BsonType.int64:
      return fixedEnd(p, 8, limit);
    case BsonType.int32:
      return fixedEnd(p, 4, limit);
    case BsonType.objectId:
      return fixedEnd(p, 12, limit);
    case BsonType.decimal128:
      return fixedEnd(p, 16, limit);
    case BsonType.boolean:
      return fixedEnd(p, 1, limit);
    case BsonType.undefined:
    case BsonType.null:
    case BsonType.minKey:
    case BsonType.maxKey:
      return p;
    case BsonType.string:
    case BsonType.code:
    case BsonType.symbol:
      return stringEnd(buf, p, limit);
    case BsonType.document:
    case BsonType.array:
      return embeddedEnd(buf, p, limit);
    case BsonType.binary: {
      if (p + 5 > limit) throw new MalformedBson({ detail: 'binary header runs past the document', offset: p });
      const length = readInt32LE(buf, p);
      if (length < 0 || length > limit - p - 5) {
        throw new MalformedBson({ detail: `binary length ${length} does not fit the document`, offset: p });
      }
      return p + 5 + length;
    }
    case BsonType.regex: {
      // Two C strings: the pattern, then the options.
      const patternEnd = cstringEnd(buf, p, limit);
      return cstringEnd(buf, patternEnd + 1, limit) + 1;
    }
    case BsonType.dbPointer:
      // A string (the namespace) followed by a 12-byte ObjectId.
      return fixedEnd(stringEnd(buf, p, limit), 12, limit);
    case BsonType.codeWithScope: {
      // int32 total size (counting itself), then a string, then a document, exactly filling it.
      if (p + 4 > limit) throw new MalformedBson({ detail: 'code-with-scope size runs past the document', offset: p });
      const total = readInt32LE(buf, p);
      if (total < 14 || total > limit - p) {
        throw new MalformedBson({ detail: `code-with-scope size ${total} does not fit the document`, offset: p });
      }
      const end = p + total;
      if (embeddedEnd(buf, stringEnd(buf, p + 4, end), end) !== end) {
        throw new MalformedBson({ detail: 'code-with-scope size disagrees with its contents', offset: p });
      }
      return end;
    }
    default:
      throw new MalformedBson({ detail: `unknown element type 0x${type.toString(16)}`, offset: p - 1 });
  }
}

function nameEquals(buf: Uint8Array, start: number, end: number, name: Uint8Array): boolean {
  if (end - start !== name.length) return false;
  for (let i = 0; i < name.length; i++) if (buf[start + i] !== name[i]) return false;
  return true;
}

type ElementVisitor = (type: number, nameOffset: number, valueOffset: number, end: number) => boolean;

/** The element walk shared by the functions below; passes primitives so skipping allocates nothing. */
function walk(buf: Uint8Array, offset: number, visit: ElementVisitor): void {
  const last = documentEnd(buf, offset);
  let p = offset + 4;
  for (;;) {
    const type = buf[p]!;
    if (type === 0) {
      if (p !== last) throw new MalformedBson({ detail: 'zero type byte before the end of the document', offset: p });
      return;
    }
    const nameOffset = p + 1;
    const valueOffset = cstringEnd(buf, nameOffset, last) + 1;
    const end = valueEnd(buf, type, valueOffset, last);
    if (visit(type, nameOffset, valueOffset, end)) return;
    p = end;
  }
}

/**
 * Calls `visit` for each top-level element of the document at `offset`, in order, until it
 * returns `true` (stop) or the document ends.
 */
export function forEachElement(buf: Uint8Array, visit: (element: RawElement) => boolean | void, offset = 0): void {
  walk(buf, offset, (type, nameOffset, valueOffset, end) => visit({ type, nameOffset, valueOffset, valueEnd: end }) === true);
}

/**
 * The first top-level element named `name` in the document at `offset`, or `undefined`.
 * (BSON allows repeated names; like mongod's field lookup, the first one wins.)
 */
export function findElement(buf: Uint8Array, name: FieldName, offset = 0): RawElement | undefined {
  const wanted = encodeFieldName(name);
  let found: RawElement | undefined;
  walk(buf, offset, (type, nameOffset, valueOffset, end) => {
    if (!nameEquals(buf, nameOffset, valueOffset - 1, wanted)) return false;
    found = { type, nameOffset, valueOffset, valueEnd: end };
    return true;
  });
  return found;
}

/**
 * The first top-level element of each of `names`, found in one pass (which stops as soon as all
 * are found); `undefined` where a name is absent. Result order follows `names`.
 */
export function findElements(buf: Uint8Array, names: readonly FieldName[], offset = 0): (RawElement | undefined)[] {
  const wanted = names.every((name) => typeof name !== 'string') ? (names as readonly Uint8Array[]) : names.map(encodeFieldName);
  const found: (RawElement | undefined)[] = new Array(names.length).fill(undefined);
  let missing = names.length;
  walk(buf, offset, (type, nameOffset, valueOffset, end) => {
    for (let i = 0; i < wanted.length; i++) {
      if (found[i] === undefined && nameEquals(buf, nameOffset, valueOffset - 1, wanted[i]!)) {
        found[i] = { type, nameOffset, valueOffset, valueEnd: end };
        missing--;
        break;
      }
    }
    return missing === 0;
  });
  return found;
}

/** Below this length, ASCII text is decoded by hand: cheaper than a TextDecoder call. */
const SHORT_TEXT = 32;

/** The UTF-8 text in `buf[start, end)`; invalid UTF-8 is malformed BSON. */
export function decodeUtf8(buf: Uint8Array, start: number, end: number): string {
  if (end - start <= SHORT_TEXT) {
    let text = '';
    let i = start;
    for (; i < end && buf[i]! < 0x80; i++) text += String.fromCharCode(buf[i]!);
    if (i === end) return text;
  }
  try {
    return utf8.decode(buf.subarray(start, end));
  } catch {
    throw new MalformedBson({ detail: 'invalid UTF-8', offset: start });
  }
}

/** The name of an element, decoded. */
export function elementName(buf: Uint8Array, element: RawElement): string {
  return decodeUtf8(buf, element.nameOffset, element.valueOffset - 1);
}

/** A view (no copy) of an element's value bytes. */
export function valueBytes(buf: Uint8Array, element: RawElement): Uint8Array {
  return buf.subarray(element.valueOffset, element.valueEnd);
}

/** A view (no copy) of the whole document at `offset`, after checking its header. */
export function documentBytes(buf: Uint8Array, offset = 0): Uint8Array {
  return buf.subarray(offset, documentEnd(buf, offset) + 1);
}
