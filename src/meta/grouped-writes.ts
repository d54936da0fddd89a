/**
 * Group commit for small metadata writes made by many concurrent tasks (a partition started or
 * finished, a verification range recorded): while one `bulkWrite` is on its way, the writes asked
 * for meanwhile wait and then go together in the next one. A write alone goes at once, so nothing
 * waits longer than one round trip more than before; under concurrency (thousands of one-document
 * collections, a few at once) the metadata round trips fall by the number of tasks.
 *
 * Each write's promise settles only once its own `bulkWrite` is acknowledged, so a caller still
 * records what it did before it goes on (crash-safety is unchanged); a failed `bulkWrite` rejects
 * every write it carried. Writes go in the order they were asked for (`ordered: true`), so two
 * writes to one document land in that order.
 */
import type { AnyBulkWriteOperation, Document } from 'mongodb';
import type { FencedCollection } from './fence.js';

/** Writes per `bulkWrite` at most (a batch well under the server's 100,000 and 16 MiB limits). */
export const GROUPED_WRITES_MAX = 500;

interface Pending<T extends Document> {
  operation: AnyBulkWriteOperation<T>;
  settle: (error?: unknown) => void;
}

export class GroupedWrites<T extends Document> {
  readonly #collection: FencedCollection<T>;
  #pending: Pending<T>[] = [];
  #flushing = false;

  constructor(collection: FencedCollection<T>) {
    this.#collection = collection;
  }

  /** Resolves once `operation` is written (in a `bulkWrite` with the others asked for meanwhile). */
  write(operation: AnyBulkWriteOperation<T>): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      this.#pending.push({ operation, settle: (error) => (error === undefined ? resolve() : reject(error)) });
      if (!this.#flushing) void this.#flush();
    });
  }

  async #flush(): Promise<void> {
    this.#flushing = true;
    try {
      while (this.#pending.length > 0) {
        const group = this.#pending.splice(0, GROUPED_WRITES_MAX);
        try {
          await this.#collection.bulkWrite(
            group.map((entry) => entry.operation),
            { ordered: true },
          );
        } catch (error) {
          for (const entry of group) entry.settle(error ?? new Error('metadata write failed'));
          continue;
        }
        for (const entry of group) entry.settle();
      }
    } finally {
      this.#flushing = false;
    }
  }
}
