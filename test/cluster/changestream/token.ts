/**
 * Change-stream resume tokens: `{_data: <hex string>}`, opaque to clients but ordered like the
 * events they mark, as mongod's are. Like mongod's, the hex starts with `82` and the cluster time
 * (seconds and increment, big-endian), so tokens sort by time and a client may read the time off
 * one; what follows is this server's own encoding:
 *
 *   82 | t u32 | i u32 | F7 (format) | type (00 high-water mark, 80 event) | txnOpIndex u32 |
 *   fromInvalidate (00/01) | [collection UUID, 16 bytes, events on a collection only] |
 *   [document key, BSON, document events only]
 *
 * The document key (mongod's token carries it too, as its event identifier) tells apart events
 * of different shards that share a cluster time, so that a merged stream has one total order and
 * resumes exactly.
 *
 * A high-water mark ("nothing left before this time") sorts before every event at its time, so
 * resuming from one returns the events at that time and later.
 */
import { Timestamp, UUID } from 'bson';
import { ServerError } from '../errors.js';
import { compareTimestamps } from '../clock.js';

const TIME_TAG = 0x82;
const FORMAT = 0xf7;
const EVENT = 0x80;
const HIGH_WATER_MARK = 0x00;
/** Bytes of a token without a UUID. */
const BASE_LENGTH = 1 + 8 + 1 + 1 + 4 + 1;

export interface ResumeTokenData {
  clusterTime: Timestamp;
  /** A token marking an event, or a high-water mark (a point in time between events). */
  event: boolean;
  /** Position of the event inside its transaction (0 outside transactions). */
  txnOpIndex: number;
  /** The token of an `invalidate` event (a `startAfter` point, never a `resumeAfter` one). */
  fromInvalidate: boolean;
  /** The collection the event happened on, when it has one. */
  uuid?: UUID;
  /** The event's `documentKey` as BSON (insert, update, replace, delete events); needs `uuid`. */
  documentKey?: Buffer;
}

/** The `{_data}` document for a token. */
export function encodeToken(data: ResumeTokenData): { _data: string } {
  const key = data.uuid ? data.documentKey : undefined;
  const bytes = Buffer.alloc(BASE_LENGTH + (data.uuid ? 16 : 0) + (key?.length ?? 0));
  bytes[0] = TIME_TAG;
  bytes.writeUInt32BE(data.clusterTime.t, 1);
  bytes.writeUInt32BE(data.clusterTime.i, 5);
  bytes[9] = FORMAT;
  bytes[10] = data.event ? EVENT : HIGH_WATER_MARK;
  bytes.writeUInt32BE(data.txnOpIndex, 11);
  bytes[15] = data.fromInvalidate ? 1 : 0;
  if (data.uuid) bytes.set(data.uuid.buffer, BASE_LENGTH);
  if (key) key.copy(bytes, BASE_LENGTH + 16);
  return { _data: bytes.toString('hex').toUpperCase() };
}

/** A high-water-mark token: every event before `clusterTime` has been seen. */
export function highWaterMark(clusterTime: Timestamp): { _data: string } {
  return encodeToken({ clusterTime, event: false, txnOpIndex: 0, fromInvalidate: false });
}

/**
 * Parses a client's token with mongod's errors: 40647 for a missing or non-string `_data`,
 * FailedToParse for a non-hex string, 40649 for an empty one, InvalidResumeToken otherwise.
 */
export function decodeToken(token: unknown): ResumeTokenData {
  const data = (token as { _data?: unknown } | null)?._data;
  if (typeof token !== 'object' || token === null || typeof data !== 'string') {
    throw new ServerError(40647, `Bad resume token: _data of missing or of wrong type. Expected string, got ${JSON.stringify(token)}`);
  }
  if (!/^([0-9a-fA-F]{2})*$/.test(data)) throw new ServerError('FailedToParse', 'resume token string was not a valid hex string');
  if (data.length === 0) throw new ServerError(40649, 'invalid empty resume token');
  const bytes = Buffer.from(data, 'hex');
  const event = bytes[10] === EVENT;
  const keyAt = BASE_LENGTH + 16;
  const keyWellFormed = bytes.length <= keyAt || (bytes.length >= keyAt + 5 && bytes.readInt32LE(keyAt) === bytes.length - keyAt);
  const wellFormed =
    (bytes.length === BASE_LENGTH || bytes.length >= keyAt) &&
    keyWellFormed &&
    bytes[0] === TIME_TAG &&
    bytes[9] === FORMAT &&
    (event || bytes[10] === HIGH_WATER_MARK) &&
    bytes[15] <= 1 &&
    (event || bytes.length === BASE_LENGTH);
  if (!wellFormed) throw new ServerError('InvalidResumeToken', `Invalid resume token: not a token this server issued: ${data}`);
  return {
    clusterTime: new Timestamp({ t: bytes.readUInt32BE(1), i: bytes.readUInt32BE(5) }),
    event,
    txnOpIndex: bytes.readUInt32BE(11),
    fromInvalidate: bytes[15] === 1,
    uuid: bytes.length > BASE_LENGTH ? new UUID(bytes.subarray(BASE_LENGTH, keyAt)) : undefined,
    documentKey: bytes.length > keyAt ? bytes.subarray(keyAt) : undefined,
  };
}

/** Orders two tokens as their events are ordered (the UUID and document key do not take part). */
export function compareTokens(a: ResumeTokenData, b: ResumeTokenData): number {
  return (
    compareTimestamps(a.clusterTime, b.clusterTime) ||
    Number(a.event) - Number(b.event) ||
    a.txnOpIndex - b.txnOpIndex ||
    Number(a.fromInvalidate) - Number(b.fromInvalidate)
  );
}

/**
 * The total order of tokens across shards (a merged stream's order, mongos's): `compareTokens`,
 * then the collection UUID and the document key, byte by byte, as their hex strings sort.
 */
export function compareTokensTotal(a: ResumeTokenData, b: ResumeTokenData): number {
  return compareTokens(a, b) || compareBytes(a.uuid?.buffer, b.uuid?.buffer) || compareBytes(a.documentKey, b.documentKey);
}

function compareBytes(a: Uint8Array | undefined, b: Uint8Array | undefined): number {
  if (!a || !b) return Number(a !== undefined) - Number(b !== undefined);
  return Buffer.compare(a, b);
}
