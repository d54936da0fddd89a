/**
 * Raw BSON helpers: documents are stored and served as the bytes clients sent, and parsed only
 * as far as a request needs (the `_id`, an index key, a filter).
 */
import { BSON, Double, Int32, Long, ObjectId } from 'bson';
import { ServerError } from './errors.js';
import { StoredBytes, type BatchDocument } from './storage/memory.js';

/** BSON-serializes a document into a Buffer (bson returns a Buffer on Node, typed Uint8Array). */
export function serialize(doc: Record<string, unknown>): Buffer {
  const bytes = BSON.serialize(doc);
  return Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

/** Decode options used for stored documents whose values feed filters and sorts. */
export const promoted = { validation: { utf8: false } } as const;
/** Decode options that keep every numeric type (Int32/Double/Long) distinct. */
export const typed = { promoteValues: false, bsonRegExp: true, validation: { utf8: false } } as const;

/** Size in bytes of the value of an element of BSON type `type` starting at `at`. */
export function valueSize(buf: Buffer, type: number, at: number): number {
  switch (type) {
    case 0x01: // double
    case 0x09: // UTC datetime
    case 0x11: // timestamp
    case 0x12: // int64
      return 8;
    case 0x02: // string
    case 0x0d: // JavaScript code
    case 0x0e: // symbol
      return 4 + buf.readInt32LE(at);
    case 0x03: // document
    case 0x04: // array
    case 0x0f: // code with scope
      return buf.readInt32LE(at);
    case 0x05: // binary
      return 5 + buf.readInt32LE(at);
    case 0x06: // undefined
    case 0x0a: // null
    case 0x7f: // MaxKey
    case 0xff: // MinKey
      return 0;
    case 0x07: // ObjectId
      return 12;
    case 0x08: // bool
      return 1;
    case 0x0b: {
      // regex: two C strings
      const first = buf.indexOf(0, at);
      return buf.indexOf(0, first + 1) + 1 - at;
    }
    case 0x0c: // DBPointer
      return 4 + buf.readInt32LE(at) + 12;
    case 0x10: // int32
      return 4;
    case 0x13: // decimal128
      return 16;
    default:
      throw new ServerError('InvalidBSON', `unknown BSON type 0x${type.toString(16)}`);
  }
}

/** Location of one top-level element inside a raw document. */
export interface RawElement {
  type: number;
  /** Offset of the element's type byte. */
  start: number;
  /** Offset just past the element's value. */
  end: number;
}

/**
 * The offset of the NUL ending the field name at `from`, or `end` when there is none before it.
 * Field names are short: a loop costs less than a native `indexOf` per element.
 */
function nameEndOf(doc: Buffer, from: number, end: number): number {
  let at = from;
  while (at < end && doc[at] !== 0) at++;
  return at;
}

/** Whether the field name at `doc[from, to)` is `name` (UTF-8), without a native call per element. */
function isName(doc: Buffer, from: number, to: number, name: Uint8Array): boolean {
  if (to - from !== name.length) return false;
  for (let i = 0; i < name.length; i++) if (doc[from + i] !== name[i]) return false;
  return true;
}

/** Finds a top-level element by name without decoding the document. */
export function findElement(doc: Buffer, name: string): RawElement | undefined {
  const end = doc.readInt32LE(0) - 1;
  let at = 4;
  while (at < end) {
    const type = doc[at];
    const nameEnd = nameEndOf(doc, at + 1, end);
    if (nameEnd >= end) throw new ServerError('InvalidBSON', 'unterminated field name');
    const valueAt = nameEnd + 1;
    const next = valueAt + valueSize(doc, type, valueAt);
    if (next > end) throw new ServerError('InvalidBSON', 'element extends past end of document');
    if (nameEnd - at - 1 === name.length && doc.toString('latin1', at + 1, nameEnd) === name) {
      return { type, start: at, end: next };
    }
    at = next;
  }
  return undefined;
}

/**
 * An ObjectId's value is read through one scratch buffer rather than a new view per decoded
 * `_id`: bson 7 keeps an ObjectId as four numbers, not the bytes it was made from. Checked once,
 * in case a bson release keeps the bytes again (a shared scratch would then change stored ids).
 */
const objectIdScratch = Buffer.alloc(12);
const OBJECT_ID_COPIES_BYTES = (() => {
  const id = new ObjectId(objectIdScratch);
  objectIdScratch[11] = 1;
  return id.id[11] === 0;
})();

/** Decodes a single element (as found by `findElement`) into its JS value. */
export function decodeElement(doc: Buffer, el: RawElement, options: BSON.DeserializeOptions = typed): unknown {
  if (el.type === 0x07) {
    if (!OBJECT_ID_COPIES_BYTES) return new ObjectId(doc.subarray(el.end - 12, el.end));
    // Twelve bytes by hand: a native copy's call costs more than the bytes (~100 ns a bulk-inserted `_id`).
    for (let i = 0, from = el.end - 12; i < 12; i++) objectIdScratch[i] = doc[from + i]!;
    return new ObjectId(objectIdScratch);
  }
  // The commonest `_id` types, read as `typed` decodes them without a wrapper document each.
  if (options === typed && (el.type === 0x10 || el.type === 0x12 || el.type === 0x01)) {
    const valueAt = el.end - (el.type === 0x10 ? 4 : 8);
    if (el.type === 0x10) return new Int32(doc.readInt32LE(valueAt));
    if (el.type === 0x12) return Long.fromBits(doc.readInt32LE(valueAt), doc.readInt32LE(valueAt + 4));
    return new Double(doc.readDoubleLE(valueAt));
  }
  const size = el.end - el.start;
  const wrapper = Buffer.allocUnsafe(size + 5);
  wrapper.writeInt32LE(size + 5, 0);
  doc.copy(wrapper, 4, el.start, el.end);
  wrapper[size + 4] = 0;
  const decoded = BSON.deserialize(wrapper, options);
  for (const key in decoded) return decoded[key];
  return undefined;
}

/**
 * A document holding only the top-level fields of `doc` named in `names`, decoded as
 * `BSON.deserialize(doc, options)` would decode them (a repeated name keeps its last value, as
 * there). The chosen elements are copied into one small document and decoded once.
 */
export function decodeFields(doc: Buffer, names: readonly string[], options: BSON.DeserializeOptions): Record<string, unknown> {
  return fieldDecoder(names, options)(doc);
}

/** `decodeFields` for many documents: the names are encoded once. */
export function fieldDecoder(names: readonly string[], options: BSON.DeserializeOptions): (doc: Buffer) => Record<string, unknown> {
  const wanted = names.map((name) => Buffer.from(name, 'utf8'));
  return (doc) => decodeChosenFields(doc, wanted, options);
}

function decodeChosenFields(doc: Buffer, wanted: readonly Buffer[], options: BSON.DeserializeOptions): Record<string, unknown> {
  const chosen: number[] = [];
  let size = 5;
  const end = doc.readInt32LE(0) - 1;
  for (let at = 4; at < end;) {
    const type = doc[at];
    const nameEnd = nameEndOf(doc, at + 1, end);
    const valueAt = nameEnd + 1;
    const next = valueAt + valueSize(doc, type, valueAt);
    for (const name of wanted) {
      if (isName(doc, at + 1, nameEnd, name)) {
        chosen.push(at, next);
        size += next - at;
        break;
      }
    }
    at = next;
  }
  const out = Buffer.allocUnsafe(size);
  out.writeInt32LE(size, 0);
  let written = 4;
  for (let i = 0; i < chosen.length; i += 2) written += doc.copy(out, written, chosen[i], chosen[i + 1]);
  out[written] = 0;
  return BSON.deserialize(out, options) as Record<string, unknown>;
}

/**
 * Whether a dotted path (`parts`: its names, UTF-8) of a raw document meets an array: the value
 * there is one, or lies inside one. Read without decoding; where a name repeats, any of its
 * elements counts (a decode keeps the last one: this may say yes where it would not, never no
 * where it would).
 */
export function pathMeetsArray(doc: Buffer, parts: readonly Buffer[], start = 0, depth = 0): boolean {
  const name = parts[depth]!;
  const end = start + doc.readInt32LE(start) - 1;
  for (let at = start + 4; at < end;) {
    const type = doc[at]!;
    const nameEnd = nameEndOf(doc, at + 1, end);
    const valueAt = nameEnd + 1;
    if (isName(doc, at + 1, nameEnd, name)) {
      if (type === 0x04) return true;
      if (type === 0x03 && depth + 1 < parts.length && pathMeetsArray(doc, parts, valueAt, depth + 1)) return true;
    }
    at = valueAt + valueSize(doc, type, valueAt);
  }
  return false;
}

/** The `_id` of a raw document, type-faithful; undefined if the document has none. */
export function readId(doc: Buffer): unknown {
  const el = findElement(doc, '_id');
  return el ? decodeElement(doc, el) : undefined;
}

/** The `_id` element when it comes first, as copied and generated documents have it (else undefined). */
function leadingId(doc: Buffer): RawElement | undefined {
  if (doc.length < 10 || doc[5] !== 0x5f || doc[6] !== 0x69 || doc[7] !== 0x64 || doc[8] !== 0) return undefined;
  const type = doc[4]!;
  const end = 9 + valueSize(doc, type, 9);
  if (end > doc.readInt32LE(0) - 1) throw new ServerError('InvalidBSON', 'element extends past end of document');
  return { type, start: 4, end };
}

/**
 * What mongod does to a document before storing it: `_id` first (generated when missing).
 * Returns the (possibly rebuilt) document and its `_id`.
 */
export function prepareForInsert(doc: Buffer): { doc: Buffer; id: unknown } {
  const el = leadingId(doc) ?? findElement(doc, '_id');
  if (!el) {
    const id = new ObjectId();
    const idElement = Buffer.alloc(1 + 4 + 12);
    idElement[0] = 0x07;
    idElement.write('_id\0', 1, 'latin1');
    idElement.set(id.id, 5);
    return { doc: spliceFirst(doc, idElement, undefined), id };
  }
  // mongod's fixDocumentForInsert reports these as BadValue (code 2).
  if (el.type === 0x04) throw new ServerError('BadValue', "can't use an array for _id");
  if (el.type === 0x0b) throw new ServerError('BadValue', "can't use a regex for _id");
  if (el.type === 0x06) throw new ServerError('BadValue', "can't use a undefined for _id");
  const id = decodeElement(doc, el);
  if (el.start === 4) return { doc, id };
  return { doc: spliceFirst(doc, doc.subarray(el.start, el.end), el), id };
}

/** Rebuilds `doc` with `element` first, removing `existing` from its old place. */
function spliceFirst(doc: Buffer, element: Buffer, existing: RawElement | undefined): Buffer {
  const total = doc.length + (existing ? 0 : element.length);
  const out = Buffer.allocUnsafe(total);
  out.writeInt32LE(total, 0);
  element.copy(out, 4);
  let at = 4 + element.length;
  if (existing) {
    at += doc.copy(out, at, 4, existing.start);
    doc.copy(out, at, existing.end);
  } else {
    doc.copy(out, at, 4);
  }
  return out;
}

/** A stored document to embed as-is in a reply. */
export class RawDoc {
  constructor(readonly bytes: Buffer) {}
}

/** An array of stored documents to embed as-is in a reply (a cursor batch). */
export class RawDocArray {
  constructor(readonly docs: BatchDocument[]) {}
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && Object.getPrototypeOf(v) === Object.prototype;
}

function containsRaw(v: unknown): boolean {
  if (v instanceof RawDoc || v instanceof RawDocArray) return true;
  if (Array.isArray(v)) return v.some(containsRaw);
  if (isPlainObject(v)) {
    for (const key in v) if (containsRaw(v[key])) return true;
  }
  return false;
}

/** An element's type byte and name, `0x<type> name \0`. */
function elementHead(type: number, name: string): Buffer {
  const head = Buffer.allocUnsafe(Buffer.byteLength(name, 'utf8') + 2);
  head[0] = type;
  head.write(name, 1, 'utf8');
  head[head.length - 1] = 0;
  return head;
}

/** Decimal digits of a non-negative integer. */
function digitsOf(n: number): number {
  let digits = 1;
  while (n >= 10) {
    n = Math.floor(n / 10);
    digits++;
  }
  return digits;
}

/** Encoded size of a batch of stored documents as a BSON array: `{"0": doc, "1": doc, ...}`. */
function rawArraySize(docs: readonly BatchDocument[]): number {
  let size = 5; // length and terminator
  for (let i = 0; i < docs.length; i++) size += 2 + digitsOf(i) + docs[i]!.length;
  return size;
}

/** Writes `docs` at `at` as a BSON array (its size `rawArraySize`), each document's bytes as stored. */
function writeRawArray(out: Buffer, at: number, docs: readonly BatchDocument[], size: number): void {
  out.writeInt32LE(size, at);
  at += 4;
  for (let i = 0; i < docs.length; i++) {
    out[at++] = 0x03;
    // The index as a decimal field name, written digit by digit (no string per document).
    const digits = digitsOf(i);
    for (let n = i, d = digits - 1; d >= 0; d--, n = Math.floor(n / 10)) out[at + d] = 0x30 + (n % 10);
    at += digits;
    out[at++] = 0;
    const doc = docs[i]!;
    if (doc instanceof StoredBytes) doc.copyTo(out, at);
    else out.set(doc, at);
    at += doc.length;
  }
  out[at] = 0;
}

/**
 * A reply's pieces before they are joined: encoded bytes, or a cursor batch written as an array
 * when the reply is joined (its documents are copied once, into the reply).
 */
type Piece = Buffer | { docs: readonly BatchDocument[]; size: number };

function encodeInto(pieces: Piece[], obj: Record<string, unknown> | unknown[]): number {
  const length = Buffer.allocUnsafe(4);
  pieces.push(length);
  let size = 4;
  const entries: [string, unknown][] = Array.isArray(obj) ? obj.map((v, i) => [String(i), v]) : Object.entries(obj);
  for (const [key, value] of entries) {
    if (value === undefined) continue;
    if (value instanceof RawDoc) {
      const head = elementHead(0x03, key);
      pieces.push(head, value.bytes);
      size += head.length + value.bytes.length;
    } else if (value instanceof RawDocArray) {
      const head = elementHead(0x04, key);
      const array = { docs: value.docs, size: rawArraySize(value.docs) };
      pieces.push(head, array);
      size += head.length + array.size;
    } else if (Array.isArray(value) && containsRaw(value)) {
      const head = elementHead(0x04, key);
      pieces.push(head);
      size += head.length + encodeInto(pieces, value);
    } else if (isPlainObject(value) && containsRaw(value)) {
      const head = elementHead(0x03, key);
      pieces.push(head);
      size += head.length + encodeInto(pieces, value);
    } else {
      const one = serialize({ [key]: value });
      const element = one.subarray(4, one.length - 1);
      pieces.push(element);
      size += element.length;
    }
  }
  pieces.push(Buffer.from([0]));
  size += 1;
  length.writeInt32LE(size, 0);
  return size;
}

/**
 * Encodes a reply document. `RawDoc`/`RawDocArray` values anywhere in plain objects or arrays are
 * embedded byte for byte; everything else is serialized normally. The reply is one allocation, and
 * a cursor batch's documents are copied straight into it (as mongod copies stored records into a
 * reply), with no buffer per document. `allocate` gives the reply's buffer (server.ts passes kept
 * ones for large replies: reply-buffers.ts).
 */
export function encodeDocument(obj: Record<string, unknown>, allocate: (size: number) => Buffer = Buffer.allocUnsafe): Buffer {
  if (!containsRaw(obj)) return serialize(obj);
  const pieces: Piece[] = [];
  const size = encodeInto(pieces, obj);
  const out = allocate(size);
  let at = 0;
  for (const piece of pieces) {
    if ('docs' in piece) {
      writeRawArray(out, at, piece.docs, piece.size);
      at += piece.size;
    } else {
      out.set(piece, at);
      at += piece.length;
    }
  }
  return out;
}

/**
 * Structural check of a raw document, as mongod does on every insert: lengths, terminators,
 * known element types, nesting. Throws InvalidBSON; allocates nothing. Returns whether a
 * top-level element is a Timestamp (an insert then looks for empty ones to fill: saves it a
 * second walk of every document without one).
 */
export function validateDocument(buf: Buffer, start = 0, end = buf.length, depth = 0): boolean {
  if (depth > 180) throw invalidBson('nesting too deep'); // mongod's BSONDepth::kDefaultMaxAllowableDepth
  if (end - start < 5) throw invalidBson('document too short');
  if (int32At(buf, start) !== end - start || buf[end - 1] !== 0) throw invalidBson('bad document length');
  let at = start + 4;
  const last = end - 1;
  let timestamp = false;
  while (at < last) {
    const type = buf[at]!;
    // Names are short: a loop beats a native indexOf call per element.
    let nameEnd = at + 1;
    while (nameEnd < last && buf[nameEnd] !== 0) nameEnd++;
    if (nameEnd >= last) throw invalidBson('unterminated field name');
    const valueAt = nameEnd + 1;
    let size: number;
    try {
      size = valueSize(buf, type, valueAt); // reads past the buffer throw RangeError
    } catch (e) {
      if (e instanceof ServerError) throw e;
      throw invalidBson('truncated element');
    }
    const next = valueAt + size;
    if (size < 0 || next > last) throw invalidBson('element extends past end of document');
    if (type === 0x03 || type === 0x04) validateDocument(buf, valueAt, next, depth + 1);
    else if (type === 0x02 || type === 0x0d || type === 0x0e) {
      if (size < 5 || buf[next - 1] !== 0) throw invalidBson('bad string');
    } else if (type === 0x08 && buf[valueAt]! > 1) throw invalidBson('bad boolean');
    else if (type === 0x11) timestamp = true;
    at = next;
  }
  if (at !== last) throw invalidBson('document not terminated at its length');
  return timestamp;
}

function invalidBson(why: string): ServerError {
  return new ServerError('InvalidBSON', `invalid BSON: ${why}`);
}

/** Little-endian int32 at `at` (the caller knows the 4 bytes are there). */
function int32At(buf: Buffer, at: number): number {
  return buf[at]! | (buf[at + 1]! << 8) | (buf[at + 2]! << 16) | (buf[at + 3]! << 24);
}
