/**
 * A document being edited: a tree over raw BSON that is expanded only along the paths an update
 * touches. A value nobody touches keeps its exact bytes (so its exact type and field order);
 * values an update supplies keep the bytes the client sent; computed values are encoded from
 * typed JS values (Int32/Double/Long kept distinct).
 */
import { BSON, Double, Int32, Long } from 'bson';
import { promoted, typed, valueSize } from '../../raw.js';

/** BSON element type bytes the update engine looks at. */
export const BsonType = {
  Double: 0x01,
  String: 0x02,
  Object: 0x03,
  Array: 0x04,
  Undefined: 0x06,
  Bool: 0x08,
  Date: 0x09,
  Null: 0x0a,
  Int32: 0x10,
  Timestamp: 0x11,
  Int64: 0x12,
  Decimal128: 0x13,
} as const;

const EMPTY_NAME_WRAPPER_OVERHEAD = 4 + 1 + 1 + 1; // length, type, '' name terminator, document terminator

/** Decodes one value given its element type and value bytes. */
function decodeValue(type: number, bytes: Buffer, options: BSON.DeserializeOptions): unknown {
  const wrapper = Buffer.allocUnsafe(bytes.length + EMPTY_NAME_WRAPPER_OVERHEAD);
  wrapper.writeInt32LE(wrapper.length, 0);
  wrapper[4] = type;
  wrapper[5] = 0;
  bytes.copy(wrapper, 6);
  wrapper[wrapper.length - 1] = 0;
  const doc = BSON.deserialize(wrapper, options);
  return doc[''];
}

/** A value held as raw bytes (the element's value part, without type and name). */
export class Leaf {
  private typedCache: unknown;
  private hasTyped = false;

  constructor(
    /** BSON element type byte. */
    readonly type: number,
    /** The value bytes (a view; never mutated). */
    readonly bytes: Buffer,
  ) {}

  /** Encodes a typed JS value (numbers keep their BSON wrapper types). */
  static of(value: unknown): Leaf {
    const doc = BSON.serialize({ '': value }, { ignoreUndefined: false });
    const buf = Buffer.isBuffer(doc) ? doc : Buffer.from(doc.buffer, doc.byteOffset, doc.byteLength);
    const leaf = new Leaf(buf[4], buf.subarray(6, buf.length - 1));
    if (typeof value !== 'object' && value !== undefined) {
      // Only immutable values are cached: a caller may still change an object it passed.
      leaf.typedCache = value;
      leaf.hasTyped = true;
    }
    return leaf;
  }

  static int32(n: number): Leaf {
    const bytes = Buffer.allocUnsafe(4);
    bytes.writeInt32LE(n, 0);
    return new Leaf(BsonType.Int32, bytes);
  }

  static null(): Leaf {
    return new Leaf(BsonType.Null, Buffer.alloc(0));
  }

  get isContainer(): boolean {
    return this.type === BsonType.Object || this.type === BsonType.Array;
  }

  /** The value as bson's typed JS value (Int32/Double/Long wrappers, BSONRegExp). */
  typed(): unknown {
    if (this.hasTyped) return this.typedCache;
    let value: unknown;
    switch (this.type) {
      case BsonType.Double:
        value = new Double(this.bytes.readDoubleLE(0));
        break;
      case BsonType.Int32:
        value = new Int32(this.bytes.readInt32LE(0));
        break;
      case BsonType.Int64:
        value = Long.fromBits(this.bytes.readInt32LE(0), this.bytes.readInt32LE(4));
        break;
      case BsonType.String:
        value = this.bytes.toString('utf8', 4, this.bytes.length - 1);
        break;
      case BsonType.Bool:
        value = this.bytes[0] === 1;
        break;
      case BsonType.Null:
        value = null;
        break;
      case BsonType.Object:
        value = BSON.deserialize(this.bytes, typed);
        break;
      case BsonType.Array:
        value = Object.values(BSON.deserialize(this.bytes, typed));
        break;
      default:
        value = decodeValue(this.type, this.bytes, typed);
    }
    this.typedCache = value;
    this.hasTyped = true;
    return value;
  }

  /** The value as plain JS (numbers promoted), for mingo. */
  promoted(): unknown {
    switch (this.type) {
      case BsonType.Double:
        return this.bytes.readDoubleLE(0);
      case BsonType.Int32:
        return this.bytes.readInt32LE(0);
      case BsonType.String:
      case BsonType.Bool:
      case BsonType.Null:
        return this.typed();
      case BsonType.Object:
        return BSON.deserialize(this.bytes, promoted);
      case BsonType.Array:
        return Object.values(BSON.deserialize(this.bytes, promoted));
      default:
        return decodeValue(this.type, this.bytes, promoted);
    }
  }
}

/** An object or array being edited. For arrays `names` is unused: positions are the names. */
export class DocNode {
  constructor(
    readonly isArray: boolean,
    readonly names: string[],
    readonly values: Slot[],
  ) {}

  static empty(isArray = false): DocNode {
    return new DocNode(isArray, [], []);
  }

  /** Splits a raw document (or array) into its top-level elements, each kept as raw bytes. */
  static parse(bytes: Buffer, isArray = false): DocNode {
    const names: string[] = [];
    const values: Slot[] = [];
    const end = bytes.readInt32LE(0) - 1;
    let at = 4;
    while (at < end) {
      const type = bytes[at];
      const nameEnd = bytes.indexOf(0, at + 1);
      const valueAt = nameEnd + 1;
      const next = valueAt + valueSize(bytes, type, valueAt);
      if (!isArray) names.push(bytes.toString('utf8', at + 1, nameEnd));
      values.push(new Leaf(type, bytes.subarray(valueAt, next)));
      at = next;
    }
    return new DocNode(isArray, names, values);
  }

