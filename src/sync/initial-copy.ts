/**
 * The initial copy, phase by phase, each step recorded in the metadata before the next begins so
 * that a restart continues where this one stopped:
 *
 * 1. `planning`: the source catalog is read and every namespace recorded (once: the snapshot
 *    taken after T0 is kept); each collection and view is created on the destination; each
 *    collection is measured, sampled and split into partitions written to the partition table;
 *    with `beforeDataCopy`/`excludeHashed`, indexes are built.
 * 2. `copying`: the unfinished partitions go through the copy pool; finished ones are skipped,
 *    interrupted ones resume after their checkpoint.
 * 3. `buildingIndexes` (with `afterDataCopy`/`excludeHashedAfterCopy`): indexes are built.
 * 4. `copied`: the initial copy is complete.
 *
 * `stop()` makes `run` return `stopped` at the next safe point (partitions checkpoint first).
 */
import type { Document, MongoClient } from 'mongodb';
import { CopyPool } from '../copy/pool.js';
import { CopyScheduler } from '../copy/scheduler.js';
import type { Logger } from '../log/logger.js';
import { NamespaceRecords, type NamespaceRecord } from '../meta/namespaces.js';
import { PartitionTable } from '../meta/partitions.js';
import { ResumeStore, type ResumeDocument } from '../meta/resume.js';
import type { MetadataStore } from '../meta/store.js';
import type { HistogramSet } from '../metrics/index.js';
import { readSourceCatalog, type SourceNamespace, namespaceRecord } from '../plan/catalog.js';
import { createPlan } from '../plan/collection-options.js';
import { planCollectionCopy } from '../plan/copy-plan.js';
import { buildIndexesOnDestination, createOnDestination, forEachBounded } from '../plan/destination.js';
import { indexesToBuild } from '../plan/indexes.js';
import type { NamespaceSelector } from '../plan/namespaces.js';
import type { CopyProgress } from './copy-progress.js';
import type { StartRequest } from '../domain/start-request.js';
import { namespaceOf } from '../domain/namespaces.js';
import type { SyncPhase } from '../domain/states.js';
import { indexBuildTime, type IndexBuildTime } from '../domain/catalog.js';
import { isNamespaceNotFound } from '../cluster/errors.js';
import { INDEX_BUILD_PARALLELISM, PLANNING_PARALLELISM, type SyncSettings } from '../config/settings.js';

export interface InitialCopyContext {
  source: MongoClient;
  destination: MongoClient;
  /** Connection strings for the copy workers' own clients. */
  sourceUri: string;
  destinationUri: string;
  store: MetadataStore;
  request: StartRequest;
  selector: NamespaceSelector;
  settings: SyncSettings;
  progress: CopyProgress;
  histograms: HistogramSet;
  logger: Logger;
  /** Told of each phase entered (after it is recorded). */
  onPhase?: (phase: SyncPhase) => void;
}

export class InitialCopy {
  readonly #context: InitialCopyContext;
  readonly #resume: ResumeStore;
  readonly #namespaces: NamespaceRecords;
  readonly #partitions: PartitionTable;
  #stopping = false;
  #scheduler: CopyScheduler | undefined;

  constructor(context: InitialCopyContext) {
    this.#context = context;
    this.#resume = new ResumeStore(context.store);
    this.#namespaces = new NamespaceRecords(context.store);
    this.#partitions = new PartitionTable(context.store);
  }

  /** Asks the copy to stop at its next safe point. */
  stop(): void {
    this.#stopping = true;
    this.#scheduler?.stop();
  }

