/**
 * Raw change-stream access for conformance suites: open with an `aggregate` command and read
 * with `getMore`, so that tests see events and postBatchResumeTokens exactly as the server sends
 * them (field order included), without the driver's own resume logic in between.
 */
import type { Db, Document, Timestamp } from 'mongodb';

export interface RawStream {
  db: Db;
  id: bigint | number | unknown;
  /** The getMore `collection` (the part of the cursor ns after the database). */
  collection: string;
  /** postBatchResumeToken of the latest batch. */
  pbrt: Document;
  firstBatch: Document[];
}

/** Opens `$changeStream` (`coll` undefined: a database or, on admin, a cluster stream). */
export async function openStream(
  db: Db,
  coll: string | undefined,
  options: Document = {},
  later: Document[] = [],
  cursor: Document = {},
): Promise<RawStream> {
  const reply = await db.command({ aggregate: coll ?? 1, pipeline: [{ $changeStream: options }, ...later], cursor });
  const ns = reply.cursor.ns as string;
  return {
    db,
    id: reply.cursor.id,
    collection: ns.slice(ns.indexOf('.') + 1),
    pbrt: reply.cursor.postBatchResumeToken,
    firstBatch: reply.cursor.firstBatch,
  };
}

/** One getMore; returns the batch (and updates `pbrt`). */
export async function getMore(stream: RawStream, maxTimeMS = 200, batchSize?: number): Promise<Document[]> {
  const reply = await stream.db.command({
    getMore: stream.id,
    collection: stream.collection,
    maxTimeMS,
    ...(batchSize ? { batchSize } : {}),
  });
  stream.pbrt = reply.cursor.postBatchResumeToken;
  stream.id = reply.cursor.id;
  return reply.cursor.nextBatch;
}

/** Reads until `count` events arrived (or 20 empty getMores passed). */
export async function readEvents(stream: RawStream, count: number): Promise<Document[]> {
  const events = [...stream.firstBatch];
  stream.firstBatch = [];
  for (let idle = 0; events.length < count && idle < 20;) {
    const batch = await getMore(stream);
    if (batch.length === 0) idle++;
    events.push(...batch);
  }
  return events;
}

export async function closeStream(stream: RawStream): Promise<void> {
  await stream.db.command({ killCursors: stream.collection, cursors: [stream.id] }).catch(() => {});
}

/** The cluster time of the latest write (a command reply's operationTime). */
export async function operationTime(db: Db): Promise<Timestamp> {
  return (await db.command({ ping: 1 })).operationTime as Timestamp;
}
