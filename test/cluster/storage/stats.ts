/**
 * Storage statistics in mongod's field names, shared by `collStats`, `dbStats`, `listDatabases`
 * and the `$collStats` aggregation stage. Logical figures (count, size, avgObjSize) are exact;
 * physical ones are modelled on WiredTiger, which never uses less than one 4 KiB block per
 * table: storageSize is the data size rounded up to 4 KiB, and each index is estimated at
 * 4 KiB plus a fixed number of bytes per entry (the test cluster keeps no index structures).
 */
import type { Collection } from './collection.js';
import type { Instance } from '../instance.js';

/** WiredTiger's allocation unit: the smallest a table file ever is. */
export const ALLOCATION_UNIT = 4096;
/** Bytes an index entry is estimated to take (key, record id and page overhead). */
const INDEX_ENTRY_BYTES = 24;

/** What one collection holds: from the collection itself, or from the oplog for `local.oplog.rs`. */
function contents(instance: Instance | undefined, collection: Collection): { count: number; size: number; maxSize?: number } {
  if (instance && collection.db === 'local' && collection.name === 'oplog.rs') {
    const oplog = instance.oplog.stats();
    return { count: oplog.count, size: oplog.bytes, maxSize: oplog.maxBytes };
  }
  return { count: collection.count, size: collection.dataSize, maxSize: collection.options.size };
}

function roundUp(bytes: number): number {
  return Math.max(ALLOCATION_UNIT, Math.ceil(bytes / ALLOCATION_UNIT) * ALLOCATION_UNIT);
}

/** Estimated size of each index of a collection, by index name. */
export function indexSizes(collection: Collection, count = collection.count): Record<string, number> {
  const sizes: Record<string, number> = {};
  for (const index of collection.indexes) sizes[index.name] = roundUp(ALLOCATION_UNIT + count * INDEX_ENTRY_BYTES);
  return sizes;
}

/**
 * A collection's storage statistics as `collStats` and `$collStats: {storageStats}` report them
 * (without `ns`). Sizes are divided by `scale` (rounded down), as mongod does; avgObjSize is not.
 */
export function collectionStorageStats(collection: Collection, scale = 1, instance?: Instance): Record<string, unknown> {
  const { count, size, maxSize } = contents(instance, collection);
  const scaled = (n: number) => Math.floor(n / scale);
  const storageSize = roundUp(size);
  const perIndex = indexSizes(collection, count);
  const totalIndexSize = Object.values(perIndex).reduce((a, b) => a + b, 0);
  const stats: Record<string, unknown> = {
    size: scaled(size),
    count,
  };
  if (count > 0) stats.avgObjSize = Math.floor(size / count);
  stats.numOrphanDocs = 0;
  stats.storageSize = scaled(storageSize);
  stats.freeStorageSize = 0;
  stats.capped = collection.capped;
  if (collection.capped) {
    stats.max = collection.options.max && collection.options.max > 0 ? collection.options.max : 0;
    stats.maxSize = scaled(maxSize ?? 0);
  }
  stats.nindexes = collection.indexes.length;
  stats.indexBuilds = [];
  stats.totalIndexSize = scaled(totalIndexSize);
  stats.totalSize = scaled(storageSize + totalIndexSize);
  stats.indexSizes = Object.fromEntries(Object.entries(perIndex).map(([name, bytes]) => [name, scaled(bytes)]));
  stats.scaleFactor = scale;
  return stats;
}

/** Totals over one database, as `dbStats` reports them (without `db`, scaled by `scale`). */
export function databaseStats(instance: Instance, db: string, scale = 1): Record<string, unknown> {
  let collections = 0;
  let views = 0;
  let objects = 0;
  let dataSize = 0;
  let storageSize = 0;
  let indexes = 0;
  let indexSize = 0;
  for (const ns of instance.catalog.namespaces(db)) {
    if (ns.kind === 'view') {
      views++;
      continue;
    }
    collections++;
    const { count, size } = contents(instance, ns);
    objects += count;
    dataSize += size;
    storageSize += roundUp(size);
    indexes += ns.indexes.length;
    indexSize += Object.values(indexSizes(ns, count)).reduce((a, b) => a + b, 0);
  }
  const scaled = (n: number) => Math.floor(n / scale);
  return {
    collections,
    views,
    objects,
    avgObjSize: objects > 0 ? dataSize / objects : 0,
    dataSize: scaled(dataSize),
    storageSize: scaled(storageSize),
    indexes,
    indexSize: scaled(indexSize),
    totalSize: scaled(storageSize + indexSize),
    scaleFactor: scale,
  };
}

/** Bytes a database occupies "on disk" (listDatabases' sizeOnDisk): storage plus indexes. */
export function databaseSizeOnDisk(instance: Instance, db: string): number {
  return databaseStats(instance, db).totalSize as number;
}
