/**
 * Building the destination's indexes in temporary form (indexes.ts), collection by collection,
 * a few at once, each recorded in its namespace record when done, so that a restart builds only
 * what is left. Planning runs it with `beforeDataCopy`/`excludeHashed`, the initial copy after
 * the copy with `afterDataCopy`/`excludeHashedAfterCopy`; `indexBuilding` in progress counts it.
 */
import type { MongoClient } from 'mongodb';
import { INDEX_BUILD_PARALLELISM } from '../config/settings.js';
import { namespaceOf } from '../domain/namespaces.js';
import type { SyncSnapshot } from '../domain/sync-control.js';
import type { Logger } from '../log/logger.js';
import type { NamespaceRecord, NamespaceRecords } from '../meta/namespaces.js';
import { buildIndexesOnDestination } from './destination.js';
import { forEachBounded } from './for-each-bounded.js';

type IndexBuilding = NonNullable<SyncSnapshot['indexBuilding']>;

/** Index builds done and to do, in memory, for progress. */
export class IndexBuildProgress {
  #figures: IndexBuilding | undefined;

  /** The figures the namespace records give. */
  count(records: readonly NamespaceRecord[]): void {
    const withIndexes = records.filter((record) => record.indexBuildTime !== 'never' && record.indexes.length > 0);
    const built = withIndexes.filter((record) => record.indexesBuilt);
    this.#figures = {
      indexesBuilt: built.reduce((sum, record) => sum + record.indexes.length, 0),
      totalIndexesToBuild: withIndexes.reduce((sum, record) => sum + record.indexes.length, 0),
      collectionsFinished: built.length,
      collectionsTotal: withIndexes.length,
    };
  }

  /** One more collection's `count` indexes built. */
  built(count: number): void {
    if (this.#figures === undefined) return;
    this.#figures = {
      ...this.#figures,
      indexesBuilt: this.#figures.indexesBuilt + count,
      collectionsFinished: this.#figures.collectionsFinished + 1,
    };
  }

  figures(): IndexBuilding | undefined {
    return this.#figures === undefined ? undefined : { ...this.#figures };
  }
}

/** Builds the indexes of every collection whose record says they are not built; false when `stopping()` came first. */
export async function buildPendingIndexes(
  destination: MongoClient,
  records: readonly NamespaceRecord[],
  namespaces: NamespaceRecords,
  progress: IndexBuildProgress,
  logger: Logger,
  stopping: () => boolean,
): Promise<boolean> {
  const pending = records.filter((record) => record.type === 'collection' && !record.indexesBuilt);
  await forEachBounded(pending, INDEX_BUILD_PARALLELISM, async (record) => {
    if (stopping()) return;
    const built = await buildIndexesOnDestination(destination, record);
    await namespaces.markDone(record, 'indexesBuilt');
    if (built > 0) {
      progress.built(built);
      logger.debug({ ns: namespaceOf(record), indexes: built }, 'Indexes built');
    }
  });
  return !stopping();
}
