/**
 * The share of the initial copy one instance of several takes (one instance per source shard,
 * src/coordination/): the documents its shard owns, read on that shard directly.
 * - A sharded collection: each chunk `config.chunks` gives this shard is one partition, read
 *   through the shard-key index between the chunk's bounds (`hint` + `min`/`max`, hashed keys in
 *   hash space). Orphans, documents the shard still holds of ranges another shard owns, are
 *   outside every such range, so no document is copied twice.
 * - An unsharded collection: its database's primary shard holds it whole; that shard's instance
 *   plans it as a single instance would (`_id` ranges), the others copy nothing of it.
 */
import { MaxKey, MinKey, type Document } from 'bson';
import type { MongoClient } from 'mongodb';
import { isNamespaceNotFound } from '../cluster/errors.js';
import { chunksOf, type ShardedCollection } from '../cluster/sharding.js';
import { namespaceOf, type Namespace } from '../domain/namespaces.js';
import { packDocument, packValue } from '../meta/store.js';
import { planCollectionCopy, type CollectionCopyPlan, type NaturalOrderChoice } from './copy-plan.js';
import { readCollectionStats, type CollectionStats } from './partitions.js';

export interface ShardShareOptions {
  /** The source's router (config metadata). */
  router: MongoClient;
  /** This instance's shard, read directly. */
  shard: { id: string; client: MongoClient };
  /** The source's sharded collections by namespace. */
  sharded: ReadonlyMap<string, ShardedCollection>;
  /** Each database's primary shard. */
  primaries: ReadonlyMap<string, string>;
  partitionBytes: number;
  natural: NaturalOrderChoice;
}

const NOTHING: CollectionCopyPlan = { stats: { count: 0, size: 0 }, partitions: [] };

/** This shard's copy plan of one collection (see the module comment). */
export async function planShardShare(ns: Namespace, sourceOptions: Document, options: ShardShareOptions): Promise<CollectionCopyPlan> {
  const { router, shard, sharded, primaries } = options;
  const collection = shard.client.db(ns.db).collection(ns.coll);
  const entry = sharded.get(namespaceOf(ns));
  if (entry === undefined) {
    if (primaries.get(ns.db) !== shard.id) return NOTHING;
    return planCollectionCopy(collection, sourceOptions, options.partitionBytes, options.natural);
  }
  const chunks = (await chunksOf(router, entry)).filter((chunk) => chunk.shard === shard.id);
  if (chunks.length === 0) return NOTHING;
  const stats: CollectionStats = await readCollectionStats(collection).catch((error: unknown) => {
    if (isNamespaceNotFound(error)) return { count: 0, size: 0 };
    throw error;
  });
  const hint = entry.key as Document;
  return {
    stats,
    partitions: chunks.map((chunk) => ({
      order: 'natural' as const,
      min: packValue(new MinKey()),
      max: packValue(new MaxKey()),
      range: packDocument({ hint, min: chunk.min, max: chunk.max }),
      estimatedCount: Math.round(stats.count / chunks.length),
      estimatedBytes: Math.round(stats.size / chunks.length),
    })),
  };
}
