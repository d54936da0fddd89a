/**
 * Decoding one element's value, found by scan.ts, into the `bson` package's JavaScript values.
 *
 * Decoding is type-faithful, as `deserialize(..., { promoteValues: false })` is: an int32 stays an
 * `Int32`, a double a `Double`, an int64 a `Long`, a regex a `BSONRegExp`, so a value written back
 * serializes to the same BSON type. Small fixed-size values are read directly; documents go
 * through `bson`'s `deserialize` of the sub-slice (which validates them); the rare composite types
 * (array, code with scope, DBPointer, old binary subtype 2) are wrapped in a one-field document and
 * deserialized, so their decoding is exactly `bson`'s.
 *
 * Field order: JavaScript enumerates an object's integer-like keys ("0", "1", "42") first, in
 * numeric order, whatever order they were stored in, so a decoded `{a: null, "1": "s"}` would
 * serialize back as `{"1": "s", a: null}`: a different BSON value, which sorts elsewhere. A value
 * used as a query bound or checkpoint must serialize back to its own bytes, so an embedded document
 * (at any depth, also inside arrays and code scopes) with an integer-like field name is decoded
 * into a `Map` in stored order, which `bson` serializes in insertion order; other documents stay
 * plain objects. `compareBsonValues` and the metadata store (`packValue`/`unpackValue`) take
 * either. `decodeDocument` (a top-level document, typed `Document`) is not affected at its top
 * level, only in the values `decodeValue` returns.
 */
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
  Timestamp,
  UUID,
  type DeserializeOptions,
  type Document,
} from 'bson';
import { BsonType } from './element-types.js';
import { decodeUtf8, forEachElement, readInt32LE, type RawElement } from './scan.js';
import { MalformedBson } from '../errors/errors.js';

/** `deserialize` options that keep every value's BSON type (see the module comment). */
export const TYPE_FAITHFUL: DeserializeOptions = Object.freeze({
  promoteValues: false,
  promoteLongs: false,
  promoteBuffers: false,
  bsonRegExp: true,
});

const DECODE_DOCUMENT: DeserializeOptions = Object.freeze({
  ...TYPE_FAITHFUL,
  allowObjectSmallerThanBufferSize: true,
});

/** Deserializes the document at `offset` (ending before `end`, if given) type-faithfully. */
export function decodeDocument(buf: Uint8Array, offset = 0, end?: number): Document {
  const bytes = offset === 0 && end === undefined ? buf : buf.subarray(offset, end);
  try {
    return deserialize(bytes, DECODE_DOCUMENT);
  } catch (error) {
    if (error instanceof MalformedBson) throw error;
    throw new MalformedBson({ detail: (error as Error).message, offset: offset });
  }
}

const float64 = new Float64Array(1);
const float64Bytes = new Uint8Array(float64.buffer);

function readDoubleLE(buf: Uint8Array, p: number): number {
  for (let i = 0; i < 8; i++) float64Bytes[i] = buf[p + i]!;
  return float64[0]!;
}

function readLong(buf: Uint8Array, p: number, unsigned = false): Long {
  return Long.fromBits(readInt32LE(buf, p), readInt32LE(buf, p + 4), unsigned);
}

/** A copy (never a view) of `buf[start, end)`, so the value does not pin the whole batch buffer. */
function copyBytes(buf: Uint8Array, start: number, end: number): Uint8Array {
  return Uint8Array.prototype.slice.call(buf, start, end);
}

/** Decodes a value by wrapping it as the only field (named "") of a tiny document. */
function decodeWrapped(buf: Uint8Array, element: RawElement): unknown {
  const valueLength = element.valueEnd - element.valueOffset;
  const doc = new Uint8Array(4 + 1 + 1 + valueLength + 1);
  const size = doc.length;
  doc[0] = size & 0xff;
  doc[1] = (size >>> 8) & 0xff;
  doc[2] = (size >>> 16) & 0xff;
  doc[3] = (size >>> 24) & 0xff;
  doc[4] = element.type;
  doc[5] = 0; // empty name
  doc.set(buf.subarray(element.valueOffset, element.valueEnd), 6);
  doc[size - 1] = 0;
  return decodeDocument(doc)[''];
}

/**
 * The value of an element found by `findElement`, as a `bson` JavaScript value (see the module
 * comment). Throws `MalformedBson` when the value's bytes are invalid.
 */
export function decodeValue(buf: Uint8Array, element: RawElement): unknown {
  try {
    const value = decodeValueUnchecked(buf, element);
    return isComposite(element.type) ? keepFieldOrder(value, buf, element) : value;
  } catch (error) {
    if (error instanceof MalformedBson) throw error;
    throw new MalformedBson({ detail: (error as Error).message, offset: element.valueOffset });
  }
}

/** A field name that JavaScript would move to the front of an object (an integer in canonical form). */
export function isIntegerLikeKey(name: string): boolean {
  return /^(?:0|[1-9]\d*)$/.test(name);
}

function isComposite(type: number): boolean {
  return type === BsonType.document || type === BsonType.array || type === BsonType.codeWithScope;
}