  /** Runs from where the resume document says; `copied` when complete, `stopped` when asked to stop first. */
  async run(resume: ResumeDocument): Promise<'copied' | 'stopped'> {
    let phase: SyncPhase = resume.phase;
    if (phase === 'planning') {
      if (!(await this.#plan(resume.catalogRecorded))) return 'stopped';
      phase = await this.#enter('copying');
    }
    const records = await this.#namespaces.list();
    this.#context.progress.countIndexes(records);
    const buildTime = indexBuildTime(this.#context.request.buildIndexes);
    if (phase === 'copying') {
      if ((await this.#copy(records)) === 'stopped') return 'stopped';
      phase = await this.#enter(buildTime === 'afterCopy' ? 'buildingIndexes' : 'copied');
    } else {
      this.#context.progress.finishCopy((await this.#partitions.summary()).copiedBytes);
    }
    if (phase === 'buildingIndexes') {
      if (!(await this.#buildIndexes(records))) return 'stopped';
      phase = await this.#enter('copied');
    }
    return 'copied';
  }

  async #enter(phase: SyncPhase): Promise<SyncPhase> {
    await this.#resume.enterPhase(phase);
    this.#context.onPhase?.(phase);
    this.#context.logger.info({ phase }, `Initial copy: ${phase}`);
    return phase;
  }

  /** Phase 1; false when stopped before the end. */
  async #plan(catalogRecorded: boolean): Promise<boolean> {
    const { source, destination, request, selector, settings, logger } = this.#context;
    const buildTime = indexBuildTime(request.buildIndexes);
    if (!catalogRecorded) {
      const catalog = await readSourceCatalog(source, selector, logger);
      // A crash may have left part of an earlier snapshot: start it over.
      await this.#partitions.deleteAll();
      await this.#namespaces.replaceAll(catalog.map((ns) => namespaceRecord(ns, buildTime, request)));
      await this.#resume.markCatalogRecorded();
      logger.info({ namespaces: catalog.length }, `Source catalog recorded: ${catalog.length} namespace(s)`);
    }
    const records = await this.#namespaces.list();
    // Collections before views, so a view's source exists when the view is created.
    const ordered = [...records.filter((r) => r.type === 'collection'), ...records.filter((r) => r.type === 'view')];
    for (const record of ordered) {
      if (this.#stopping) return false;
      if (record.created) continue;
      await createOnDestination(destination, record);
      await this.#namespaces.markDone(record, 'created');
    }
    // Measuring and sampling wait on the source: several collections at once.
    await forEachBounded(
      records.filter((record) => !record.partitioned),
      PLANNING_PARALLELISM,
      async (record) => {
        if (this.#stopping) return;
        const collection = source.db(record.db).collection(record.coll);
        const plan = await planCollectionCopy(collection, record.sourceOptions, settings.partitionBytes).catch((error: unknown) => {
          if (!isNamespaceNotFound(error)) throw error;
          // Dropped or renamed since the catalog was read (after T0): nothing to copy; change-event application replays it.
          logger.info(
            { ns: namespaceOf(record) },
            `${namespaceOf(record)} is gone from the source since the catalog was read; nothing to copy`,
          );
          return { stats: { count: 0, size: 0 }, partitions: [] };
        });
        await this.#partitions.writePlan(record, plan.partitions);
        await this.#namespaces.markDone(record, 'partitioned', { sourceCount: plan.stats.count, sourceBytes: plan.stats.size });
        logger.debug({ ns: namespaceOf(record), partitions: plan.partitions.length, bytes: plan.stats.size }, 'Collection planned');
      },
    );
    if (this.#stopping) return false;
    if (buildTime === 'beforeCopy') {
      this.#context.progress.countIndexes(records);
      if (!(await this.#buildIndexes(records))) return false;
    }
    return true;
  }

  /** Phase 2. */
  async #copy(records: readonly NamespaceRecord[]): Promise<'done' | 'stopped'> {
    const { settings, progress, logger } = this.#context;
    const [rows, summary] = await Promise.all([this.#partitions.unfinished(), this.#partitions.summary()]);
    const averageDocumentBytes = new Map(
      records.map((record) => [namespaceOf(record), record.sourceCount > 0 ? record.sourceBytes / record.sourceCount : 0]),
    );
    if (rows.length === 0) {
      progress.finishCopy(summary.copiedBytes);
      return 'done';
    }
    const pool = new CopyPool({
      sourceUri: this.#context.sourceUri,
      destinationUri: this.#context.destinationUri,
      instance: this.#context.store.instance,
      partitions: Math.min(settings.copyWorkers, rows.length),
    });
    logger.info(
      { partitions: summary.total, done: summary.done, remaining: rows.length, atOnce: pool.partitions, threads: pool.threads },
      `Copying ${rows.length} of ${summary.total} partition(s), ${pool.partitions} at once in ${pool.threads} worker thread(s)`,
    );
    // Bytes the table records for the partitions about to run count once: as recorded, then live.
    progress.beginCopy(records, summary.copiedBytes, pool.counters);
    const scheduler = new CopyScheduler({
      pool,
      partitions: this.#partitions,
      settings: settings.copy,
      averageDocumentBytes,
      histograms: this.#context.histograms,
      logger,
    });
    this.#scheduler = scheduler;
    try {
      if (this.#stopping) scheduler.stop();
      const result = await scheduler.run(rows);
      if (result === 'done') progress.finishCopy((await this.#partitions.summary()).copiedBytes);
      return result;
    } finally {
      this.#scheduler = undefined;
      await pool.destroy();
    }
  }

  /** Builds the indexes of every collection that still needs them; false when stopped first. */
  async #buildIndexes(records: readonly NamespaceRecord[]): Promise<boolean> {
    const { destination, progress, logger } = this.#context;
    const pending = records.filter((record) => record.type === 'collection' && !record.indexesBuilt);
    await forEachBounded(pending, INDEX_BUILD_PARALLELISM, async (record) => {
      if (this.#stopping) return;
      const built = await buildIndexesOnDestination(destination, record);
      await this.#namespaces.markDone(record, 'indexesBuilt');
      if (built > 0) {
        progress.indexesBuilt(built);
        logger.debug({ ns: namespaceOf(record), indexes: built }, 'Indexes built');
      }
    });
    return !this.#stopping;
  }
}
