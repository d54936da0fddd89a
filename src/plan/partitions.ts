/**
 * Splitting a collection into `_id` ranges that copy workers take one at a time.
 *
 * Ranges follow the `_id` index's own order, which is MongoDB's canonical cross-type order
 * (`compareBsonValues`): a collection whose `_id`s mix numbers, strings, ObjectIds and documents is
 * covered exactly once, from MinKey to MaxKey. Workers read a range with the `find` options
 * `min`/`max` and `hint: {_id: 1}` (see `partitionFindOptions`): index bounds, unlike `$gte`/`$lt`
 * filters, are not bracketed by type, so one range can span several types.
 *
 * The plan is a pure function of collection statistics and a sample of `_id`s (see
 * `sampleIds`), so it is easy to test and to persist: boundaries are the sample's quantiles, so
 * skewed `_id` distributions still give ranges of similar document counts.
 */
import { MaxKey, MinKey, type Document } from 'bson';
import type { Collection as DriverCollection } from 'mongodb';
import { canonicalRank, compareBsonValues, readId } from '../bson/index.js';
import { aggregateRaw } from '../cluster/raw-cursor.js';
import { InvalidPartitionRequest } from '../errors/errors.js';

/** What the planner needs to know about a collection (from `$collStats` / `collStats`). */
export interface CollectionStats {
  /** Number of documents. */
  count: number;
  /** Total uncompressed size of the documents, in bytes (collStats `size`). */
  size: number;
  /** Whether the collection is capped: it is then copied whole, in natural (insertion) order. Default false. */
  capped?: boolean;
  /**
   * Whether the collection's default collation is not the simple one. Its `_id` index then orders
   * strings by that collation, which this planner cannot reproduce, so no boundary containing a
   * string is used (types still order canonically, so the ranges stay exact). Default false.
   */
  nonSimpleCollation?: boolean;
}

/**
 * One `_id` range: from `min` (inclusive) to `max` (exclusive). The first range starts at MinKey;
 * the last ends at MaxKey, which a reader treats as unbounded so that a document whose `_id` is
 * MaxKey itself is not missed. Each range's `max` is the next range's `min`.
 */
export interface IdPartition {
  min: unknown;
  max: unknown;
  /** Estimated documents in the range: the collection's count spread by the sample. */
  estimatedCount: number;
  /** Estimated bytes in the range, likewise. */
  estimatedBytes: number;
}

/** How to copy one collection. */
export interface PartitionPlan {
  /** `'id'`: ranges of the `_id` index; `'natural'`: one range read in natural order (capped collections). */
  order: 'id' | 'natural';
  /** At least one range; together they cover (MinKey, MaxKey) exactly once. */
  partitions: IdPartition[];
}

/** How to size partitions. */
export interface PartitionOptions {
  /** Target size of one partition, in bytes. Required, positive. */
  partitionBytes: number;
}

const MIN_KEY = new MinKey();
const MAX_KEY = new MaxKey();

function isMinKey(value: unknown): boolean {
  return (value as { _bsontype?: string } | null)?._bsontype === 'MinKey';
}

function isMaxKey(value: unknown): boolean {
  return (value as { _bsontype?: string } | null)?._bsontype === 'MaxKey';
}

function checkStats(stats: CollectionStats, options: PartitionOptions): void {
  for (const [name, value] of [
    ['count', stats.count],
    ['size', stats.size],
  ] as const) {
    if (!Number.isFinite(value) || value < 0) {
      throw new InvalidPartitionRequest(`collection ${name} must be a non-negative number, got ${value}`);
    }
  }
  if (!Number.isFinite(options.partitionBytes) || options.partitionBytes <= 0) {
    throw new InvalidPartitionRequest(`partitionBytes must be positive, got ${options.partitionBytes}`);
  }
}

/**
 * How many partitions a collection should be cut into: its size over the target, at least one,
 * never more than it has documents. Capped collections are always one.
 */
export function wantedPartitions(stats: CollectionStats, options: PartitionOptions): number {
  checkStats(stats, options);
  if (stats.capped || stats.count <= 1) return 1;
  return Math.max(1, Math.min(stats.count, Math.ceil(stats.size / options.partitionBytes)));
}

/** Whether a value holds a string anywhere (strings order by collation in a non-simple index). */
function holdsString(value: unknown): boolean {
  const rank = canonicalRank(value);
  if (rank === canonicalRank('')) return true;
  if (rank === canonicalRank({}) || rank === canonicalRank([])) {
    // A document decoded in stored order may be a Map (see decode.ts).
    return (value instanceof Map ? [...value.values()] : Object.values(value as object)).some(holdsString);
  }
  return false;
}

function wholeCollection(order: PartitionPlan['order'], stats: CollectionStats): PartitionPlan {
  return {
    order,
    partitions: [{ min: MIN_KEY, max: MAX_KEY, estimatedCount: stats.count, estimatedBytes: stats.size }],
  };
}

/**
 * Plans the partitions of one collection from its statistics and a sample of its `_id`s
 * (unsorted, duplicates and mixed types allowed; MinKey/MaxKey samples are ignored).
 *
 * Boundaries are taken at the sample's quantiles, never at its smallest value (so the first range
 * holds a sampled document) and strictly increasing (so duplicates never make an empty or
 * overlapping range). Small collections, and samples too small to split, give one range.
 */
