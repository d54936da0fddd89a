/**
 * Building small BSON documents out of raw pieces without deserializing them: the write
 * statements of change-event application (`{q: {_id}, u: <document>, upsert: true}`) are made of
 * an `_id` element and a full document taken byte for byte from the event, so every BSON type the
 * source holds (even those with no JavaScript value) reaches the destination unchanged.
 */
import { BsonType } from '../bson/index.js';
import { encodeFieldName } from '../bson/scan.js';

/** A document being assembled; `finish()` returns its bytes. */
export class RawDocumentBuilder {
  #chunks: Uint8Array[] = [];
  #size = 4 + 1; // length prefix and terminating zero

  #push(bytes: Uint8Array): this {
    this.#chunks.push(bytes);
    this.#size += bytes.length;
    return this;
  }

  #header(type: number, name: string): this {
    const encoded = encodeFieldName(name);
    const header = new Uint8Array(encoded.length + 2);
    header[0] = type;
    header.set(encoded, 1);
    return this.#push(header);
  }

  /** A whole element (type byte, name and value) copied from another document. */
  element(bytes: Uint8Array): this {
    return this.#push(bytes);
  }

  /** An embedded document given as its bytes. */
  document(name: string, bytes: Uint8Array): this {
    return this.#header(BsonType.document, name).#push(bytes);
  }

  /** An array of documents, each given as its bytes. */
  documentArray(name: string, documents: readonly Uint8Array[]): this {
    const array = new RawDocumentBuilder();
    documents.forEach((doc, i) => array.document(String(i), doc));
    return this.#header(BsonType.array, name).#push(array.finish());
  }

  /** A value of any type given as its type byte and value bytes (taken from another document). */
  value(name: string, type: number, bytes: Uint8Array): this {
    return this.#header(type, name).#push(bytes);
  }

  boolean(name: string, value: boolean): this {
    return this.#header(BsonType.boolean, name).#push(Uint8Array.of(value ? 1 : 0));
  }

  int32(name: string, value: number): this {
    const bytes = new Uint8Array(4);
    new DataView(bytes.buffer).setInt32(0, value, true);
    return this.#header(BsonType.int32, name).#push(bytes);
  }

  string(name: string, value: string): this {
    const text = Buffer.from(value, 'utf8');
    const bytes = new Uint8Array(4 + text.length + 1);
    new DataView(bytes.buffer).setInt32(0, text.length + 1, true);
    bytes.set(text, 4);
    return this.#header(BsonType.string, name).#push(bytes);
  }

  /** The size `finish()` will return. */
  get size(): number {
    return this.#size;
  }

  /** The document's bytes, written into `target` at `offset` when given (else a new buffer). */
  finish(target?: Uint8Array, offset = 0): Uint8Array {
    const out = target ?? new Uint8Array(this.#size);
    const start = target === undefined ? 0 : offset;
    new DataView(out.buffer, out.byteOffset + start, 4).setInt32(0, this.#size, true);
    let p = start + 4;
    for (const chunk of this.#chunks) {
      out.set(chunk, p);
      p += chunk.length;
    }
    out[p] = 0;
    return target === undefined ? out : out.subarray(start, start + this.#size);
  }
}

/** Concatenates documents into one buffer that owns its memory (safe to transfer between threads). */
export function concatDocuments(documents: readonly Uint8Array[]): Uint8Array {
  const out = new Uint8Array(documents.reduce((sum, doc) => sum + doc.length, 0));
  let p = 0;
  for (const doc of documents) {
    out.set(doc, p);
    p += doc.length;
  }
  return out;
}
