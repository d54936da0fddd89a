/**
 * What Ferry reads of a cluster to report on it rather than to sync it: the source's oplog window
 * (first and last entry of `local.oplog.rs`, its size and maximum), and the destination's free
 * disk space (`dbStats`). Read-only; none of these is ever
 * awaited by a progress request (callers run them in the background).
 */
import type { Timestamp } from 'bson';
import type { MongoClient } from 'mongodb';

/** The source's oplog: its oldest and newest entries' times, bytes used and its maximum size. */
export interface OplogWindow {
  first: Timestamp;
  last: Timestamp;
  /** Bytes of entries held (collStats `size`). */
  size: number;
  /** Most bytes it may hold (collStats `maxSize`); 0 when unknown. */
  maxSize: number;
}

/**
 * Reads the oplog window of a replica set member (`local.oplog.rs`, as `rs.printReplicationInfo()`
 * does: the first and last entry in natural order, and `collStats`). Undefined when the cluster
 * has no oplog to read there (a mongos: each shard has its own).
 */
export async function readOplogWindow(client: MongoClient): Promise<OplogWindow | undefined> {
  const local = client.db('local');
  const oplog = local.collection<{ ts: Timestamp }>('oplog.rs');
  const projection = { _id: 0, ts: 1 };
  let first: { ts: Timestamp } | null;
  let last: { ts: Timestamp } | null;
  try {
    [first, last] = await Promise.all([
      oplog.findOne({}, { sort: { $natural: 1 }, projection }),
      oplog.findOne({}, { sort: { $natural: -1 }, projection }),
    ]);
  } catch {
    return undefined;
  }
  if (first === null || last === null || first.ts?._bsontype !== 'Timestamp' || last.ts?._bsontype !== 'Timestamp') return undefined;
  const stats = await local.command({ collStats: 'oplog.rs' });
  return { first: first.ts, last: last.ts, size: Number(stats.size ?? 0), maxSize: Number(stats.maxSize ?? 0) };
}

/**
 * Free bytes on the file system of a database (`dbStats` `fsTotalSize - fsUsedSize`, which mongod
 * reports for the volume holding its data files); undefined when the server does not say.
 */
export async function freeDiskBytes(client: MongoClient, db = 'admin'): Promise<number | undefined> {
  const stats = await client.db(db).command({ dbStats: 1 });
  const total = Number(stats.fsTotalSize);
  const used = Number(stats.fsUsedSize);
  if (!Number.isFinite(total) || !Number.isFinite(used) || total <= 0) return undefined;
  return Math.max(0, total - used);
}

/** What a collection takes: its documents' uncompressed size and its indexes (`collStats` `size`, `totalIndexSize`). */
export async function collectionFootprint(client: MongoClient, db: string, coll: string): Promise<number> {
  const stats = await client.db(db).command({ collStats: coll });
  return Number(stats.size ?? 0) + Number(stats.totalIndexSize ?? 0);
}