type BsonTagged = { _bsontype?: unknown };

/**
 * `value`, decoded by `bson` from `element` of `buf`, with every embedded document that has an
 * integer-like field name turned into a `Map` in stored order (see the module comment). Plain
 * objects and arrays are updated in place; a value not of the element's shape is left as it is.
 */
function keepFieldOrder(value: unknown, buf: Uint8Array, element: RawElement): unknown {
  if (value === null || typeof value !== 'object') return value;
  switch (element.type) {
    case BsonType.document: {
      // A DBRef (`{$ref, $id}`) is a class of its own; it is left as `bson` decoded it.
      if ((value as BsonTagged)._bsontype !== undefined || Array.isArray(value) || value instanceof Map) return value;
      const fields: [string, RawElement][] = [];
      let integerLike = false;
      forEachElement(
        buf,
        (child) => {
          const name = decodeUtf8(buf, child.nameOffset, child.valueOffset - 1);
          integerLike ||= isIntegerLikeKey(name);
          fields.push([name, child]);
        },
        element.valueOffset,
      );
      const doc = value as Record<string, unknown>;
      if (integerLike) {
        // Repeated names: the first position, the last value, as `bson` decodes them.
        const ordered = new Map<string, unknown>();
        for (const [name, child] of fields) ordered.set(name, keepFieldOrder(doc[name], buf, child));
        return ordered;
      }
      for (const [name, child] of fields) {
        if (isComposite(child.type)) doc[name] = keepFieldOrder(doc[name], buf, child);
      }
      return doc;
    }
    case BsonType.array: {
      if (!Array.isArray(value)) return value;
      let i = 0;
      forEachElement(
        buf,
        (child) => {
          if (isComposite(child.type) && i < value.length) value[i] = keepFieldOrder(value[i], buf, child);
          i++;
        },
        element.valueOffset,
      );
      return value;
    }
    case BsonType.codeWithScope: {
      const code = value as Code;
      if (code._bsontype !== 'Code' || code.scope === null || typeof code.scope !== 'object') return value;
      // int32 total size, string (int32 length, bytes), then the scope document.
      const scopeOffset = element.valueOffset + 8 + readInt32LE(buf, element.valueOffset + 4);
      const scope = { type: BsonType.document, nameOffset: element.nameOffset, valueOffset: scopeOffset, valueEnd: element.valueEnd };
      code.scope = keepFieldOrder(code.scope, buf, scope) as Document;
      return code;
    }
    default:
      return value;
  }
}

function decodeValueUnchecked(buf: Uint8Array, element: RawElement): unknown {
  const p = element.valueOffset;
  switch (element.type) {
    case BsonType.double:
      return new Double(readDoubleLE(buf, p));
    case BsonType.string:
      return decodeUtf8(buf, p + 4, element.valueEnd - 1);
    case BsonType.document:
      return decodeDocument(buf, p, element.valueEnd);
    case BsonType.binary: {
      const subtype = buf[p + 4]!;
      if (subtype === Binary.SUBTYPE_BYTE_ARRAY) return decodeWrapped(buf, element);
      const binary = new Binary(copyBytes(buf, p + 5, element.valueEnd), subtype);
      // As bson does: a well-formed subtype-4 value comes back as a UUID.
      return subtype === Binary.SUBTYPE_UUID && UUID.isValid(binary) ? binary.toUUID() : binary;
    }
    case BsonType.undefined:
      return undefined;
    case BsonType.objectId:
      return new ObjectId(copyBytes(buf, p, p + 12));
    case BsonType.boolean: {
      const byte = buf[p];
      if (byte !== 0 && byte !== 1) throw new MalformedBson({ detail: `boolean byte ${byte}`, offset: p });
      return byte === 1;
    }
    case BsonType.date:
      return new Date(readLong(buf, p).toNumber());
    case BsonType.null:
      return null;
    case BsonType.regex: {
      const patternEnd = buf.indexOf(0, p);
      return new BSONRegExp(decodeUtf8(buf, p, patternEnd), decodeUtf8(buf, patternEnd + 1, element.valueEnd - 1));
    }
    case BsonType.code:
      return new Code(decodeUtf8(buf, p + 4, element.valueEnd - 1));
    case BsonType.symbol:
      return new BSONSymbol(decodeUtf8(buf, p + 4, element.valueEnd - 1));
    case BsonType.int32:
      return new Int32(readInt32LE(buf, p));
    case BsonType.timestamp:
      return new Timestamp(readLong(buf, p, true));
    case BsonType.int64:
      return readLong(buf, p);
    case BsonType.decimal128:
      return new Decimal128(copyBytes(buf, p, p + 16));
    case BsonType.minKey:
      return new MinKey();
    case BsonType.maxKey:
      return new MaxKey();
    case BsonType.array:
    case BsonType.codeWithScope:
    case BsonType.dbPointer:
      return decodeWrapped(buf, element);
    default:
      throw new MalformedBson({ detail: `unknown element type 0x${element.type.toString(16)}`, offset: p });
  }
}
