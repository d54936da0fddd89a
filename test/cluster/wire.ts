/**
 * MongoDB wire protocol framing: OP_MSG (2013) requests and replies, and the legacy OP_QUERY
 * (2004) / OP_REPLY (1) pair that old handshakes use.
 * See https://www.mongodb.com/docs/manual/reference/mongodb-wire-protocol/
 */
import { BSON } from 'bson';
import { ServerError } from './errors.js';
import { findElement } from './raw.js';

export const OP_REPLY = 1;
export const OP_QUERY = 2004;
export const OP_COMPRESSED = 2012;
export const OP_MSG = 2013;

/** OP_MSG flag bits. Bits 0-15 are "required": a receiver must reject unknown ones. */
export const MsgFlag = {
  checksumPresent: 1 << 0,
  moreToCome: 1 << 1,
  exhaustAllowed: 1 << 16,
} as const;

const HEADER_SIZE = 16;
const KNOWN_REQUIRED_FLAGS = MsgFlag.checksumPresent | MsgFlag.moreToCome;

export interface MessageHeader {
  messageLength: number;
  requestID: number;
  responseTo: number;
  opCode: number;
}

/** A parsed OP_MSG request: the body, plus each kind-1 document sequence as raw documents. */
export interface MsgRequest {
  kind: 'msg';
  header: MessageHeader;
  flags: number;
  /** The body's raw bytes (kept so handlers can re-read fields raw). */
  bodyRaw: Buffer;
  /** Kind-1 sections: identifier → raw BSON documents (views into the message). */
  sequences: Map<string, Buffer[]>;
}

/** A parsed legacy OP_QUERY request (only handshakes are served this way). */
export interface QueryRequest {
  kind: 'query';
  header: MessageHeader;
  flags: number;
  fullCollectionName: string;
  queryRaw: Buffer;
}

export type WireRequest = MsgRequest | QueryRequest;

export function readHeader(buf: Buffer, offset = 0): MessageHeader {
  return {
    messageLength: buf.readInt32LE(offset),
    requestID: buf.readInt32LE(offset + 4),
    responseTo: buf.readInt32LE(offset + 8),
    opCode: buf.readInt32LE(offset + 12),
  };
}

function protocolError(message: string): ServerError {
  return new ServerError('ProtocolError', message);
}

/** Length of a BSON document starting at `offset`, checked against the bounds it must fit in. */
function bsonLengthAt(buf: Buffer, offset: number, end: number): number {
  if (offset + 5 > end) throw new ServerError('InvalidBSON', 'BSON document is truncated');
  const length = buf.readInt32LE(offset);
  if (length < 5 || offset + length > end || buf[offset + length - 1] !== 0) {
    throw new ServerError('InvalidBSON', `invalid BSON document length ${length}`);
  }
  return length;
}

function readCString(buf: Buffer, offset: number, end: number): [string, number] {
  const zero = buf.indexOf(0, offset);
  if (zero < 0 || zero >= end) throw protocolError('unterminated C string in message');
  return [buf.toString('utf8', offset, zero), zero + 1];
}

/** Parses one complete message (`buf` holds exactly `messageLength` bytes). */
export function parseMessage(buf: Buffer): WireRequest {
  const header = readHeader(buf);
  const end = header.messageLength;
  if (header.opCode === OP_MSG) {
    const flags = buf.readUInt32LE(HEADER_SIZE);
    if ((flags & 0xffff & ~KNOWN_REQUIRED_FLAGS) !== 0) {
      throw new ServerError('IllegalOpMsgFlag', `Message contains illegal flags value: Ob${flags.toString(2).padStart(32, '0')}`);
    }
    // The optional CRC-32C trailer is tolerated and not verified.
    const sectionsEnd = flags & MsgFlag.checksumPresent ? end - 4 : end;
    let offset = HEADER_SIZE + 4;
    let bodyRaw: Buffer | undefined;
    const sequences = new Map<string, Buffer[]>();
    while (offset < sectionsEnd) {
      const kind = buf[offset++];
      if (kind === 0) {
        if (bodyRaw) throw new ServerError(40430, 'Multiple body sections in message');
        const length = bsonLengthAt(buf, offset, sectionsEnd);
        bodyRaw = buf.subarray(offset, offset + length);
        offset += length;
      } else if (kind === 1) {
        // mongod accepts at most two document sequences (and closes the connection otherwise).
        if (sequences.size >= 2) throw new ServerError('TooManyDocumentSequences', 'Too many document sequences in OP_MSG');
        if (offset + 4 > sectionsEnd) throw protocolError('truncated document sequence');
        const size = buf.readInt32LE(offset);
        const seqEnd = offset + size;
        if (size < 5 || seqEnd > sectionsEnd) throw protocolError(`invalid document sequence size ${size}`);
        const [identifier, docsStart] = readCString(buf, offset + 4, seqEnd);
        if (sequences.has(identifier)) throw new ServerError(40431, `Duplicate document sequence: ${identifier}`);
        const docs: Buffer[] = [];
        let at = docsStart;
        while (at < seqEnd) {
          const length = bsonLengthAt(buf, at, seqEnd);
          docs.push(buf.subarray(at, at + length));
          at += length;
        }
        sequences.set(identifier, docs);
        offset = seqEnd;
      } else {
        throw new ServerError(40432, `Unknown section kind ${kind}`);
      }
    }
    if (!bodyRaw) throw new ServerError(40587, 'OP_MSG messages must have a body');
    for (const identifier of sequences.keys()) {
      if (findElement(bodyRaw, identifier)) {
        throw new ServerError(40433, `Duplicate field between body and document sequence ${identifier}`);
      }
    }
    return { kind: 'msg', header, flags, bodyRaw, sequences };
  }
  if (header.opCode === OP_QUERY) {
    const flags = buf.readInt32LE(HEADER_SIZE);
    const [fullCollectionName, afterName] = readCString(buf, HEADER_SIZE + 4, end);
    const queryStart = afterName + 8; // numberToSkip, numberToReturn
    const length = bsonLengthAt(buf, queryStart, end);
    return { kind: 'query', header, flags, fullCollectionName, queryRaw: buf.subarray(queryStart, queryStart + length) };
  }
  throw protocolError(`Unsupported opCode ${header.opCode}`);
}

