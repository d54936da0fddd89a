/**
 * Decoding one element's value, found by scan.ts, into the `bson` package's JavaScript values.
 *
 * Decoding is type-faithful, as `deserialize(..., { promoteValues: false })` is: an int32 stays an
 * `Int32`, a double a `Double`, an int64 a `Long`, a regex a `BSONRegExp`, so a value written back
 * serializes to the same BSON type. Small fixed-size values are read directly; documents go
 * through `bson`'s `deserialize` of the sub-slice (which validates them); the rare composite types
 * (array, code with scope, DBPointer, old binary subtype 2) are wrapped in a one-field document and
 * deserialized, so their decoding is exactly `bson`'s.
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
import { MalformedBsonError } from './errors.js';
import { decodeUtf8, readInt32LE, type RawElement } from './scan.js';

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
    if (error instanceof MalformedBsonError) throw error;
    throw new MalformedBsonError((error as Error).message, offset);
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
 * comment). Throws `MalformedBsonError` when the value's bytes are invalid.
 */
export function decodeValue(buf: Uint8Array, element: RawElement): unknown {
  try {
    return decodeValueUnchecked(buf, element);
  } catch (error) {
    if (error instanceof MalformedBsonError) throw error;
    throw new MalformedBsonError((error as Error).message, element.valueOffset);
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
      if (byte !== 0 && byte !== 1) throw new MalformedBsonError(`boolean byte ${byte}`, p);
      return byte === 1;
    }
    case BsonType.date:
      return new Date(readLong(buf, p).toNumber());
    case BsonType.null:
      return null;
    case BsonType.regex: {
      const patternEnd = buf.indexOf(0, p);
      return new BSONRegExp(
        decodeUtf8(buf, p, patternEnd),
        decodeUtf8(buf, patternEnd + 1, element.valueEnd - 1),
      );
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
      throw new MalformedBsonError(`unknown element type 0x${element.type.toString(16)}`, p);
  }
}
