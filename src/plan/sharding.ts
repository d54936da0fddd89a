/**
 * Collections sharded on the destination (spec §2.3, §4.1 rules 4–9): which ones and with what
 * key, which index supports each key, and sharding one before its copy.
 *
 * - Which: with a replica set source, the start request's `sharding.shardingEntries` (others sync
 *   unsharded); with a sharded source and destination, every collection sharded on the source,
 *   with the same key; with a replica set destination, none.
 * - The supporting index (`DestinationSharding.supportingIndex`): the source's index supporting
 *   the key (simple collation where the collection has another) is built on the destination, in
 *   its temporary form, before the collection is sharded (a non-empty collection cannot be
 *   sharded without one, and the copy starts right after); where `buildIndexes` leaves it unbuilt
 *   (`never`, or a hashed one with the `excludeHashed` values) a placeholder on the key is built
 *   instead (rule 9: kept after commit only with `never`); where the source has none
 *   (`createSupportingIndexes`, rule 7) one on the key is created for good.
 * - Sharding one (`shardOnDestination`): the supporting index, `shardCollection` (with the simple
 *   collation where the collection has another, as mongod requires), then its chunks split where
 *   a sample of the source's keys says (split-points.ts) and spread over the shards in turn. Every
 *   step can run again after a crash: an index or a sharding that exists is a no-op, only
 *   missing split points are split, only chunks on another shard than planned are moved.
 */
import type { Document } from 'bson';
import type { MongoClient } from 'mongodb';
import { TYPE_FAITHFUL } from '../bson/index.js';
import { createIndexes } from '../cluster/commands.js';
import { isIndexOptionsConflict } from '../cluster/errors.js';
import { hasSimpleCollation, keyPatternOf, supportsShardKey, type ShardKeyPattern } from '../cluster/shard-key.js';
import {
  chunksOf,
  compareKeyDocuments,
  enableSharding,
  listShards,
  moveRange,
  shardCollection,
  shardedCollections,
  splitChunkAt,
  type ChunkRange,
  type ShardedCollection,
} from '../cluster/sharding.js';
import type { DestinationSharding, IndexPlan } from '../domain/catalog.js';
import { ID_INDEX_NAME } from '../domain/constants.js';
import { namespaceOf, type Namespace } from '../domain/namespaces.js';
import type { StartRequest } from '../domain/start-request.js';
import type { Logger } from '../log/logger.js';
import type { NamespaceRecord } from '../meta/namespaces.js';
import { chunksFor, planSplitPoints, sampleShardKeys } from './split-points.js';

/** The key a request's `shardingEntries` give a namespace, if listed. */
export function requestedShardKey(request: StartRequest, ns: Namespace): ShardKeyPattern | undefined {
  const entry = request.sharding?.shardingEntries.find((e) => e.database === ns.db && e.collection === ns.coll);
  return entry === undefined ? undefined : keyPatternOf(entry.shardCollection.key);
}

/**
 * The key a namespace is sharded with on the destination, if any (see the module comment):
 * `sourceSharded` is the source's sharded collections, given when both clusters are sharded.
 */
export function destinationShardKey(
  request: StartRequest,
  ns: Namespace,
  sourceSharded: ReadonlyMap<string, ShardedCollection> | undefined,
): ShardKeyPattern | undefined {
  return requestedShardKey(request, ns) ?? sourceSharded?.get(namespaceOf(ns))?.key;
}

/** mongod's default name of an index on `key` (`a_1_b_hashed`). */
export function defaultIndexName(key: ShardKeyPattern): string {
  return Object.entries(key)
    .map(([path, direction]) => `${path}_${direction}`)
    .join('_');
}

function hasNonSimpleCollation(collation: Document | undefined): boolean {
  return collation !== undefined && collation.locale !== 'simple';
}

/**
 * The index supporting `key` on the destination (see the module comment). `sourceIndexes` are the
 * source's `listIndexes`; `built` what `buildIndexes` builds of them (the namespace record's
 * indexes); `collation` the collection's default.
 */
