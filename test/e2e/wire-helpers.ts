/**
 * What the end-to-end tests of Ferry's own wire connections share (copy-wire.test.ts for writes,
 * copy-wire-read.test.ts for reads): connection strings with a user, one partition copied in this
 * process, and the check that a copied collection is the source's, byte for byte and once each.
 */
import assert from 'node:assert/strict';
import type { MongoClient } from 'mongodb';
import type { CopyResources } from '../../src/copy/partition-copier.js';
import { SharedCounters, StopFlag } from '../../src/copy/shared-state.js';
import { HistogramSet } from '../../src/metrics/histograms.js';

/** `uri` with `user`'s credentials, authenticated on `admin`. */
export function withUser(uri: string, user: { user: string; password: string }): string {
  const url = new URL(uri);
  url.username = user.user;
  url.password = user.password;
  url.searchParams.set('authSource', 'admin');
  return url.toString();
}

/** Every document of a collection as raw bytes, in `_id` order. */
export async function rawDocuments(client: MongoClient, db: string, coll: string): Promise<Buffer[]> {
  return (await client
    .db(db)
    .collection(coll)
    .find({}, { sort: { _id: 1 }, raw: true })
    .toArray()) as unknown as Buffer[];
}

/** What `copyPartition` needs, for one partition copied in this process (checkpoints not kept). */
export function partitionResources(
  source: MongoClient,
  destination: MongoClient,
  stop = new StopFlag(),
): CopyResources & { histograms: HistogramSet } {
  return {
    source,
    destination,
    checkpoint: async () => {},
    histograms: new HistogramSet(),
    counters: new SharedCounters(),
    stop,
  };
}

/** The destination's `db.coll` holds the source's `count` documents, each once, byte for byte. */
export async function assertCopiedEqual(source: MongoClient, destination: MongoClient, db: string, coll: string, count: number) {
  assert.equal(await destination.db(db).collection(coll).countDocuments(), count);
  assert.deepEqual(await rawDocuments(destination, db, coll), await rawDocuments(source, db, coll));
}
