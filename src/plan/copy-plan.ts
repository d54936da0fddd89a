/**
 * The copy plan of one source collection: its statistics (`$collStats`), a sample of its `_id`s
 * when it is worth splitting (`$sample`), and the `_id` ranges planPartitions derives from them,
 * with bounds packed for the partition table. Capped collections are one range read in natural
 * order; collections with a non-simple default collation avoid string boundaries (partitions.ts).
 */
import { MaxKey, MinKey } from 'bson';
import type { Collection, Document } from 'mongodb';
import type { PlannedPartition } from '../meta/partitions.js';
import { packValue } from '../meta/store.js';
import { planPartitions, readCollectionStats, sampleIds, wantedPartitions, type CollectionStats } from './partitions.js';
import { hasRandomIds } from './random-ids.js';

const MIN_KEY = new MinKey();
const MAX_KEY = new MaxKey();

export interface CollectionCopyPlan {
  stats: CollectionStats;
  partitions: PlannedPartition[];
}

/** Whether collection options give a default collation other than the simple one. */
export function hasNonSimpleCollation(options: Document): boolean {
  const collation = options.collation as Document | undefined;
  return collation !== undefined && collation.locale !== 'simple';
}

/** When a collection is read in natural order instead of by `_id` ranges (besides capped ones). */
export interface NaturalOrderChoice {
  /** `copyInNaturalOrder` names it. */
  asked: boolean;
  /** `detectRandomId`: check it when it is at least `randomIdMinBytes` and neither capped nor clustered. */
  detectRandomId: boolean;
  randomIdMinBytes: number;
}

const BY_ID: NaturalOrderChoice = { asked: false, detectRandomId: false, randomIdMinBytes: 0 };

export async function planCollectionCopy(
  collection: Collection,
  sourceOptions: Document,
  partitionBytes: number,
  natural: NaturalOrderChoice = BY_ID,
): Promise<CollectionCopyPlan> {
  const measured = await readCollectionStats(collection);
  const stats: CollectionStats = {
    ...measured,
    capped: sourceOptions.capped === true || measured.capped === true,
    nonSimpleCollation: hasNonSimpleCollation(sourceOptions),
  };
  const options = { partitionBytes };
  const checkRandom =
    natural.detectRandomId && !stats.capped && sourceOptions.clusteredIndex === undefined && stats.size >= natural.randomIdMinBytes;
  if (!stats.capped && (natural.asked || (checkRandom && (await hasRandomIds(collection))))) {
    // One range, read in natural order (like a capped collection): sequential reads, no checkpoint.
    return {
      stats,
      partitions: [
        { order: 'natural', min: packValue(MIN_KEY), max: packValue(MAX_KEY), estimatedCount: stats.count, estimatedBytes: stats.size },
      ],
    };
  }
  const wanted = stats.capped ? 1 : wantedPartitions(stats, options);
  const sample = wanted > 1 ? await sampleIds(collection, wanted) : [];
  const plan = planPartitions(stats, sample, options);
  return {
    stats,
    partitions: plan.partitions.map((partition) => ({
      order: plan.order,
      min: packValue(partition.min),
      max: packValue(partition.max),
      estimatedCount: partition.estimatedCount,
      estimatedBytes: partition.estimatedBytes,
    })),
  };
}