export function planDestinationSharding(
  key: ShardKeyPattern,
  sourceIndexes: readonly Document[],
  built: readonly IndexPlan[],
  collation: Document | undefined,
): DestinationSharding {
  const nonSimple = hasNonSimpleCollation(collation);
  const supporters = sourceIndexes.filter((index) => supportsShardKey(index, key) && (!nonSimple || hasSimpleCollation(index)));
  // The shortest supporter: an index on the key itself before a compound one it prefixes.
  const supporter = [...supporters].sort((a, b) => Object.keys(a.key as Document).length - Object.keys(b.key as Document).length)[0];
  if (supporter !== undefined) {
    if (supporter.name === ID_INDEX_NAME)
      return { key, supportingIndex: { origin: 'source', spec: { key: { _id: 1 }, name: ID_INDEX_NAME } } };
    const plan = built.find((index) => index.name === supporter.name);
    if (plan !== undefined) return { key, supportingIndex: { origin: 'source', spec: plan.temporary } };
  }
  // A name no source index has, so the source's own indexes never collide with it.
  let name = defaultIndexName(key);
  if (sourceIndexes.some((index) => index.name === name)) name = `${name}_shardKey`;
  const spec: Document = { key: { ...key }, name, ...(nonSimple ? { collation: { locale: 'simple' } } : {}) };
  return { key, supportingIndex: { origin: supporter === undefined ? 'created' : 'placeholder', spec } };
}

/** Builds the supporting index; an equivalent index under another name (IndexOptionsConflict) supports the key as well. */
async function buildSupportingIndex(destination: MongoClient, ns: Namespace, spec: Document): Promise<void> {
  if (spec.name === ID_INDEX_NAME) return;
  try {
    await createIndexes(destination, ns, [spec]);
  } catch (error) {
    if (!isIndexOptionsConflict(error)) throw error;
  }
}

/** Whether every shard owns about its share of the chunks (between the floor and the ceiling of chunks / shards). */
function evenlySpread(chunks: readonly ChunkRange[], shards: readonly string[]): boolean {
  const owned = new Map(shards.map((shard) => [shard, 0]));
  for (const chunk of chunks) owned.set(chunk.shard, (owned.get(chunk.shard) ?? 0) + 1);
  const low = Math.floor(chunks.length / shards.length);
  const high = Math.ceil(chunks.length / shards.length);
  return [...owned.values()].every((count) => count >= low && count <= high);
}

/** What `layOutChunks` did, for the log. */
export interface ChunkLayout {
  chunks: number;
  shards: number;
  splits: number;
  moves: number;
}

/**
 * Splits a sharded destination collection where a sample of the source's keys says, and spreads
 * its chunks over the shards in turn (see split-points.ts), unless they are spread already.
 */
export async function layOutChunks(
  source: MongoClient,
  destination: MongoClient,
  ns: Namespace,
  key: ShardKeyPattern,
): Promise<ChunkLayout> {
  const shards = (await listShards(destination)).map((shard) => shard.id);
  const collection = (await shardedCollections(destination)).get(namespaceOf(ns));
  if (collection === undefined) throw new RangeError(`${namespaceOf(ns)} is not sharded on the destination`);
  const layout: ChunkLayout = { chunks: 0, shards: shards.length, splits: 0, moves: 0 };
  let chunks = await chunksOf(destination, collection);
  if (shards.length > 1) {
    const wanted = chunksFor(shards.length);
    const sample = await sampleShardKeys(source.db(ns.db).collection(ns.coll), key, wanted, TYPE_FAITHFUL);
    for (const point of planSplitPoints(key, wanted, sample)) {
      if (chunks.some((chunk) => compareKeyDocuments(chunk.min, point) === 0)) continue;
      await splitChunkAt(destination, ns, point);
      layout.splits++;
    }
    if (layout.splits > 0) chunks = await chunksOf(destination, collection);
    if (!evenlySpread(chunks, shards)) {
      for (const [i, chunk] of chunks.entries()) {
        const target = shards[i % shards.length]!;
        if (chunk.shard === target) continue;
        await moveRange(destination, ns, chunk, target);
        layout.moves++;
      }
    }
  }
  layout.chunks = chunks.length;
  return layout;
}

/**
 * Shards `record`'s collection on the destination as its `sharding` says, then lays out its
 * chunks (see the module comment). The collection exists on the destination, still empty.
 */
export async function shardOnDestination(
  source: MongoClient,
  destination: MongoClient,
  record: NamespaceRecord,
  logger: Logger,
): Promise<void> {
  const sharding = record.sharding;
  if (sharding === undefined) return;
  const ns = { db: record.db, coll: record.coll };
  await enableSharding(destination, ns.db);
  await buildSupportingIndex(destination, ns, sharding.supportingIndex.spec);
  const collation = record.sourceOptions.collation as Document | undefined;
  await shardCollection(destination, ns, sharding.key, hasNonSimpleCollation(collation) ? { collation: { locale: 'simple' } } : {});
  const layout = await layOutChunks(source, destination, ns, sharding.key);
  logger.info(
    { ns: namespaceOf(ns), key: sharding.key, supportingIndex: sharding.supportingIndex.origin, ...layout },
    `${namespaceOf(ns)} sharded on the destination: ${layout.chunks} chunk(s) over ${layout.shards} shard(s)`,
  );
}
