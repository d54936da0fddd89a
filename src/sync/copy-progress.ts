/**
 * The initial copy's progress figures, in memory, for `GET /progress` (never a query per call):
 * - `estimatedTotalBytes`: the source collections' data sizes from `$collStats`, known once the
 *   copy phase is reached (before it the API reports 0 of 1); at the end of the copy it becomes the
 *   bytes actually copied, so a finished copy shows 100%.
 * - `estimatedCopiedBytes`: the bytes the partition table recorded before this process took over
 *   the copy, plus what this process's workers have written since (shared counters).
 * - `indexBuilding`: indexes and collections whose index builds are done, of those to build.
 */
import type { SharedCounters } from '../copy/shared-state.js';
import type { NamespaceRecord } from '../meta/namespaces.js';
import type { SyncSnapshot } from '../domain/sync-control.js';

type IndexBuilding = NonNullable<SyncSnapshot['indexBuilding']>;

export class CopyProgress {
  #totalBytes: number | undefined;
  #recordedBytes = 0;
  #live: SharedCounters | undefined;
  #finished = false;
  #indexBuilding: IndexBuilding | undefined;

  /** The copy phase is reached: the total and what the partition table already records. */
  beginCopy(records: readonly NamespaceRecord[], recordedBytes: number, live: SharedCounters | undefined): void {
    this.#totalBytes = records.reduce((sum, record) => sum + record.sourceBytes, 0);
    this.#recordedBytes = recordedBytes;
    this.#live = live;
    this.#finished = false;
  }

  /** The copy is complete: `recordedBytes` is the partition table's final total. */
  finishCopy(recordedBytes: number): void {
    this.#recordedBytes = recordedBytes;
    this.#live = undefined;
    this.#totalBytes = recordedBytes;
    this.#finished = true;
  }

  /** Index builds as the namespace records say. */
  countIndexes(records: readonly NamespaceRecord[]): void {
    const withIndexes = records.filter((record) => record.indexBuildTime !== 'never' && record.indexes.length > 0);
    const built = withIndexes.filter((record) => record.indexesBuilt);
    this.#indexBuilding = {
      indexesBuilt: built.reduce((sum, record) => sum + record.indexes.length, 0),
      totalIndexesToBuild: withIndexes.reduce((sum, record) => sum + record.indexes.length, 0),
      collectionsFinished: built.length,
      collectionsTotal: withIndexes.length,
    };
  }

  /** One more collection's indexes built. */
  indexesBuilt(count: number): void {
    if (this.#indexBuilding === undefined) return;
    this.#indexBuilding = {
      ...this.#indexBuilding,
      indexesBuilt: this.#indexBuilding.indexesBuilt + count,
      collectionsFinished: this.#indexBuilding.collectionsFinished + 1,
    };
  }

  get copiedBytes(): number {
    return this.#recordedBytes + (this.#live?.bytes ?? 0);
  }

  get finished(): boolean {
    return this.#finished;
  }

  figures(): Pick<SyncSnapshot, 'estimatedTotalBytes' | 'estimatedCopiedBytes' | 'indexBuilding'> {
    const figures: Pick<SyncSnapshot, 'estimatedTotalBytes' | 'estimatedCopiedBytes' | 'indexBuilding'> = {};
    if (this.#totalBytes !== undefined) {
      figures.estimatedTotalBytes = this.#totalBytes;
      figures.estimatedCopiedBytes = this.copiedBytes;
    }
    if (this.#indexBuilding !== undefined) figures.indexBuilding = { ...this.#indexBuilding };
    return figures;
  }
}
