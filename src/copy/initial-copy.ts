/**
 * The initial copy phase, after planning (src/plan/planning.ts): the unfinished partitions of
 * the partition table go through the copy pool (finished ones are skipped, interrupted ones
 * resume after their checkpoint: partition-copier.ts), then the sync enters `buildingIndexes`
 * (with `afterDataCopy`/`excludeHashedAfterCopy`: indexes are built) and `copied`. `stop()` ends
 * the run at the next safe point (partitions checkpoint first).
 *
 * Its figures, in memory, for `GET /progress` (never a query per call):
 * - `estimatedTotalBytes`: the source collections' data sizes from `$collStats`, known once the
 *   copy phase is reached (before it the API reports 0 of 1); once the copy is complete, the bytes
 *   actually copied, so a finished copy shows 100%;
 * - `estimatedCopiedBytes`: the bytes the partition table recorded before this run took over the
 *   copy, plus what this run's workers have written since (shared counters);
 * - `indexBuilding`: indexes and collections whose builds are done, of those to build.
 */
import { appendOplogNote } from '../cluster/commands.js';
import { indexBuildTime } from '../domain/catalog.js';
import { namespaceOf } from '../domain/namespaces.js';
import { NamespaceRecords, type NamespaceRecord } from '../meta/namespaces.js';
import { PartitionTable } from '../meta/partitions.js';
import type { SyncSettings } from '../config/settings.js';
import type { NamespaceProgress } from '../domain/sync-control.js';
import type { PartitionRow } from '../meta/partitions.js';
import type { Phase, PhaseOutcome, PhaseStatus, SyncContext } from '../phase/contract.js';
import { buildPendingIndexes, IndexBuildProgress } from '../plan/index-builds.js';
import { CopyPool } from './pool.js';
import { CopyScheduler } from './scheduler.js';
import type { SharedCounters } from './shared-state.js';

/** One collection's copy, as this run tracks it (NamespaceProgress's live form). */
interface NamespaceCopy {
  sourceBytes: number;
  total: number;
  done: number;
  /** Bytes the partition table recorded, plus what partitions finished in this run added. */
  recordedBytes: number;
  /** Slots of this collection's partitions running now. */
  running: Set<number>;
  /** Its progress figures while none of its partitions runs (cleared when one starts). */
  figures?: NamespaceProgress;
}

export class InitialCopy implements Phase {
  readonly name = 'initial copy';
  readonly #context: SyncContext;
  readonly #namespaces: NamespaceRecords;
  readonly #partitions: PartitionTable;
  readonly #indexes = new IndexBuildProgress();
  #totalBytes: number | undefined;
  /** Bytes the partition table recorded when this run took over (or at the end). */
  #recordedBytes = 0;
  /** This run's workers' counters, while they copy; what they counted, after. */
  #live: SharedCounters | undefined;
  #copied = { bytes: 0, documents: 0 };
  #stopping = false;
  #scheduler: CopyScheduler | undefined;
  #running: Promise<PhaseOutcome> | undefined;
  /** Per collection, in namespace order; empty until the partition table is read. */
  #byNamespace = new Map<string, NamespaceCopy>();
  /** The figures last made of `#byNamespace` (reused while no copy runs). */
  #figures: { of: Map<string, NamespaceCopy>; list: NamespaceProgress[] } | undefined;
  /** Live settings handed over since the run began (SIGHUP), for the next copy run too. */
  #settings: SyncSettings;

  constructor(context: SyncContext) {
    this.#context = context;
    this.#namespaces = new NamespaceRecords(context.store);
    this.#partitions = new PartitionTable(context.store);
    this.#settings = context.settings;
  }

  async recover(): Promise<void> {
    const phase = this.#context.syncPhase();
    const records = await this.#namespaces.list();
    this.#indexes.count(records);
    const rows = await this.#partitions.list();
    const copiedBytes = rows.reduce((sum, row) => sum + row.copiedBytes, 0);
    this.#trackNamespaces(records, rows);
    if (phase === 'copying') this.#beginCopy(records, copiedBytes);
    else if (phase !== 'planning') this.#finishCopy(copiedBytes);
  }

  onSettings(settings: SyncSettings): void {
    this.#settings = settings;
    this.#scheduler?.retune(settings.copyWorkers, settings.copy);
  }

