/**
 * The planning phase, the first part of a sync's initial copy (`planning` in its resume
 * document), each step recorded before the next so that a restart redoes only what is missing:
 * the source catalog is read and every selected namespace recorded (once: the snapshot taken
 * after T0 is kept), with the shard key of each collection the destination shards (sharding.ts);
 * each collection and view is created on the destination (collections first, so a view's source
 * exists); each collection to shard is sharded, its chunks pre-split and spread over the
 * destination's shards; each collection is measured, sampled and split into `_id`-range
 * partitions written to the partition table; with `beforeDataCopy`/`excludeHashed`, indexes are
 * built. Then the sync enters `copying`.
 */
import { isNamespaceNotFound } from '../cluster/errors.js';
import { clusterTopology, databasePrimaries, shardedCollections, type ShardedCollection } from '../cluster/sharding.js';
import { PLANNING_CHUNK, PLANNING_PARALLELISM } from '../config/settings.js';
import { indexBuildTime } from '../domain/catalog.js';
import { namespaceOf } from '../domain/namespaces.js';
import { copiedInNaturalOrder } from '../domain/start-request.js';
import { NamespaceRecords, type NamespaceRecord } from '../meta/namespaces.js';
import { PartitionTable } from '../meta/partitions.js';
import { ResumeStore } from '../meta/resume.js';
import type { Phase, PhaseOutcome, PhaseStatus, SyncContext } from '../phase/contract.js';
import { namespaceRecord, readSourceCatalog } from './catalog.js';
import { planCollectionCopy, type CollectionCopyPlan } from './copy-plan.js';
import { createOnDestination } from './destination.js';
import { forEachBounded } from './for-each-bounded.js';
import { buildPendingIndexes, IndexBuildProgress } from './index-builds.js';
import { selectorFor } from './namespaces.js';
import { planShardShare, type ShardShareOptions } from './shard-share.js';
import { destinationShardKey, shardOnDestination } from './sharding.js';

export class Planning implements Phase {
  readonly name = 'planning';
  readonly #context: SyncContext;
  readonly #namespaces: NamespaceRecords;
  readonly #partitions: PartitionTable;
  readonly #indexes = new IndexBuildProgress();
  #stopping = false;
  #running: Promise<PhaseOutcome> | undefined;

  constructor(context: SyncContext) {
    this.#context = context;
    this.#namespaces = new NamespaceRecords(context.store);
    this.#partitions = new PartitionTable(context.store);
  }

