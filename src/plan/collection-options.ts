/**
 * The options a destination collection is created with, from the source's `listCollections`
 * entry. Everything is carried over as the source has it (collation, validator and validation
 * settings, change-stream pre/post images, clustered index, time series, storage engine...),
 * except what the spec makes temporary: a capped collection is created with the largest size
 * mongod allows and no document limit, so the copy and change-event application never evict a
 * document the source still holds; its original `size`/`max` are recorded for commit. A clustered
 * or time-series collection with a collection-level TTL (`expireAfterSeconds`) is created without
 * one, so the destination's TTL monitor never deletes on its own schedule, out of order with the
 * change events (spec §8: TTL expiry on the destination is held off during sync); its original value is
 * recorded for commit. Without, rather than the 2147483647 seconds index TTLs get: mongod refuses a
 * collection-level `expireAfterSeconds` larger than the seconds since the epoch (InvalidOptions,
 * "must be within an acceptable range"), while `collMod` can add one later to any collection
 * clustered by `_id`, time-series ones included.
 *
 * Validation is not relaxed here: Ferry's writes bypass it (`bypassDocumentValidation`).
 */
import type { Document } from 'bson';
import type { CappedOriginal } from '../domain/catalog.js';
import { MAX_CAPPED_SIZE_BYTES } from '../domain/constants.js';

/** How to create one destination namespace. */
export interface CreatePlan {
  /** The `create` command's options (everything but the name). */
  options: Document;
  /** Set for capped collections: the characteristics to restore at commit. */
  capped?: CappedOriginal;
  /**
   * Set for clustered and time-series collections with a collection-level TTL: the source's
   * `expireAfterSeconds`, left out of `options` and restored at commit.
   */
  expireAfterSeconds?: number;
}

/**
 * A capped collection's document limit to restore: any positive `max` the source lists. mongod
 * lists a limit given as 0 or less as 2^31-1, which a user can also set: it is recorded and
 * restored like any other, never taken for "no limit".
 */
export function cappedMax(max: unknown): number | undefined {
  if (max === undefined || max === null) return undefined;
  const value = Number(max);
  return value <= 0 ? undefined : value;
}

/** The `create` options for a collection or view, from its source `listCollections` options. */
export function createPlan(type: 'collection' | 'view', sourceOptions: Document): CreatePlan {
  const options: Document = { ...sourceOptions };
  const plan: CreatePlan = { options };
  if (type === 'view') return plan;
  if (options.expireAfterSeconds !== undefined) {
    plan.expireAfterSeconds = Number(options.expireAfterSeconds);
    delete options.expireAfterSeconds;
  }
  if (options.capped === true) {
    const capped: CappedOriginal = { size: Number(options.size) };
    const max = cappedMax(options.max);
    if (max !== undefined) capped.max = max;
    options.size = MAX_CAPPED_SIZE_BYTES;
    delete options.max;
    plan.capped = capped;
  }
  return plan;
}

/** The options a destination collection lists during sync, given the source's (for comparisons). */
export function temporaryCollectionOptions(sourceOptions: Document): Document {
  return createPlan('collection', sourceOptions).options;
}
