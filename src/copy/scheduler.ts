/**
 * Runs the unfinished partitions of the partition table through the copy pool, one per worker
 * at a time, and records each: `in progress` (attempt counted) before a worker starts on it,
 * `done` with its final position when it returns. Workers' histogram values are recorded here.
 *
 * `stop()` raises the shared stop flag: no new partition starts, and each running one finishes its
 * in-flight writes, checkpoints and returns. The first partition that fails stops the others the
 * same way, and `run` then rejects with `PartitionCopyFailed` naming it.
 */
import type { Logger } from '../log/logger.js';
import type { PartitionRow, PartitionTable } from '../meta/partitions.js';
import type { PartitionOutcome, PartitionTask } from './partition-copier.js';
import type { CopyPool } from './pool.js';
import { PartitionCopyFailed } from '../errors/errors.js';
import type { CopySettings, WritePath } from '../config/settings.js';
import type { HistogramSet } from '../metrics/histograms.js';

export interface SchedulerOptions {
  pool: CopyPool;
  partitions: PartitionTable;
  settings: CopySettings;
  /** Average document size of each namespace (`db.coll`), to size read batches. */
  averageDocumentBytes: ReadonlyMap<string, number>;
  /** Where the values workers record for the histograms go. */
  histograms: HistogramSet;
  logger: Logger;
  /** Called after each partition is recorded done. */
  onPartitionDone?: (row: PartitionRow, outcome: PartitionOutcome) => void;
}

export class CopyScheduler {
  readonly #options: SchedulerOptions;
  #stopping = false;
  #warnedPath: WritePath | undefined;

  constructor(options: SchedulerOptions) {
    this.#options = options;
  }

  /** Asks running partitions to checkpoint and return, and starts no more. */
  stop(): void {
    this.#stopping = true;
    this.#options.pool.stopFlag.raise();
  }

  /** Copies the given partitions; resolves `done` when all are, `stopped` when stopped first. */
  async run(rows: readonly PartitionRow[]): Promise<'done' | 'stopped'> {
    const queue = [...rows];
    let failure: PartitionCopyFailed | undefined;
    const lane = async (): Promise<void> => {
      for (let row = queue.shift(); row !== undefined && !this.#stopping; row = queue.shift()) {
        try {
          await this.#copy(row);
        } catch (error) {
          failure ??= new PartitionCopyFailed(
            { partition: row.key.index, ns: row.key.ns, reason: (error as Error).message },
            { cause: error },
          );
          this.stop();
        }
      }
    };
    const lanes = Math.max(1, Math.min(this.#options.pool.partitions, queue.length));
    await Promise.all(Array.from({ length: lanes }, lane));
    if (failure !== undefined) throw failure;
    return this.#stopping ? 'stopped' : 'done';
  }

  async #copy(row: PartitionRow): Promise<void> {
    const { partitions, pool, histograms, logger } = this.#options;
    await partitions.start(row);
    const task: PartitionTask = {
      key: row.key,
      db: row.db,
      coll: row.coll,
      order: row.order,
      min: row.min,
      max: row.max,
      copiedDocs: row.copiedDocs,
      copiedBytes: row.copiedBytes,
      averageDocumentBytes: this.#options.averageDocumentBytes.get(row.key.ns) ?? 0,
      settings: this.#options.settings,
    };
    if (row.lastId !== undefined) task.lastId = row.lastId;
    logger.debug({ ns: row.key.ns, partition: row.key.index, resumedAfter: row.lastId }, 'Copying partition');
    const { outcome, samples } = await pool.run(task);
    histograms.recordSamples(samples);
    if (outcome.writePath !== this.#options.settings.writePath && this.#warnedPath === undefined) {
      this.#warnedPath = outcome.writePath;
      logger.warn(
        { wanted: this.#options.settings.writePath, used: outcome.writePath },
        'The raw write path is not available with this driver; documents are decoded and re-encoded',
      );
    }
    if (outcome.status === 'stopped') return;
    const position: { lastId?: string; copiedDocs: number; copiedBytes: number } = {
      copiedDocs: outcome.copiedDocs,
      copiedBytes: outcome.copiedBytes,
    };
    if (outcome.lastId !== undefined) position.lastId = outcome.lastId;
    await partitions.finish(row.key, position);
    logger.debug({ ns: row.key.ns, partition: row.key.index, documents: outcome.copiedDocs }, 'Partition copied');
    this.#options.onPartitionDone?.(row, outcome);
  }
}