  get length(): number {
    return this.values.length;
  }

  /** Position of a field (objects) or a valid index (arrays); -1 when absent. */
  indexOf(name: string): number {
    if (!this.isArray) return this.names.indexOf(name);
    const i = arrayIndex(name);
    return i !== undefined && i < this.values.length ? i : -1;
  }

  get(name: string): Slot | undefined {
    const i = this.indexOf(name);
    return i < 0 ? undefined : this.values[i];
  }

  nameAt(i: number): string {
    return this.isArray ? String(i) : this.names[i];
  }

  /** The child at `name` as a node, expanding its raw bytes in place; undefined if not a container. */
  child(name: string): DocNode | undefined {
    const i = this.indexOf(name);
    return i < 0 ? undefined : this.childAt(i);
  }

  childAt(i: number): DocNode | undefined {
    const slot = this.values[i];
    if (slot instanceof DocNode) return slot;
    if (!slot.isContainer) return undefined;
    const node = DocNode.parse(slot.bytes, slot.type === BsonType.Array);
    this.values[i] = node;
    return node;
  }

  /** Replaces a field's value, or appends the field (objects) / pads with nulls up to it (arrays). */
  set(name: string, value: Slot): void {
    if (this.isArray) {
      const index = arrayIndex(name)!;
      while (this.values.length < index) this.values.push(Leaf.null());
      this.values[index] = value;
      return;
    }
    const i = this.names.indexOf(name);
    if (i >= 0) this.values[i] = value;
    else {
      this.names.push(name);
      this.values.push(value);
    }
  }

  /** Removes a field (objects only). */
  remove(name: string): void {
    const i = this.names.indexOf(name);
    if (i >= 0) {
      this.names.splice(i, 1);
      this.values.splice(i, 1);
    }
  }

  /** Encodes the node back to BSON. */
  toBuffer(): Buffer {
    const parts: Buffer[] = [];
    const size = this.encodeInto(parts);
    return Buffer.concat(parts, size);
  }

  private encodeInto(parts: Buffer[]): number {
    const header = Buffer.allocUnsafe(4);
    parts.push(header);
    let size = 4;
    for (let i = 0; i < this.values.length; i++) {
      const slot = this.values[i];
      const name = this.isArray ? String(i) : this.names[i];
      const nameLength = Buffer.byteLength(name);
      const head = Buffer.allocUnsafe(nameLength + 2);
      head[0] = slotType(slot);
      head.write(name, 1, 'utf8');
      head[nameLength + 1] = 0;
      parts.push(head);
      size += head.length;
      if (slot instanceof DocNode) size += slot.encodeInto(parts);
      else {
        parts.push(slot.bytes);
        size += slot.bytes.length;
      }
    }
    parts.push(TERMINATOR);
    size += 1;
    header.writeInt32LE(size, 0);
    return size;
  }
}

const TERMINATOR = Buffer.from([0]);

export type Slot = Leaf | DocNode;

/** A non-negative decimal index ("0", "12"), as mongod's path support accepts it. */
export function arrayIndex(part: string): number | undefined {
  if (part.length === 0 || part.length > 15) return undefined;
  for (let i = 0; i < part.length; i++) {
    const c = part.charCodeAt(i);
    if (c < 48 || c > 57) return undefined;
  }
  return Number(part);
}

export function slotType(slot: Slot): number {
  return slot instanceof DocNode ? (slot.isArray ? BsonType.Array : BsonType.Object) : slot.type;
}

export function slotBytes(slot: Slot): Buffer {
  return slot instanceof DocNode ? slot.toBuffer() : slot.bytes;
}

/** As a Leaf (containers re-encoded). */
export function toLeaf(slot: Slot): Leaf {
  return slot instanceof DocNode ? new Leaf(slotType(slot), slot.toBuffer()) : slot;
}

export function typedOf(slot: Slot): unknown {
  return toLeaf(slot).typed();
}

export function promotedOf(slot: Slot): unknown {
  return toLeaf(slot).promoted();
}

/** mongod's binaryEqual: same type and same bytes. */
export function binaryEqual(a: Slot, b: Slot): boolean {
  return slotType(a) === slotType(b) && slotBytes(a).equals(slotBytes(b));
}

export function isNumericType(type: number): boolean {
  return type === BsonType.Double || type === BsonType.Int32 || type === BsonType.Int64 || type === BsonType.Decimal128;
}

const TYPE_NAMES: Record<number, string> = {
  0x01: 'double',
  0x02: 'string',
  0x03: 'object',
  0x04: 'array',
  0x05: 'binData',
  0x06: 'undefined',
  0x07: 'objectId',
  0x08: 'bool',
  0x09: 'date',
  0x0a: 'null',
  0x0b: 'regex',
  0x0c: 'dbPointer',
  0x0d: 'javascript',
  0x0e: 'symbol',
  0x0f: 'javascriptWithScope',
  0x10: 'int',
  0x11: 'timestamp',
  0x12: 'long',
  0x13: 'decimal',
  0xff: 'minKey',
  0x7f: 'maxKey',
};

/** mongod's name of a BSON type (`typeName`), as its messages print it. */
export function typeName(type: number): string {
  return TYPE_NAMES[type] ?? `type ${type}`;
}
