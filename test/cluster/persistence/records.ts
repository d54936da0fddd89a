/**
 * The record format of a data directory's files (checkpoint and journal): a sequence of
 *
 *   length u32 LE (of the payload) | type u8 | CRC-32 u32 LE (of type and payload) | payload
 *
 * A reader stops at the first record that is cut short or whose checksum does not match: the end
 * of what was written before the process (or the machine) stopped.
 */
import { closeSync, fstatSync, openSync, readSync } from 'node:fs';
import { crc32 } from 'node:zlib';

/** What a record holds (its payload layout is in codec.ts). */
export const RecordType = {
  /** Checkpoint header: BSON `{format, version, generation, clusterTime, truncatedThrough?}`. */
  header: 0x48, // 'H'
  /** A namespace's definition: BSON `{key, meta}`. */
  namespace: 0x4d, // 'M'
  /** A namespace dropped: BSON `{key}`. */
  namespaceRemoved: 0x52, // 'R'
  /** A document stored: collection UUID (16 bytes) + the document. */
  documentPut: 0x50, // 'P'
  /** A document removed: collection UUID (16 bytes) + `{_id}`. */
  documentDelete: 0x44, // 'D'
  /** An oplog entry: its fields as BSON, then its raw documents. */
  oplogEntry: 0x4f, // 'O'
  /** An insert's oplog entry that is also the put of its document (`o`) into its collection (`ui`). */
  oplogInsert: 0x49, // 'I'
} as const;

export type RecordTypeCode = (typeof RecordType)[keyof typeof RecordType];

export const RECORD_HEADER_BYTES = 9;

/** A record's bytes: its header, then the payload's parts (written as they are, not copied). */
export function encodeRecord(type: RecordTypeCode, parts: readonly Buffer[]): Buffer[] {
  let length = 0;
  for (const part of parts) length += part.length;
  const head = Buffer.allocUnsafe(RECORD_HEADER_BYTES);
  head.writeUInt32LE(length, 0);
  head[4] = type;
  let crc = crc32(head.subarray(4, 5));
  for (const part of parts) crc = crc32(part, crc);
  head.writeUInt32LE(crc, 5);
  return [head, ...parts];
}

export interface StoredRecord {
  type: number;
  /** A view of the reader's buffer: copy what must outlive the next record. */
  payload: Buffer;
}

/** Bytes read from the file at a time. */
const CHUNK_BYTES = 8 * 1024 * 1024;

/**
 * Reads a file's records in order. `validBytes` is, once iteration ends, the length of the
 * intact prefix (a torn tail after it is to be cut off before appending).
 */
export class RecordReader {
  validBytes = 0;

  constructor(private readonly path: string) {}

  *records(): Generator<StoredRecord> {
    const fd = openSync(this.path, 'r');
    try {
      const size = fstatSync(fd).size;
      let buffer = Buffer.alloc(0);
      let offset = 0; // file offset of buffer[0]
      let filled = 0; // bytes of the file read so far
      let at = 0; // position in buffer
      const ensure = (bytes: number): boolean => {
        if (buffer.length - at >= bytes) return true;
        if (filled + (bytes - (buffer.length - at)) > size) return false;
        const want = Math.max(bytes, CHUNK_BYTES);
        const next = Buffer.allocUnsafe(Math.min(want, buffer.length - at + (size - filled)));
        buffer.copy(next, 0, at);
        let kept = buffer.length - at;
        while (kept < next.length) {
          const n = readSync(fd, next, kept, next.length - kept, filled);
          if (n === 0) break;
          kept += n;
          filled += n;
        }
        offset += at;
        buffer = next.subarray(0, kept);
        at = 0;
        return buffer.length >= bytes;
      };
      for (;;) {
        if (!ensure(RECORD_HEADER_BYTES)) return;
        const length = buffer.readUInt32LE(at);
        const type = buffer[at + 4];
        const crc = buffer.readUInt32LE(at + 5);
        if (!ensure(RECORD_HEADER_BYTES + length)) return;
        const payload = buffer.subarray(at + RECORD_HEADER_BYTES, at + RECORD_HEADER_BYTES + length);
        if (crc32(payload, crc32(buffer.subarray(at + 4, at + 5))) !== crc) return;
        at += RECORD_HEADER_BYTES + length;
        this.validBytes = offset + at;
        yield { type, payload };
      }
    } finally {
      closeSync(fd);
    }
  }
}