export function planPartitions(stats: CollectionStats, sampledIds: readonly unknown[], options: PartitionOptions): PartitionPlan {
  const wanted = wantedPartitions(stats, options);
  if (stats.capped) return wholeCollection('natural', stats);
  const usable = sampledIds.filter((id) => !isMinKey(id) && !isMaxKey(id) && !(stats.nonSimpleCollation && holdsString(id)));
  if (wanted <= 1 || usable.length < 2) return wholeCollection('id', stats);

  const sorted = [...usable].sort(compareBsonValues);
  // Boundary i sits at quantile i/wanted; index 0 is skipped (see above).
  const boundaries: { value: unknown; index: number }[] = [];
  for (let i = 1; i < wanted; i++) {
    const index = Math.max(1, Math.floor((i * sorted.length) / wanted));
    const value = sorted[index];
    const previous = boundaries.at(-1);
    if (previous === undefined ? compareBsonValues(value, sorted[0]) > 0 : compareBsonValues(value, previous.value) > 0) {
      // Start the range at the first sample equal to this value, for the estimates below.
      let first = index;
      while (first > 0 && compareBsonValues(sorted[first - 1], value) === 0) first--;
      boundaries.push({ value, index: first });
    }
  }
  if (boundaries.length === 0) return wholeCollection('id', stats);

  const starts = [0, ...boundaries.map((b) => b.index), sorted.length];
  const bounds = [MIN_KEY, ...boundaries.map((b) => b.value), MAX_KEY];
  const partitions: IdPartition[] = [];
  for (let i = 0; i + 1 < bounds.length; i++) {
    const share = (starts[i + 1]! - starts[i]!) / sorted.length;
    partitions.push({
      min: bounds[i],
      max: bounds[i + 1],
      estimatedCount: Math.round(stats.count * share),
      estimatedBytes: Math.round(stats.size * share),
    });
  }
  return { order: 'id', partitions };
}

/** Whether `id` belongs to the partition (the definition readers implement with `partitionFindOptions`). */
export function partitionContains(partition: Pick<IdPartition, 'min' | 'max'>, id: unknown): boolean {
  const aboveMin = isMinKey(partition.min) || compareBsonValues(partition.min, id) <= 0;
  const belowMax = isMaxKey(partition.max) || compareBsonValues(id, partition.max) < 0;
  return aboveMin && belowMax;
}

/** `find` options that read exactly one partition through the `_id` index. */
export interface PartitionFindOptions {
  hint: { _id: 1 };
  /** Inclusive lower index bound; absent for the first range. */
  min?: Document;
  /** Exclusive upper index bound; absent for the last range (so a MaxKey `_id` is read too). */
  max?: Document;
}

/** The `find` options reading `partition` (for `order: 'id'` plans). */
export function partitionFindOptions(partition: Pick<IdPartition, 'min' | 'max'>): PartitionFindOptions {
  const options: PartitionFindOptions = { hint: { _id: 1 } };
  if (!isMinKey(partition.min)) options.min = { _id: partition.min };
  if (!isMaxKey(partition.max)) options.max = { _id: partition.max };
  return options;
}

/** Sampling knobs for `sampleIds`. */
export interface SampleOptions {
  /** Samples taken per wanted partition, so quantiles are stable. Default 10. */
  oversampling?: number;
  /** Upper bound on the `$sample` size, keeping the sampling query cheap. Default 100,000. */
  maxSampleSize?: number;
}

/**
 * Samples `_id`s of a collection for `planPartitions`: `$sample` of (partitions × oversampling)
 * documents, projected to `_id`, read as raw BSON and decoded type-faithfully. Returns [] when one
 * partition is wanted (nothing to split). Uses documented aggregation stages only.
 */
export async function sampleIds(collection: DriverCollection, partitions: number, options: SampleOptions = {}): Promise<unknown[]> {
  if (partitions <= 1) return [];
  const size = Math.min(partitions * (options.oversampling ?? 10), options.maxSampleSize ?? 100_000);
  const ids: unknown[] = [];
  for await (const raw of aggregateRaw(collection, [{ $sample: { size } }, { $project: { _id: 1 } }], { allowDiskUse: true })) {
    ids.push(readId(raw));
  }
  return ids;
}

/**
 * Reads a collection's statistics with the documented `$collStats` stage (one result per shard
 * on a sharded cluster, summed here).
 */
export async function readCollectionStats(collection: DriverCollection): Promise<CollectionStats> {
  const stats: CollectionStats = { count: 0, size: 0, capped: false };
  const cursor = collection.aggregate<{ storageStats?: { count?: number; size?: number; capped?: boolean } }>([
    { $collStats: { storageStats: {} } },
  ]);
  for await (const shard of cursor) {
    stats.count += Number(shard.storageStats?.count ?? 0);
    stats.size += Number(shard.storageStats?.size ?? 0);
    stats.capped ||= shard.storageStats?.capped === true;
  }
  return stats;
}
