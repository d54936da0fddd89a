/**
 * Resume tokens. mongod's `_data` is a hex KeyString whose first value is the event's cluster
 * time (type byte 0x82, then the seconds and the increment as big-endian 32-bit integers); the
 * rest is opaque. Reading that time lets Ferry say how far application has come from a
 * `postBatchResumeToken` alone, which advances even when no event passes the filter.
 */
import { BSON, Timestamp, type Document } from 'bson';

/** KeyString type byte of a Timestamp. */
const TIMESTAMP_TYPE = 0x82;

/** The cluster time at the front of a resume token, or undefined when it is not in that form. */
export function tokenTime(token: Document | undefined): Timestamp | undefined {
  const data = token?._data;
  if (typeof data !== 'string' || data.length < 18 || !/^[0-9a-fA-F]+$/.test(data.slice(0, 18))) return undefined;
  if (Number.parseInt(data.slice(0, 2), 16) !== TIMESTAMP_TYPE) return undefined;
  const t = Number.parseInt(data.slice(2, 10), 16);
  const i = Number.parseInt(data.slice(10, 18), 16);
  return new Timestamp({ t, i });
}

/**
 * Whether two resume tokens are the same point of a stream. An idle stream's replies repeat their
 * `postBatchResumeToken` (mongod moves it only when the oplog moves), so a position recorded
 * again would be a write that changes nothing.
 */
export function sameResumeToken(a: Document | undefined, b: Document | undefined): boolean {
  if (a === undefined || b === undefined) return a === b;
  return Buffer.from(BSON.serialize(a)).equals(BSON.serialize(b));
}
