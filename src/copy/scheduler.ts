/**
 * Runs the unfinished partitions of the partition table through the copy pool, one per worker
 * at a time, and records each: `in progress` (attempt counted) before a worker starts on it,
 * `done` with its final position when it returns. Workers' histogram values are recorded here.
 *
 * How many partitions run at once (`--copyWorkers`) and how each is copied (`--batchBytes`,
 * `--batchesInFlight`) may change while it runs (`retune`, on SIGHUP): more lanes start at once,
 * fewer take effect as running partitions finish; the copy settings apply from the next partition.
 * Each running partition has a slot (0 … copyWorkers-1) whose shared counter says what it has
 * written so far, for per-namespace progress.
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
import { COUNTER_SLOTS } from './shared-state.js';

/**
 * A partition estimated smaller than one write batch (a small collection's only partition) is
 * copied in a read and a write, and waits on round trips far more than it loads the clusters:
 * while such partitions come next, this many times `--copyWorkers` run at once (thousands of
 * small collections are copied several times faster). Each holds less than one batch (and
 * touches one buffer), where a large partition holds `batchesInFlight` + 1 of them, so the bytes
 * in flight stay within about what `--copyWorkers` large partitions hold.
 */
export const SMALL_PARTITION_LANES = 4;

export interface SchedulerOptions {
  pool: CopyPool;
  partitions: PartitionTable;
  settings: CopySettings;
  /** Average document size of each namespace (`db.coll`), to size read batches. */
  averageDocumentBytes: ReadonlyMap<string, number>;
  /** Capped collections (`db.coll`): their natural-order partition writes one batch at a time. */
  cappedNamespaces?: ReadonlySet<string>;
  /** Where the values workers record for the histograms go. */
  histograms: HistogramSet;
  logger: Logger;
  /** Called when a partition is about to be copied in `slot`. */
  onPartitionStart?: (row: PartitionRow, slot: number) => void;
  /** Called after each partition is recorded done. */
  onPartitionDone?: (row: PartitionRow, outcome: PartitionOutcome) => void;
  /** Called when a partition's run ends, however it ended (after `onPartitionDone` when done). */
  onPartitionEnd?: (row: PartitionRow, slot: number) => void;
}

export class CopyScheduler {
  readonly #options: SchedulerOptions;
  #settings: CopySettings;
  /** Partitions wanted at once (`--copyWorkers`). */
  #wanted: number;
  #stopping = false;
  #warnedPath: WritePath | undefined;
  #warnedReadPath = false;
  /** What `run` is working through, while it runs. */
  #queue: PartitionRow[] = [];
  #lanes = new Set<Promise<void>>();
  /** Lanes that have not decided to end (counted at once, unlike `#lanes`, which settle later). */
  #active = 0;
  /** Slots of the lanes running now. */
  #busySlots = new Set<number>();
  #failure: PartitionCopyFailed | undefined;

  constructor(options: SchedulerOptions) {
    this.#options = options;
    this.#settings = options.settings;
    this.#wanted = Math.max(1, options.pool.partitions);
  }

  /** Partitions being copied now. */
  get running(): number {
    return this.#busySlots.size;
  }

  /** Partitions copied at once from now on, and how the next ones are copied. */
  retune(partitionsAtOnce: number, settings: CopySettings): void {
    this.#settings = settings;
    this.#wanted = Math.max(1, partitionsAtOnce);
    this.#fill();
  }

  /** Asks running partitions to checkpoint and return, and starts no more. */
  stop(): void {
    this.#stopping = true;
    this.#options.pool.stopFlag.raise();
  }