  /** Per-collection figures from the namespace records and the partition table. */
  #trackNamespaces(records: readonly NamespaceRecord[], rows: readonly PartitionRow[]): void {
    const byNamespace = new Map<string, NamespaceCopy>();
    for (const record of records) {
      if (record.type !== 'collection') continue;
      byNamespace.set(namespaceOf(record), { sourceBytes: record.sourceBytes, total: 0, done: 0, recordedBytes: 0, running: new Set() });
    }
    for (const row of rows) {
      const entry = byNamespace.get(row.key.ns);
      if (entry === undefined) continue;
      entry.total++;
      if (row.status === 'done') entry.done++;
      entry.recordedBytes += row.copiedBytes;
    }
    this.#byNamespace = byNamespace;
  }

  /**
   * The copy of each collection; bytes of running partitions read from their shared slots. A
   * collection with no partition running keeps its figures until one of its partitions starts or
   * ends (progress is asked for often, and a sync may have thousands of collections).
   */
  #namespaceFigures(): NamespaceProgress[] {
    // No copy running: nothing changes until the table is read again.
    if (this.#scheduler === undefined && this.#figures?.of === this.#byNamespace) return this.#figures.list;
    const live = this.#live;
    const figures: NamespaceProgress[] = [];
    for (const [namespace, entry] of this.#byNamespace) {
      if (entry.figures !== undefined && entry.running.size === 0) {
        figures.push(entry.figures);
        continue;
      }
      let copied = entry.recordedBytes;
      if (live !== undefined) for (const slot of entry.running) copied += live.slotBytes(slot);
      const current: NamespaceProgress = {
        namespace,
        estimatedTotalBytes: Math.max(entry.sourceBytes, copied),
        estimatedCopiedBytes: copied,
        partitions: { total: entry.total, done: entry.done, inProgress: entry.running.size },
      };
      entry.figures = entry.running.size === 0 ? current : undefined;
      figures.push(current);
    }
    this.#figures = { of: this.#byNamespace, list: figures };
    return figures;
  }

  start(): Promise<PhaseOutcome> {
    this.#running = this.#run();
    return this.#running;
  }

  async stop(): Promise<void> {
    this.#stopping = true;
    this.#scheduler?.stop();
    await this.#running?.catch(() => undefined);
  }

  status(): PhaseStatus {
    const done = this.#context.syncPhase() === 'copied';
    const figures: PhaseStatus['figures'] = {};
    if (this.#totalBytes !== undefined) {
      figures.estimatedTotalBytes = this.#totalBytes;
      figures.estimatedCopiedBytes = this.#recordedBytes + (this.#live?.bytes ?? 0);
    }
    const indexBuilding = this.#indexes.figures();
    if (indexBuilding !== undefined) figures.indexBuilding = indexBuilding;
    if (this.#byNamespace.size > 0) figures.namespaces = this.#namespaceFigures();
    const counters = this.#live === undefined ? this.#copied : { bytes: this.#live.bytes, documents: this.#live.documents };
    return {
      ...(done ? {} : { info: 'collection copy' }),
      readyToCommit: done,
      figures,
      counters: { copiedBytes: counters.bytes, copiedDocuments: counters.documents },
    };
  }

  /** Waits until change-event application has applied the source's changes up to now (index-builds.ts). */
  async #changeEventsCaughtUp(): Promise<boolean> {
    const { source, store } = this.#context;
    const now = await appendOplogNote(source, 'an index build waits for change events', store.instance);
    return this.#context.changeEventsCaughtUp(now);
  }

  #beginCopy(records: readonly NamespaceRecord[], recordedBytes: number): void {
    this.#totalBytes = records.reduce((sum, record) => sum + record.sourceBytes, 0);
    this.#recordedBytes = recordedBytes;
  }

  #finishCopy(recordedBytes: number): void {
    this.#recordedBytes = recordedBytes;
    this.#totalBytes = recordedBytes;
  }

  async #run(): Promise<PhaseOutcome> {
    const { request, destination, logger } = this.#context;
    const records = await this.#namespaces.list();
    this.#indexes.count(records);
    const coordination = this.#context.coordination;
    const afterCopy = indexBuildTime(request.buildIndexes) === 'afterCopy';
    if (this.#context.syncPhase() === 'copying') {
      if ((await this.#copy(records)) === 'stopped') return 'stopped';
      // Several instances meet in buildingIndexes: the coordinator builds once every copy is done.
      if (coordination !== undefined) await coordination.reach('copied');
      await this.#context.enterSyncPhase(afterCopy || coordination !== undefined ? 'buildingIndexes' : 'copied');
    }
    if (this.#context.syncPhase() === 'buildingIndexes') {
      const stopped = () => this.#stopping;
      if (coordination !== undefined && !coordination.isCoordinator) {
        if ((await coordination.awaitCoordinator('indexesBuilt', stopped)) === undefined) return 'stopped';
      } else {
        if (coordination !== undefined && !(await coordination.awaitAll('copied', stopped))) return 'stopped';
        const caughtUp = () => this.#changeEventsCaughtUp();
        if (
          afterCopy &&
          !(await buildPendingIndexes(destination.client, records, this.#namespaces, this.#indexes, logger, stopped, caughtUp))
        ) {
          return 'stopped';
        }
        await coordination?.reach('indexesBuilt');
      }
      await this.#context.enterSyncPhase('copied');
    }
    return 'done';
  }

  /** Copies the unfinished partitions. */
  async #copy(records: readonly NamespaceRecord[]): Promise<PhaseOutcome> {
    const { logger, source, destination, store, histograms } = this.#context;
    const settings = this.#settings;
    const all = await this.#partitions.list();
    const rows = all.filter((row) => row.status !== 'done');
    const summary = { total: all.length, done: all.length - rows.length, copiedBytes: all.reduce((sum, row) => sum + row.copiedBytes, 0) };
    this.#trackNamespaces(records, all);
    this.#beginCopy(records, summary.copiedBytes);
    if (rows.length === 0) {
      this.#finishCopy(summary.copiedBytes);
      return 'done';
    }
    const averageDocumentBytes = new Map(
      records.map((record) => [namespaceOf(record), record.sourceCount > 0 ? record.sourceBytes / record.sourceCount : 0]),
    );
    const cappedNamespaces = new Set(records.filter((record) => record.sourceOptions.capped === true).map(namespaceOf));
    const pool = new CopyPool({
      // Several instances: each reads its own shard directly.
      sourceUri: (this.#context.coordination?.shard.cluster ?? source).endpoint.uri,
      destinationUri: destination.endpoint.uri,
      instance: store.instance,
      epoch: store.fence.epoch,
      partitions: Math.min(settings.copyWorkers, rows.length),
    });
    logger.info(
      { partitions: summary.total, done: summary.done, remaining: rows.length, atOnce: pool.partitions, threads: pool.threads },
      `Copying ${rows.length} of ${summary.total} partition(s), ${pool.partitions} at once in ${pool.threads} worker thread(s)`,
    );
    // Bytes the table records for the partitions about to run count once: as recorded, then live.
    this.#live = pool.counters;
    const scheduler = new CopyScheduler({
      pool,
      partitions: this.#partitions,
      settings: settings.copy,
      averageDocumentBytes,
      cappedNamespaces,
      histograms,
      logger,
      onPartitionStart: (row, slot) => {
        const entry = this.#byNamespace.get(row.key.ns);
        if (entry === undefined) return;
        entry.running.add(slot);
        entry.figures = undefined;
      },
      onPartitionDone: (row, outcome) => {
        const entry = this.#byNamespace.get(row.key.ns);
        if (entry === undefined) return;
        entry.done++;
        entry.recordedBytes += outcome.copiedBytes - row.copiedBytes;
        entry.figures = undefined;
      },
      onPartitionEnd: (row, slot) => {
        const entry = this.#byNamespace.get(row.key.ns);
        if (entry === undefined) return;
        entry.running.delete(slot);
        entry.figures = undefined;
      },
    });
    this.#scheduler = scheduler;
    let finished = false;
    try {
      if (this.#stopping) scheduler.stop();
      const result = await scheduler.run(rows);
      if (result === 'done') {
        finished = true;
        this.#finishCopy((await this.#partitions.summary()).copiedBytes);
        logger.info(
          {
            copiedBytes: this.#recordedBytes,
            readLatencyMs: histograms.percentiles('copyReadLatencyMs'),
            writeLatencyMs: histograms.percentiles('copyWriteLatencyMs'),
            batchBytes: histograms.percentiles('copyBatchBytes'),
          },
          'Initial copy complete',
        );
      }
      return result;
    } finally {
      this.#scheduler = undefined;
      this.#figures = undefined;
      this.#copied = { bytes: pool.counters.bytes, documents: pool.counters.documents };
      // Stopped: what this run copied stays counted until the next run reads the table again.
      if (!finished) this.#recordedBytes += this.#copied.bytes;
      this.#live = undefined;
      await pool.destroy();
    }
  }
}
