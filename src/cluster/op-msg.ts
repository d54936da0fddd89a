/**
 * OP_MSG messages as Ferry's own wire connection sends and reads them (src/cluster/wire-writes.ts):
 * a command (section kind 0) and, for an `insert`, its documents as one document sequence (kind 1)
 * of the bytes Ferry already holds, framed in the room the batcher left before them
 * (`FramedDocuments`). The message goes out as two buffers written together (vectored I/O): the
 * header with the command, and the section with the documents, never copied into one.
 *
 * MongoDB's wire protocol: a 16-byte header (messageLength, requestID, responseTo, opCode 2013),
 * int32 flagBits, then sections. No checksum is sent (flag bit 0 clear), none is asked for.
 */
import { deserialize, serialize, type Document } from 'bson';
import { MAX_BSON_OBJECT_BYTES, MAX_MESSAGE_BYTES } from '../domain/constants.js';

export const OP_MSG = 2013;
const HEADER_BYTES = 16;
/** Flag bit 0: the message ends with a CRC-32C checksum. */
const CHECKSUM_PRESENT = 1;
/** Flag bit 1: more messages follow without a reply (exhaust): never set by Ferry. */
const MORE_TO_COME = 2;

const SECTION_IDENTIFIER = Buffer.from('documents\0', 'latin1');

/** Bytes before the first document of a `documents` sequence: kind 1, int32 size, the identifier. */
export const DOCUMENTS_SECTION_HEADER_BYTES = 1 + 4 + SECTION_IDENTIFIER.length;

/** Limits the server announced in its `hello` (mongod's defaults when it did not). */
export interface WireLimits {
  maxBsonObjectSize: number;
  maxMessageSizeBytes: number;
}

export const DEFAULT_WIRE_LIMITS: WireLimits = Object.freeze({
  maxBsonObjectSize: MAX_BSON_OBJECT_BYTES,
  maxMessageSizeBytes: MAX_MESSAGE_BYTES,
});

/** A message too large for the server, or a document too large to be stored: nothing was sent. */
export class WireMessageTooLarge extends RangeError {
  override readonly name = 'WireMessageTooLarge';
}

/**
 * Documents back to back in `bytes`, with `DOCUMENTS_SECTION_HEADER_BYTES` of free room before
 * them in the same `buffer`, where the section header is written.
 */
export interface FramedDocuments {
  bytes: Uint8Array;
  buffer: Buffer;
  /**
   * The bytes share their buffer with documents still being sent (a slice of a read reply, see
   * src/copy/partition-copier.ts): the room before them is not free, so the section header goes
   * in a small buffer of its own (`documentsSections`).
   */
  shared?: boolean;
  /**
   * Whoever put the documents together already checked each one's length against the bytes and
   * the server's `maxBsonObjectSize` (the copy's batches, src/copy/batcher.ts): no second walk.
   */
  checked?: boolean;
}

/**
 * Writes the `documents` section header into the room before the documents and returns the
 * section (header and documents, a view: nothing copied). Checks every document's declared
 * length against the bytes and `limits.maxBsonObjectSize`, unless they come `checked`.
 */
export function documentsSection(documents: FramedDocuments, limits: WireLimits = DEFAULT_WIRE_LIMITS): Buffer {
  const room = documents.bytes.byteOffset - documents.buffer.byteOffset;
  if (documents.bytes.buffer !== documents.buffer.buffer || room < DOCUMENTS_SECTION_HEADER_BYTES) {
    throw new RangeError(`framed documents need ${DOCUMENTS_SECTION_HEADER_BYTES} bytes of room before them, they have ${room}`);
  }
  if (documents.checked !== true) checkDocuments(documents.bytes, limits);
  const start = room - DOCUMENTS_SECTION_HEADER_BYTES;
  const section = documents.buffer.subarray(start, room + documents.bytes.byteLength);
  section[0] = 1;
  section.writeInt32LE(section.length - 1, 1);
  SECTION_IDENTIFIER.copy(section, 5);
  return section;
}

/**
 * The `documents` section as the buffers to write: the section in place (`documentsSection`), or
 * for `shared` documents a header of its own followed by the documents (nothing copied either way).
 */
export function documentsSections(documents: FramedDocuments, limits: WireLimits = DEFAULT_WIRE_LIMITS): Buffer[] {
  if (documents.shared !== true) return [documentsSection(documents, limits)];
  if (documents.checked !== true) checkDocuments(documents.bytes, limits);
  const header = Buffer.allocUnsafe(DOCUMENTS_SECTION_HEADER_BYTES);
  header[0] = 1;
  header.writeInt32LE(DOCUMENTS_SECTION_HEADER_BYTES - 1 + documents.bytes.byteLength, 1);
  SECTION_IDENTIFIER.copy(header, 5);
  const { buffer, byteOffset, byteLength } = documents.bytes;
  return [header, Buffer.from(buffer, byteOffset, byteLength)];
}

