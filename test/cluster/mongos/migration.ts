/**
 * Chunk splits and migrations, driven by the router (on a real cluster the config server and
 * the donor shard drive them; the steps and what each shard's oplog shows are the same):
 *  1. the collection's writes are held at the router (mongos waits out a donor's critical section);
 *  2. the donor copies the range's documents to the recipient, which creates the collection and
 *     its indexes if needed and inserts them as migration writes (`fromMigrate`) in a range it
 *     does not own yet (its reads leave them out);
 *  3. the config server's `config.chunks` records the new owner (major version + 1);
 *  4. the recipient now owns the range; the donor keeps its copies as orphans until its range
 *     deletion runs, `orphanCleanupDelaySecs` later (at once with `waitForDelete`), deleting them
 *     as migration writes too. A failure before step 3 deletes the recipient's copies.
 */
import { ObjectId, Timestamp } from 'bson';
import { ServerError } from '../errors.js';
import { shardingError } from '../sharding/errors.js';
import type { Chunk, RoutingTable } from '../sharding/routing-table.js';
import { type KeyTuple, compareTuples } from '../sharding/shard-key.js';
import type { Router } from './router.js';

function splitNs(ns: string): [string, string] {
  const dot = ns.indexOf('.');
  return [ns.slice(0, dot), ns.slice(dot + 1)];
}

function nextVersion(table: RoutingTable, major: boolean): Timestamp {
  const version = table.version();
  return major ? new Timestamp({ t: version.t + 1, i: 0 }) : new Timestamp({ t: version.t, i: version.i + 1 });
}

/** Splits the chunk holding `at` there (the router holds the collection). */
export async function splitChunk(router: Router, table: RoutingTable, at: KeyTuple): Promise<void> {
  const chunk = table.chunkOf(at);
  if (compareTuples(chunk.min, at) === 0) return; // already a boundary
  const pattern = table.pattern;
  const left = nextVersion(table, false);
  const right = new Timestamp({ t: left.t, i: left.i + 1 });
  await router.config.command('config', {
    update: 'chunks',
    updates: [{ q: { _id: chunk.id }, u: { $set: { max: pattern.documentOf(at), lastmod: left } } }],
  });
  const now = router.clock.tick();
  await router.config.command('config', {
    insert: 'chunks',
    documents: [
      {
        _id: new ObjectId(),
        uuid: table.info.uuid,
        min: pattern.documentOf(at),
        max: pattern.documentOf(chunk.max),
        shard: chunk.shard,
        lastmod: right,
        onCurrentShardSince: now,
        history: [{ validAfter: now, shard: chunk.shard }],
      },
    ],
  });
  await router.shard(chunk.shard).client.command('admin', { _flushRoutingTableCacheUpdates: table.ns });
  await router.refreshCollection(table.ns);
}

/** The chunk exactly [min, max), splitting the chunk holding `min` as needed. */
export async function chunkForRange(router: Router, ns: string, min: KeyTuple, max: KeyTuple | undefined): Promise<Chunk> {
  let table = router.tableOf(ns)!;
  const holder = table.chunkOf(min);
  const end = max ?? holder.max;
  if (compareTuples(end, holder.max) > 0 || compareTuples(end, min) <= 0) {
    throw new ServerError('InvalidOptions', 'The range to move must lie within one chunk (its max above its min)');
  }
  if (compareTuples(holder.min, min) !== 0) {
    await splitChunk(router, table, min);
    table = router.tableOf(ns)!;
  }
  if (compareTuples(end, table.chunkOf(min).max) !== 0) {
    await splitChunk(router, table, end);
    table = router.tableOf(ns)!;
  }
  return table.exactChunk(min, end)!;
}

/** Moves one chunk to `to`; the caller holds the collection (gates.exclusive). */
export async function moveChunk(router: Router, ns: string, chunk: Chunk, to: string, waitForDelete: boolean): Promise<void> {
  const recipient = router.shard(to);
  if (chunk.shard === to) return;
  const donor = router.shard(chunk.shard);
  const table = router.tableOf(ns)!;
  const [db, coll] = splitNs(ns);
  const bounds = { min: table.pattern.documentOf(chunk.min), max: table.pattern.documentOf(chunk.max) };
  const cloned = await donor.client.run(db, { _migrateCloneRange: coll, ...bounds, toHost: recipient.address, toShard: to });
  if (!cloned.ok) {
    await recipient.client.run(db, { _migrateRecvAbort: coll, ...bounds }).catch(() => undefined);
    throw cloned.error();
  }
  const now = router.clock.tick();
  await router.config.command('config', {
    update: 'chunks',
    updates: [
      {
        q: { _id: chunk.id },
        u: {
          $set: { shard: to, lastmod: nextVersion(table, true), onCurrentShardSince: now },
          $push: { history: { $each: [{ validAfter: now, shard: to }], $position: 0 } },
        },
      },
    ],
  });
  await recipient.client.command(db, { _migrateRecvCommit: coll, ...bounds });
  await donor.client.command(db, { _migrateDonorCommit: coll, ...bounds, waitForDelete });
  // The other shards learn the new version too (their routing tables stay current).
  const others = router.shardIds().filter((id) => id !== to && id !== chunk.shard);
  await Promise.all(others.map((id) => router.shard(id).client.command('admin', { _flushRoutingTableCacheUpdates: ns })));
  await router.refreshCollection(ns);
}

/** Checks that `to` names a shard. */
export function requireShard(router: Router, to: unknown): string {
  if (typeof to !== 'string') throw new ServerError('TypeMismatch', "BSON field 'to' is the wrong type, expected type 'string'");
  if (!router.shards.has(to)) throw shardingError('ShardNotFound', `Could not find shard ${to}`);
  return to;
}
