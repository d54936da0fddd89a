/**
 * Building the destination's indexes in temporary form (indexes.ts), collection by collection,
 * a few at once, each recorded in its namespace record when done, so that a restart builds only
 * what is left. Planning runs it with `beforeDataCopy`/`excludeHashed`, the initial copy after
 * the copy with `afterDataCopy`/`excludeHashedAfterCopy`; `indexBuilding` in progress counts it.
 *
 * After the copy, change-event application may still be replaying events onto documents the copy
 * wrote in a newer version: until their last event is applied, a document can hold a shape the
 * source held before the index existed there (two arrays under one compound index), and the build
 * is refused for it (`isDocumentShapeIndexError`). Such a build waits until application has
 * caught up with the source (`afterChangeEvents`) and is tried again once; refused again, the
 * refusal is the documents' own and fails the build by its name.
 */
import type { MongoClient } from 'mongodb';
import { INDEX_BUILD_PARALLELISM, PLANNING_CHUNK } from '../config/settings.js';
import { namespaceOf } from '../domain/namespaces.js';
import type { SyncSnapshot } from '../domain/sync-control.js';
import type { Logger } from '../log/logger.js';
import type { NamespaceRecord, NamespaceRecords } from '../meta/namespaces.js';
import { isDocumentShapeIndexError } from '../cluster/errors.js';
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

/**
 * Builds a collection's indexes; a build refused for a document's shape is tried again once
 * `afterChangeEvents` says application has caught up (see the module comment). Undefined when
 * stopping was asked while it waited (nothing built).
 */
async function buildCollectionIndexes(
  destination: MongoClient,
  record: NamespaceRecord,
  logger: Logger,
  stopping: () => boolean,
  afterChangeEvents: (() => Promise<boolean>) | undefined,
): Promise<number | undefined> {
  try {
    return await buildIndexesOnDestination(destination, record);
  } catch (error) {
    if (afterChangeEvents === undefined || !isDocumentShapeIndexError(error)) throw error;
    logger.info(
      { ns: namespaceOf(record), err: error },
      'An index build met a document in a shape its pending change events replace: it waits for change-event application to catch up',
    );
    const caughtUp = await afterChangeEvents();
    if (stopping()) return undefined;
    if (!caughtUp) throw error;
    return buildIndexesOnDestination(destination, record);
  }
}

/**
 * Builds the indexes of every collection whose record says they are not built; false when
 * `stopping()` came first. `afterChangeEvents` (after the copy): resolves true once change-event
 * application has caught up with the source as it is when called, false if it cannot.
 */
export async function buildPendingIndexes(
  destination: MongoClient,
  records: readonly NamespaceRecord[],
  namespaces: NamespaceRecords,
  progress: IndexBuildProgress,
  logger: Logger,
  stopping: () => boolean,
  afterChangeEvents?: () => Promise<boolean>,
): Promise<boolean> {
  const pending = records.filter((record) => record.type === 'collection' && !record.indexesBuilt);
  if (pending.length > 0 && afterChangeEvents !== undefined) {
    // Events replayed after a build would meet an index the source did not have when they were
    // written there (a document's older shape, refused as CannotIndexParallelArrays): application
    // catches up with the source first, and later events come from a source that has the index.
    logger.info('Index builds after the copy: each waits for change-event application to catch up with the source first');
    await afterChangeEvents();
    if (stopping()) return false;
  }
  // Builds are recorded a chunk at a time (one write per chunk, not per collection): a crash
  // builds at most one chunk again, and `createIndexes` of indexes that exist is a no-op.
  for (let at = 0; at < pending.length && !stopping(); at += PLANNING_CHUNK) {
    const done: NamespaceRecord[] = [];
    await forEachBounded(pending.slice(at, at + PLANNING_CHUNK), INDEX_BUILD_PARALLELISM, async (record) => {
      if (stopping()) return;
      const built = await buildCollectionIndexes(destination, record, logger, stopping, afterChangeEvents);
      if (built === undefined) return;
      done.push(record);
      if (built > 0) {
        progress.built(built);
        logger.debug({ ns: namespaceOf(record), indexes: built }, 'Indexes built');
      }
    }).finally(() =>
      namespaces.markManyDone(
        done.map((record) => ({ record })),
        'indexesBuilt',
      ),
    );
  }
  return !stopping();
}