  async recover(): Promise<void> {
    if (this.#context.syncPhase() === 'planning') this.#indexes.count(await this.#namespaces.list());
  }

  start(): Promise<PhaseOutcome> {
    this.#running = this.#context.syncPhase() === 'planning' ? this.#plan() : Promise.resolve('done');
    return this.#running;
  }

  async stop(): Promise<void> {
    this.#stopping = true;
    await this.#running?.catch(() => undefined);
  }

  status(): PhaseStatus {
    if (this.#context.syncPhase() !== 'planning') return { readyToCommit: true };
    const indexBuilding = this.#indexes.figures();
    return { info: 'collection copy', readyToCommit: false, ...(indexBuilding === undefined ? {} : { figures: { indexBuilding } }) };
  }

  async #plan(): Promise<PhaseOutcome> {
    const { source, destination, request, settings, logger, resume } = this.#context;
    const buildTime = indexBuildTime(request.buildIndexes);
    if (!resume.catalogRecorded) {
      const read = await readSourceCatalog(source.client, selectorFor(request), logger);
      // mongosync migrates no view into a destination that has data of its own.
      const catalog = request.preExistingDestinationData === true ? read.filter((ns) => ns.type !== 'view') : read;
      if (catalog.length < read.length) {
        logger.warn(
          { views: read.length - catalog.length },
          'Views are not synced with preExistingDestinationData: create them on the destination after the cut-over',
        );
      }
      const sharded = await this.#destinationSharding();
      // A crash may have left part of an earlier snapshot: start it over.
      await this.#partitions.deleteAll();
      await this.#namespaces.replaceAll(
        catalog.map((ns) =>
          namespaceRecord(ns, buildTime, request, sharded ? destinationShardKey(request, ns, sharded.source) : undefined),
        ),
      );
      await new ResumeStore(this.#context.store).markCatalogRecorded();
      logger.info({ namespaces: catalog.length }, `Source catalog recorded: ${catalog.length} namespace(s)`);
    }
    const records = await this.#namespaces.list();
    // Several instances: the coordinator alone prepares the destination (once, for every
    // instance); each instance plans its own share of the copy.
    const coordination = this.#context.coordination;
    const prepares = coordination === undefined || coordination.isCoordinator;
    // Each step waits on a cluster round trip per namespace: several namespaces at once, and their
    // records written a chunk at a time, so that thousands of small collections are planned in
    // seconds, not minutes. A chunk's records are written once all of it is done: a crash redoes
    // at most one chunk, and each step can be redone.
    const collections = prepares ? records.filter((r) => r.type === 'collection' && !r.created) : [];
    for (let at = 0; at < collections.length && !this.#stopping; at += PLANNING_CHUNK) {
      const chunk = collections.slice(at, at + PLANNING_CHUNK);
      await forEachBounded(chunk, PLANNING_PARALLELISM, (record) => createOnDestination(destination.client, record));
      await this.#namespaces.markManyDone(
        chunk.map((record) => ({ record })),
        'created',
      );
    }
    // Views after every collection and one at a time, in namespace order, so a view's source exists when it is created.
    for (const view of records.filter((r) => prepares && r.type === 'view' && !r.created)) {
      if (this.#stopping) break;
      await createOnDestination(destination.client, view);
      await this.#namespaces.markDone(view, 'created');
    }
    const unplanned = records.filter((record) => !record.partitioned);
    // A crash may have left part of a plan of these: cleared at once, so each plan is written whole.
    await this.#partitions.deleteOfNamespaces(unplanned.map(namespaceOf));
    for (let at = 0; at < unplanned.length && !this.#stopping; at += PLANNING_CHUNK) {
      await this.#partitionChunk(unplanned.slice(at, at + PLANNING_CHUNK), settings.partitionBytes);
    }
    // Sharded before anything is copied, so the copy loads every shard from its first byte.
    for (const record of prepares ? records : []) {
      if (this.#stopping) return 'stopped';
      if (record.sharding === undefined || record.sharded === true) continue;
      await shardOnDestination(source.client, destination.client, record, logger);
      await this.#namespaces.markDone(record, 'sharded');
    }
    if (this.#stopping) return 'stopped';
    if (buildTime === 'beforeCopy' && prepares) {
      this.#indexes.count(records);
      if (!(await buildPendingIndexes(destination.client, records, this.#namespaces, this.#indexes, logger, () => this.#stopping))) {
        return 'stopped';
      }
    }
    if (coordination !== undefined) {
      // No instance copies before the destination is prepared.
      if (coordination.isCoordinator) await coordination.reach('prepared');
      else if ((await coordination.awaitCoordinator('prepared', () => this.#stopping)) === undefined) return 'stopped';
    }
    await this.#context.enterSyncPhase('copying');
    return 'done';
  }

  /**
   * Whether the destination shards collections: false for a replica set; for a sharded cluster,
   * the source's sharded collections when it is sharded too (their keys are kept).
   */
  async #destinationSharding(): Promise<false | { source?: ReadonlyMap<string, ShardedCollection> }> {
    const { source, destination } = this.#context;
    if ((await clusterTopology(destination.client)) !== 'sharded') return false;
    if ((await clusterTopology(source.client)) !== 'sharded') return {};
    return { source: await shardedCollections(source.client) };
  }

  /** Several instances: what this instance's share of the copy is planned from (shard-share.ts); undefined alone. */
  async #shareOptions(): Promise<Omit<ShardShareOptions, 'partitionBytes' | 'natural'> | undefined> {
    const { coordination, source } = this.#context;
    if (coordination === undefined) return undefined;
    const [sharded, primaries] = await Promise.all([shardedCollections(source.client), databasePrimaries(source.client)]);
    return { router: source.client, shard: { id: coordination.shard.id, client: coordination.shard.cluster.client }, sharded, primaries };
  }

  /** Measures, samples and splits collections into partitions (several at once); records their plans together. */
  async #partitionChunk(chunk: readonly NamespaceRecord[], partitionBytes: number): Promise<void> {
    const { source, logger } = this.#context;
    const { request, settings } = this.#context;
    const planned: { record: NamespaceRecord; plan: CollectionCopyPlan }[] = [];
    const share = await this.#shareOptions();
    await forEachBounded(chunk, PLANNING_PARALLELISM, async (record) => {
      const collection = source.client.db(record.db).collection(record.coll);
      const natural = {
        asked: copiedInNaturalOrder(request, record.db, record.coll),
        detectRandomId: request.detectRandomId !== false,
        randomIdMinBytes: settings.randomIdMinBytes,
      };
      const planning =
        share === undefined
          ? planCollectionCopy(collection, record.sourceOptions, partitionBytes, natural)
          : planShardShare(record, record.sourceOptions, { ...share, partitionBytes, natural });
      const plan = await planning.catch((error: unknown) => {
        if (!isNamespaceNotFound(error)) throw error;
        // Dropped or renamed since the catalog was read (after T0): nothing to copy; change-event application replays it.
        logger.info(
          { ns: namespaceOf(record) },
          `${namespaceOf(record)} is gone from the source since the catalog was read; nothing to copy`,
        );
        return { stats: { count: 0, size: 0 }, partitions: [] };
      });
      planned.push({ record, plan });
      if (plan.partitions[0]?.order === 'natural' && record.sourceOptions.capped !== true) {
        logger.info(
          { ns: namespaceOf(record), bytes: plan.stats.size, asked: natural.asked },
          `${namespaceOf(record)} will be copied in natural order ` +
            `(${natural.asked ? 'copyInNaturalOrder' : 'detectRandomId: its _ids are random'})`,
        );
      }
      logger.debug({ ns: namespaceOf(record), partitions: plan.partitions.length, bytes: plan.stats.size }, 'Collection planned');
    });
    await this.#partitions.writePlans(planned.map(({ record, plan }) => ({ ns: record, partitions: plan.partitions })));
    await this.#namespaces.markManyDone(
      planned.map(({ record, plan }) => ({ record, extra: { sourceCount: plan.stats.count, sourceBytes: plan.stats.size } })),
      'partitioned',
    );
  }
}
