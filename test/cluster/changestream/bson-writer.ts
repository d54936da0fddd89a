/**
 * A small BSON document writer for change events: the fields every event has (strings, times,
 * small documents) are written directly, and stored documents are spliced in as raw bytes, so an
 * insert event costs one buffer copy of its document and no serialization of it.
 */
import { BSON, type Long, type Timestamp } from 'bson';

export class BsonWriter {
  private buf: Buffer;
  private pos = 0;
  /** Offsets of the length prefixes of the documents being written. */
  private readonly open: number[] = [];

  constructor(capacity = 256) {
    this.buf = Buffer.allocUnsafe(capacity);
  }

  private ensure(bytes: number): void {
    if (this.pos + bytes <= this.buf.length) return;
    let size = this.buf.length * 2;
    while (size < this.pos + bytes) size *= 2;
    const grown = Buffer.allocUnsafe(size);
    this.buf.copy(grown, 0, 0, this.pos);
    this.buf = grown;
  }

  private head(type: number, name: string): void {
    const length = Buffer.byteLength(name);
    this.ensure(length + 2);
    this.buf[this.pos++] = type;
    this.pos += this.buf.write(name, this.pos, 'utf8');
    this.buf[this.pos++] = 0;
  }

  /** Opens a document: the top-level one (no name) or an embedded one. */
  startDocument(name?: string): this {
    if (name !== undefined) this.head(0x03, name);
    this.ensure(4);
    this.open.push(this.pos);
    this.pos += 4;
    return this;
  }

  startArray(name: string): this {
    this.head(0x04, name);
    this.ensure(4);
    this.open.push(this.pos);
    this.pos += 4;
    return this;
  }

  /** Closes the innermost open document or array. */
  end(): this {
    this.ensure(1);
    this.buf[this.pos++] = 0;
    const start = this.open.pop()!;
    this.buf.writeInt32LE(this.pos - start, start);
    return this;
  }

  string(name: string, value: string): this {
    this.head(0x02, name);
    const length = Buffer.byteLength(value);
    this.ensure(length + 5);
    this.buf.writeInt32LE(length + 1, this.pos);
    this.pos += 4;
    this.pos += this.buf.write(value, this.pos, 'utf8');
    this.buf[this.pos++] = 0;
    return this;
  }

  timestamp(name: string, value: Timestamp): this {
    this.head(0x11, name);
    this.ensure(8);
    this.buf.writeUInt32LE(value.i, this.pos);
    this.buf.writeUInt32LE(value.t, this.pos + 4);
    this.pos += 8;
    return this;
  }

  date(name: string, value: Date): this {
    this.head(0x09, name);
    this.ensure(8);
    this.buf.writeBigInt64LE(BigInt(value.getTime()), this.pos);
    this.pos += 8;
    return this;
  }

  long(name: string, value: Long): this {
    this.head(0x12, name);
    this.ensure(8);
    this.buf.writeInt32LE(value.low, this.pos);
    this.buf.writeInt32LE(value.high, this.pos + 4);
    this.pos += 8;
    return this;
  }

  int32(name: string, value: number): this {
    this.head(0x10, name);
    this.ensure(4);
    this.buf.writeInt32LE(value, this.pos);
    this.pos += 4;
    return this;
  }

  boolean(name: string, value: boolean): this {
    this.head(0x08, name);
    this.ensure(1);
    this.buf[this.pos++] = value ? 1 : 0;
    return this;
  }

  binary(name: string, subtype: number, bytes: Uint8Array): this {
    this.head(0x05, name);
    this.ensure(5 + bytes.length);
    this.buf.writeInt32LE(bytes.length, this.pos);
    this.buf[this.pos + 4] = subtype;
    this.buf.set(bytes, this.pos + 5);
    this.pos += 5 + bytes.length;
    return this;
  }

  null(name: string): this {
    this.head(0x0a, name);
    return this;
  }

  /** An embedded document given as its BSON bytes. */
  rawDocument(name: string, bytes: Buffer): this {
    this.head(0x03, name);
    this.ensure(bytes.length);
    this.pos += bytes.copy(this.buf, this.pos);
    return this;
  }

  /** One element already encoded (type byte, name, value), e.g. copied out of a stored document. */
  rawElement(bytes: Buffer): this {
    this.ensure(bytes.length);
    this.pos += bytes.copy(this.buf, this.pos);
    return this;
  }

  /** Any other value, serialized by the bson library. */
  value(name: string, value: unknown): this {
    if (value === undefined) return this;
    const one = BSON.serialize({ [name]: value }, { ignoreUndefined: true });
    return this.rawElement(Buffer.from(one.buffer, one.byteOffset + 4, one.byteLength - 5));
  }

  /** The finished top-level document (a view of the buffer: events are short-lived). */
  finish(): Buffer {
    return this.buf.subarray(0, this.pos);
  }
}
