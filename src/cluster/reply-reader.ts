/**
 * Where the replies of an `_id`-range read come from (`readPath`, FERRY_COPY_READ_PATH): a copy
 * partition's (src/copy/partition-copier.ts) and a verified range's (src/verify/compare-range.ts).
 * - `driver`: the driver's `find`/`getMore` with raw replies (src/cluster/raw-cursor.ts);
 *   the driver allocates each socket chunk and the reply it assembles from them.
 * - `wire` (default where it can serve): Ferry's own connections to the source's primary (src/cluster/wire-reads.ts), each
 *   reply received into a buffer this reader lends and reuses. When the destination takes shared
 *   batches too (the `wire` write path), the buffers are the partition's batch buffers and the
 *   reply's documents are written from where they were received (partition-copier.ts), so a byte
 *   is copied in user space once at most (the in-place move over the array's element headers).
 *   Where Ferry's connections cannot serve the source (a mongos, another authentication
 *   mechanism, unknown TLS options), the driver reads.
 */
import type { MongoClient } from 'mongodb';
import type { Timestamp } from 'bson';
import { batchDocumentStarts, RawCursor, type RawFindOptions, type ReplyDocuments } from './raw-cursor.js';
import { wirePoolOf } from './wire-connection.js';
import { WireCursor } from './wire-reads.js';
import type { Namespace } from '../domain/namespaces.js';
import type { BatchBuffers } from './batch-buffers.js';

/** Where replies come from (see the module comment). */
export type ReadPath = 'driver' | 'wire';

/** One reply: its documents, and the buffer they were received in (lent, for the `wire` path). */
export interface ReadReply extends ReplyDocuments {
  /**
   * The buffer holding the reply (wire path only), to `share`/`release` with the reader's
   * BatchBuffers (a reply larger than theirs has one of its own, which they ignore).
   */
  owner?: Buffer;
  /** The reply's `operationTime`, when it has one (a replica set's member reports it). */
  operationTime?: Timestamp;
}

export interface ReplyReader {
  readonly path: ReadPath;
  /** The server said the cursor is exhausted: `next` has at most nothing more to give. */
  readonly exhausted: boolean;
  /** The next reply; undefined once the range is read. Its buffer is held until `done`. */
  next(): Promise<ReadReply | undefined>;
  /** The loop is done with a reply (its documents batched, or its slices handed to writes that hold it themselves). */
  done(reply: ReadReply): void;
  /** Kills the server cursor if still open. */
  close(): Promise<void>;
}

/** A reader of `ns` within `options`: the driver's raw cursor, or (`buffers`) a wire cursor receiving into them. */
export function openReplyReader(source: MongoClient, ns: Namespace, options: RawFindOptions, buffers?: BatchBuffers): ReplyReader {
  if (buffers === undefined) {
    const cursor = RawCursor.find(source, ns, options);
    return {
      path: 'driver',
      get exhausted() {
        return cursor.exhausted;
      },
      async next() {
        const reply = await cursor.nextReply();
        if (reply === undefined) return undefined;
        const read: ReadReply = {
          buffer: reply.cursor,
          starts: batchDocumentStarts(reply.cursor, reply.batch.valueOffset, reply.batch.valueEnd),
        };
        const time = reply.reply.operationTime as Timestamp | undefined;
        if (time?._bsontype === 'Timestamp') read.operationTime = time;
        return read;
      },
      done: () => undefined,
      close: () => cursor.close(),
    };
  }
  const cursor = WireCursor.find(wirePoolOf(source), ns, options);
  return {
    path: 'wire',
    get exhausted() {
      return cursor.exhausted;
    },
    async next() {
      const next = await cursor.nextLent(buffers);
      if (next === undefined) return undefined;
      // A reply that came in a buffer of its own holds itself (`release` ignores it).
      const read: ReadReply = { buffer: next.reply.buffer, starts: next.reply.starts, owner: next.lent ?? next.reply.message };
      if (next.reply.operationTime !== undefined) read.operationTime = next.reply.operationTime;
      return read;
    },
    done(reply) {
      if (reply.owner !== undefined) buffers.release(reply.owner);
    },
    close: () => cursor.close(),
  };
}