function header(length: number, requestID: number, responseTo: number, opCode: number): Buffer {
  const h = Buffer.allocUnsafe(HEADER_SIZE);
  h.writeInt32LE(length, 0);
  h.writeInt32LE(requestID, 4);
  h.writeInt32LE(responseTo, 8);
  h.writeInt32LE(opCode, 12);
  return h;
}

/** Frames an OP_MSG reply around an already-encoded body; returns the buffers to write. */
export function encodeMsgReply(body: Buffer, requestID: number, responseTo: number, flags = 0): Buffer[] {
  const prefix = Buffer.allocUnsafe(5);
  prefix.writeUInt32LE(flags, 0);
  prefix[4] = 0; // section kind 0: body
  return [header(HEADER_SIZE + 5 + body.length, requestID, responseTo, OP_MSG), prefix, body];
}

/**
 * Whether a request opens an exhaust stream of `hello` replies, as mongod (4.4+) serves the
 * drivers' streaming server monitoring: an OP_MSG `hello` (or `isMaster`) with the
 * `exhaustAllowed` flag, `maxAwaitTimeMS` and `topologyVersion`. mongod then answers with
 * `moreToCome` set and keeps answering it on its own — each reply once the topology changes or
 * `maxAwaitTimeMS` passes — until a reply is an error or the connection closes. Without it the
 * driver's monitor ends each awaited check with "Server ended moreToCome unexpectedly", marks
 * the server unknown and clears the connection pool (failing operations in flight).
 * See the OP_MSG specification's `exhaustAllowed` and the Server Monitoring specification's
 * streaming protocol.
 */
export function opensHelloStream(request: MsgRequest): boolean {
  if ((request.flags & MsgFlag.exhaustAllowed) === 0) return false;
  const body = decodeBody(request.bodyRaw);
  const name = Object.keys(body)[0]?.toLowerCase();
  return (name === 'hello' || name === 'ismaster') && body.maxAwaitTimeMS !== undefined && body.topologyVersion !== undefined;
}

/**
 * Answers a request that opened a hello stream (`opensHelloStream`) until the stream ends: each
 * reply with `moreToCome` while it succeeds, `responseTo` naming the previous reply (mongod's
 * exhaust replies answer a request it makes up with the previous reply's id). `answer` runs the
 * request again (an awaitable hello returns after `maxAwaitTimeMS`); `send` frames and writes a
 * reply and returns the request id it used.
 */
export async function streamHelloReplies(
  first: Record<string, unknown>,
  answer: () => Promise<Record<string, unknown>>,
  send: (reply: Record<string, unknown>, flags: number) => void,
  isOpen: () => boolean,
): Promise<void> {
  for (let reply = first; isOpen(); reply = await answer()) {
    const more = reply.ok === 1;
    send(reply, more ? MsgFlag.moreToCome : 0);
    if (!more) return;
  }
}

/** Frames an OP_REPLY (answer to a legacy OP_QUERY handshake) with one document. */
export function encodeLegacyReply(body: Buffer, requestID: number, responseTo: number): Buffer[] {
  const fields = Buffer.alloc(20); // responseFlags, cursorID (8), startingFrom, numberReturned
  fields.writeInt32LE(1, 16);
  return [header(HEADER_SIZE + 20 + body.length, requestID, responseTo, OP_REPLY), fields, body];
}

/** Decodes a command body into JS values (numbers promoted), keeping nothing raw. */
export function decodeBody(raw: Buffer): Record<string, unknown> {
  try {
    return BSON.deserialize(raw, { validation: { utf8: false } }) as Record<string, unknown>;
  } catch (e) {
    throw new ServerError('InvalidBSON', `invalid BSON in command: ${(e as Error).message}`);
  }
}