  /** Copies the given partitions; resolves `done` when all are, `stopped` when stopped first. */
  async run(rows: readonly PartitionRow[]): Promise<'done' | 'stopped'> {
    this.#queue = [...rows];
    this.#failure = undefined;
    this.#fill();
    // Lanes may be added while others run (retune): wait until none is left.
    while (this.#lanes.size > 0) await Promise.race(this.#lanes);
    if (this.#failure !== undefined) throw this.#failure;
    return this.#stopping ? 'stopped' : 'done';
  }

  /**
   * Lanes wanted for `next`: `--copyWorkers`, or `SMALL_PARTITION_LANES` times as many while the
   * partitions are small (see there).
   */
  #lanesFor(next: PartitionRow | undefined): number {
    const small = next !== undefined && next.estimatedBytes < this.#settings.batchBytes;
    return Math.min(COUNTER_SLOTS, this.#wanted * (small ? SMALL_PARTITION_LANES : 1));
  }

  /** Starts lanes until as many run as the next partition wants (or nothing is left to start). */
  #fill(): void {
    while (this.#active < this.#lanesFor(this.#queue[0]) && this.#queue.length > 0 && !this.#stopping) {
      this.#active++;
      const lane: Promise<void> = this.#lane().finally(() => this.#lanes.delete(lane));
      this.#lanes.add(lane);
    }
  }

  /** Takes partitions one after another until none is left, it is stopped, or it is one lane too many. */
  async #lane(): Promise<void> {
    let slot = 0;
    while (this.#busySlots.has(slot)) slot++;
    this.#busySlots.add(slot);
    try {
      while (this.#queue.length > 0 && !this.#stopping) {
        // Fewer lanes wanted (retune, or small partitions over): this one ends before taking another.
        if (this.#active > this.#lanesFor(this.#queue[0])) return;
        const row = this.#queue.shift()!;
        // More lanes wanted for what comes next (small partitions): they start now (each takes its row at once).
        this.#fill();
        try {
          await this.#copy(row, slot);
        } catch (error) {
          this.#failure ??= new PartitionCopyFailed(
            { partition: row.key.index, ns: row.key.ns, reason: (error as Error).message },
            { cause: error },
          );
          this.stop();
        } finally {
          this.#options.onPartitionEnd?.(row, slot);
        }
      }
    } finally {
      this.#active--;
      this.#busySlots.delete(slot);
    }
  }

  async #copy(row: PartitionRow, slot: number): Promise<void> {
    const { partitions, pool, histograms, logger } = this.#options;
    await partitions.start(row);
    pool.counters.resetSlot(slot);
    this.#options.onPartitionStart?.(row, slot);
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
      settings: this.#settings,
      slot,
    };
    const capped = this.#options.cappedNamespaces;
    if (row.order === 'natural' && capped !== undefined) task.capped = capped.has(row.key.ns);
    if (row.lastId !== undefined) task.lastId = row.lastId;
    if (row.range !== undefined) task.range = row.range;
    logger.debug({ ns: row.key.ns, partition: row.key.index, resumedAfter: row.lastId }, 'Copying partition');
    const { outcome, samples } = await pool.run(task);
    histograms.recordSamples(samples);
    const chosen = this.#settings.chosenPaths ?? { read: true, write: true };
    const expectedFallback = outcome.writePath === 'raw' && !chosen.write;
    if (outcome.writePath !== this.#settings.writePath && this.#warnedPath === undefined && !expectedFallback) {
      this.#warnedPath = outcome.writePath;
      logger.warn(
        { wanted: this.#settings.writePath, used: outcome.writePath },
        outcome.writePath === 'decode'
          ? 'The raw write path is not available with this driver; documents are decoded and re-encoded'
          : "Ferry's own wire connections cannot serve this destination (not a replica set, or authentication or TLS " +
              'it does not do); the driver writes the batches',
      );
    }
    const readPath = outcome.readPath ?? 'driver';
    if (readPath !== (this.#settings.readPath ?? 'driver') && !this.#warnedReadPath && chosen.read) {
      this.#warnedReadPath = true;
      logger.warn(
        { wanted: this.#settings.readPath, used: readPath },
        "Ferry's own wire connections cannot serve this source (not a replica set, or authentication or TLS it does not do); " +
          'the driver reads the partitions',
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
