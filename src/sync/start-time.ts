/**
 * T0, the source time from which change events are applied, taken before anything is read: a
 * no-op oplog entry written with `appendOplogNote` (so that no write in flight is missed), whose
 * reply's `operationTime` is its time. Every write the copy could miss is at or after T0.
 */
import type { Timestamp } from 'bson';
import type { MongoClient } from 'mongodb';

export class StartTimeUnavailable extends Error {
  override readonly name = 'StartTimeUnavailable';
  readonly code = 'StartTimeUnavailable';
}

export async function captureStartTime(source: MongoClient, instance: string): Promise<Timestamp> {
  const reply = await source.db('admin').command({ appendOplogNote: 1, data: { ferry: 'sync start', instance } });
  const time = reply.operationTime as Timestamp | undefined;
  if (time?._bsontype !== 'Timestamp') {
    throw new StartTimeUnavailable(
      'the source did not report an operationTime for appendOplogNote; it must be a replica set or a sharded cluster',
    );
  }
  return time;
}