/** Checks every document's declared length against the bytes and `limits.maxBsonObjectSize`. */
function checkDocuments(bytes: Uint8Array, limits: WireLimits): void {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  for (let at = 0; at < bytes.byteLength;) {
    const size = at + 4 <= view.byteLength ? view.getInt32(at, true) : -1;
    checkDocument(size, at, view.byteLength, limits.maxBsonObjectSize);
    at += size;
  }
}

/**
 * Throws unless a document declaring `size` bytes at byte `at` ends within `end` and is at most
 * `maxBsonObjectSize` bytes (WireMessageTooLarge: the server would refuse it).
 */
export function checkDocument(size: number, at: number, end: number, maxBsonObjectSize: number): void {
  if (size < 5 || at + size > end) throw new RangeError(`malformed document at byte ${at} of the batch`);
  if (size > maxBsonObjectSize) {
    throw new WireMessageTooLarge(`a document of ${size} bytes exceeds the server's maxBsonObjectSize ${maxBsonObjectSize}`);
  }
}

/**
 * The buffers of one OP_MSG request: `[header + flags + command section, ...sequences]`, to be
 * written together. Throws WireMessageTooLarge past `limits.maxMessageSizeBytes`.
 */
export function frameRequest(
  requestId: number,
  command: Document,
  sequences: readonly Buffer[],
  limits: WireLimits = DEFAULT_WIRE_LIMITS,
): Buffer[] {
  const body = serialize(command);
  const head = Buffer.allocUnsafe(HEADER_BYTES + 4 + 1 + body.length);
  const length = sequences.reduce((sum, section) => sum + section.length, head.length);
  if (length > limits.maxMessageSizeBytes) {
    throw new WireMessageTooLarge(`a message of ${length} bytes exceeds the server's maxMessageSizeBytes ${limits.maxMessageSizeBytes}`);
  }
  head.writeInt32LE(length, 0);
  head.writeInt32LE(requestId, 4);
  head.writeInt32LE(0, 8);
  head.writeInt32LE(OP_MSG, 12);
  head.writeUInt32LE(0, 16);
  head[20] = 0;
  head.set(body, 21);
  return [head, ...sequences];
}

/** One message as read from the wire (its header and body). */
export interface WireMessage {
  length: number;
  requestId: number;
  responseTo: number;
  opCode: number;
  flags: number;
  /** The kind-0 body. */
  body: Document;
  /** Kind-1 sequences by identifier, each document's bytes. */
  sequences: Map<string, Uint8Array[]>;
}

/** Parses one whole OP_MSG message (as a server or a test reads a request, or Ferry a reply). */
export function parseMessage(message: Uint8Array): WireMessage {
  const bytes = Buffer.from(message.buffer, message.byteOffset, message.byteLength);
  const length = bytes.readInt32LE(0);
  if (length !== bytes.length) throw new RangeError(`message length ${length} but ${bytes.length} bytes`);
  const opCode = bytes.readInt32LE(12);
  if (opCode !== OP_MSG) throw new RangeError(`expected OP_MSG (2013), got opCode ${opCode}`);
  const flags = bytes.readUInt32LE(16);
  if ((flags & MORE_TO_COME) !== 0) throw new RangeError('a reply with moreToCome: Ferry never asks for exhaust');
  const end = (flags & CHECKSUM_PRESENT) !== 0 ? length - 4 : length;
  let body: Document | undefined;
  const sequences = new Map<string, Uint8Array[]>();
  for (let at = 20; at < end;) {
    const kind = bytes[at];
    if (kind === 0) {
      const size = bytes.readInt32LE(at + 1);
      body = deserialize(bytes.subarray(at + 1, at + 1 + size));
      at += 1 + size;
    } else if (kind === 1) {
      const size = bytes.readInt32LE(at + 1);
      const sectionEnd = at + 1 + size;
      const nul = bytes.indexOf(0, at + 5);
      const identifier = bytes.toString('latin1', at + 5, nul);
      const documents: Uint8Array[] = [];
      for (let doc = nul + 1; doc < sectionEnd;) {
        const docSize = bytes.readInt32LE(doc);
        documents.push(bytes.subarray(doc, doc + docSize));
        doc += docSize;
      }
      sequences.set(identifier, documents);
      at = sectionEnd;
    } else {
      throw new RangeError(`unknown OP_MSG section kind ${kind}`);
    }
  }
  if (body === undefined) throw new RangeError('an OP_MSG without a body section');
  return { length, requestId: bytes.readInt32LE(4), responseTo: bytes.readInt32LE(8), opCode, flags, body, sequences };
}
