/**
 * What a sync records about each collection's indexes and options: the temporary form the
 * destination holds them in during the sync, and what commit restores (src/plan/indexes.ts and
 * src/plan/collection-options.ts compute them; src/meta/namespaces.ts records them).
 */
import type { Document } from 'bson';
import type { BuildIndexes } from './start-request.js';

/** What the temporary form changed in one index, with the source's values to restore at commit. */
export interface TemporaryChanges {
  /** The index is unique on the source; built non-unique. */
  unique?: true;
  /** The source's `expireAfterSeconds`; built with `TEMPORARY_TTL_SECONDS`. */
  expireAfterSeconds?: number;
  /** The index is hidden on the source; built visible. */
  hidden?: true;
  /** The index has `prepareUnique` on the source; built without it. */
  prepareUnique?: true;
  /**
   * Built without `sparse` and with `_id: {$exists: true}` in its partial filter, so that it does
   * not collide with a unique index on the same key, non-unique during the sync (its twin:
   * src/plan/indexes.ts); commit rebuilds it as the source has it.
   */
  distinguished?: true;
}

/** One index as the destination gets it, and how to restore it. */
export interface IndexPlan {
  name: string;
  /** The specification as `listIndexes` gave it on the source (without `v` and `ns`). */
  original: Document;
  /** The specification `createIndexes` receives on the destination. */
  temporary: Document;
  /** Empty when the temporary form is the original. */
  changes: TemporaryChanges;
}

/** When the indexes of a sync are built. */
export type IndexBuildTime = 'beforeCopy' | 'afterCopy' | 'never';

/** When `buildIndexes` (mongosync's start option) has the indexes built. */
export function indexBuildTime(buildIndexes: BuildIndexes): IndexBuildTime {
  switch (buildIndexes) {
    case 'beforeDataCopy':
    case 'excludeHashed':
      return 'beforeCopy';
    case 'afterDataCopy':
    case 'excludeHashedAfterCopy':
      return 'afterCopy';
    case 'never':
      return 'never';
  }
}

/** What commit must restore on a capped collection. */
export interface CappedOriginal {
  /** The source's `size`, in bytes. */
  size: number;
  /** The source's `max` document count; absent when it has none. */
  max?: number;
}

/** Where the index that supports a destination shard key comes from. */
export type SupportingIndexOrigin =
  /** A source index, built on the destination before the collection is sharded (in temporary form). */
  | 'source'
  /** Created because the source has none (`createSupportingIndexes`): kept after commit. */
  | 'created'
  /**
   * A placeholder, because `buildIndexes` leaves the source's supporting index unbuilt: kept after
   * commit with `never` (the collection cannot be without one), dropped at commit otherwise.
   */
  | 'placeholder';

/** How a collection is sharded on the destination, decided when the sync plans it. */
export interface DestinationSharding {
  /** The key pattern: fields in order, each `1` or `'hashed'`. */
  key: Record<string, 1 | 'hashed'>;
  /** The index that supports the key on the destination when the collection is sharded. */
  supportingIndex: { origin: SupportingIndexOrigin; spec: Document };
}
