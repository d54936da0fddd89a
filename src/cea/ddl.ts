/**
 * Applying DDL events to the destination, on the main thread, with every lane drained (the
 * applier's barrier), and keeping the namespace records (src/meta/namespaces.ts) in step: they
 * say which namespaces the sync holds and in what temporary form, for commit.
 *
 * Each DDL is applied with the characteristics the copy gives the destination: collections
 * created in temporary form (capped at the largest size, no max), indexes built in temporary form
 * (non-unique, TTL off, visible; none with `buildIndexes: never`, no hashed ones with the
 * `excludeHashed` values), collection options changed by `collMod` as the source changed them
 * except what stays temporary (index `unique`/`prepareUnique`/`hidden`/`expireAfterSeconds`, capped
 * size and max, a clustered or time-series collection's `expireAfterSeconds`: recorded, all
 * restored at commit).
 *
 * Every DDL can be applied twice (a crash between applying it and recording the resume token
 * after it): a create finds its namespace, a drop finds nothing, a rename finds its source gone
 * and its target there, an index already exists or is already gone.
 *
 * Renames and the namespace filter: into the filter (source not selected), the collection is
 * read whole from the source (resync.ts); out of it, the collection is dropped on the
 * destination; within it, renamed. A rename that may have raced the initial copy (its event is
 * older than the copy's completion) is renamed and then read again whole: the copy read the old
 * name by name and may have missed documents. So is a rename of a collection whose earlier read
 * was cut short by this very rename (its record is `incomplete`, resync.ts).
 *
 * On a sharded destination: a collection created under a name `sharding.shardingEntries` lists
 * is sharded with its key as it is created (empty: mongod builds the key's index itself); a
 * source collection sharded during a sharded → sharded sync (`shardCollection`) is sharded on
 * the destination with the same key (src/plan/sharding.ts). A collection sharded on the
 * destination and renamed during the initial copy (rule 8) is sharded anew under its new name
 * and read whole, not renamed there (`#shardUnderNewName`). A rename into another database
 * during a replica set → sharded sync is refused (UnsupportedRename) before anything of it is
 * applied: mongosync does not support it, and it would leave a listed collection unsharded in
 * another database. mongod renames across databases by copying into `<db>.tmpXXXXX.renameCollection`
 * and renaming that within the target database, which is how the event shows it.
 */
import { EJSON, type Binary, type Document } from 'bson';
import {
  collectionEntry,
  collMod,
  dropIndex,
  dropNamespace,
  listIndexSpecs,
  namespaceExists,
  renameNamespace,
} from '../cluster/commands.js';
import { normalizeKeyPattern, type ShardKeyPattern } from '../cluster/shard-key.js';
import { clusterTopology } from '../cluster/sharding.js';
import { indexBuildTime, type IndexPlan } from '../domain/catalog.js';
import { ID_INDEX_NAME, TEMPORARY_TTL_SECONDS } from '../domain/constants.js';
import { namespaceOf, type Namespace } from '../domain/namespaces.js';
import { DdlApplicationFailed, DestinationConflict, UnsupportedRename } from '../errors/errors.js';
import type { NamespaceRecord } from '../meta/namespaces.js';
import { namespaceRecord } from '../plan/catalog.js';
import { createPlan } from '../plan/collection-options.js';
import { buildIndex, createOnDestination } from '../plan/destination.js';
import { distinguished, inBuildOrder, isHashedIndex, temporaryIndex, withoutTwins } from '../plan/indexes.js';
import type { NamespaceSelector } from '../plan/namespaces.js';
import { planDestinationSharding, requestedShardKey, shardOnDestination } from '../plan/sharding.js';
import { resyncCollection, type ResyncContext } from './resync.js';

export interface DdlContext extends ResyncContext {
  selector: NamespaceSelector;
}

/** The DDL operation types change-event application applies. */
export const DDL_OPERATIONS = [
  'create',
  'drop',
  'rename',
  'dropDatabase',
  'createIndexes',
  'dropIndexes',
  'modify',
  'shardCollection',
] as const;
export type DdlOperation = (typeof DDL_OPERATIONS)[number];

export function isDdlOperation(operationType: string): operationType is DdlOperation {
  return (DDL_OPERATIONS as readonly string[]).includes(operationType);
}

/**
 * Collection options `collMod` changes that the destination takes as the source has them. Not
 * `expireAfterSeconds` (a clustered or time-series collection's TTL): the destination has none
 * until commit (collection-options.ts), so a change is only recorded.
 */
const PLAIN_COLLMOD_OPTIONS = ['validator', 'validationLevel', 'validationAction', 'changeStreamPreAndPostImages', 'viewOn', 'pipeline'];

/** Type-exact equality of two index specifications. */
function sameSpec(a: Document, b: Document): boolean {
  return EJSON.stringify(a, { relaxed: false }) === EJSON.stringify(b, { relaxed: false });
}

/** mongod's temporary collection of a rename across databases (`tmp` + 5 characters + `.renameCollection`). */
const CROSS_DATABASE_RENAME_TEMPORARY = /^tmp[A-Za-z0-9]{5}\.renameCollection$/;

function namespaceOfEvent(event: Document, field: 'ns' | 'to'): Namespace {
  const value = event[field] as { db?: unknown; coll?: unknown } | undefined;
  if (typeof value?.db !== 'string' || typeof value.coll !== 'string') {
    throw new DdlApplicationFailed(`${String(event.operationType)} event without a ${field} namespace`);
  }
  return { db: value.db, coll: value.coll };
}

export class DdlApplier {
  readonly #context: DdlContext;
  #destinationSharded: Promise<boolean> | undefined;

  constructor(context: DdlContext) {
    this.#context = context;
  }

  /** Whether the destination is a sharded cluster (asked once). */
  #shardedDestination(): Promise<boolean> {
    this.#destinationSharded ??= clusterTopology(this.#context.destination).then((topology) => topology === 'sharded');
    return this.#destinationSharded;
  }

  /**
   * Applies one DDL event (decoded). `duringCopy`: the event is older than the initial copy's
   * completion, so a rename reads its collection again.
   */
  async apply(event: Document, duringCopy: boolean): Promise<void> {
    const operationType = String(event.operationType) as DdlOperation;
    const description = (event.operationDescription ?? {}) as Document;
    switch (operationType) {
      case 'create':
        return this.#create(
          namespaceOfEvent(event, 'ns'),
          event.nsType === 'view' ? 'view' : 'collection',
          description,
          event.collectionUUID,
        );
      case 'drop':
        return this.#drop(namespaceOfEvent(event, 'ns'));
      case 'dropDatabase':
        return this.#dropDatabase(String((event.ns as { db?: unknown } | undefined)?.db));
      case 'rename':
        return this.#rename(
          namespaceOfEvent(event, 'ns'),
          namespaceOfEvent(event, 'to'),
          event.collectionUUID as Binary | undefined,
          duringCopy,
        );
      case 'createIndexes':
        return this.#createIndexes(namespaceOfEvent(event, 'ns'), (description.indexes ?? []) as Document[]);
      case 'dropIndexes':
        return this.#dropIndexes(
          namespaceOfEvent(event, 'ns'),
          ((description.indexes ?? []) as Document[]).map((index) => String(index.name)),
        );
      case 'modify':
        return this.#modify(namespaceOfEvent(event, 'ns'), description);
      case 'shardCollection':
        return this.#shardCollection(namespaceOfEvent(event, 'ns'), normalizeKeyPattern((description.shardKey ?? {}) as Document));
    }
  }

  /** The record of a namespace, or one made from the source's catalog when none exists. */
  async #record(ns: Namespace): Promise<NamespaceRecord | undefined> {
    return (await this.#context.records.get(ns)) ?? (await this.#recordFromSource(ns));
  }

  async #recordFromSource(ns: Namespace): Promise<NamespaceRecord | undefined> {
    const entry = await collectionEntry(this.#context.source, ns);
    if (entry === undefined) return undefined;
    return this.#newRecord(ns, entry.type === 'view' ? 'view' : 'collection', entry.options, entry.uuid);
  }

  #newRecord(ns: Namespace, type: 'collection' | 'view', options: Document, uuid: unknown, shardKey?: ShardKeyPattern): NamespaceRecord {
    const { request } = this.#context;
    const source = { db: ns.db, coll: ns.coll, type, options, indexes: [], ...(uuid === undefined ? {} : { uuid: uuid as never }) };
    const record = namespaceRecord(source, indexBuildTime(request.buildIndexes), request, shardKey);
    // Nothing to copy: whatever the collection holds arrives as change events.
    return { ...record, created: true, partitioned: true, indexesBuilt: true };
  }

  /**
   * UnsupportedRename for mongod's temporary collection of a rename across databases during a
   * replica set → sharded sync, refused at its `create` (its first event), so nothing of it is
   * applied, or at the rename itself.
   */
  #refuseCrossDatabaseRename(ns: Namespace): void {
    if (this.#context.request.sharding === undefined || !CROSS_DATABASE_RENAME_TEMPORARY.test(ns.coll)) return;
    throw new UnsupportedRename(
      `a collection was renamed into the database ${ns.db} from another database on the source (renameCollection across ` +
        'databases), which a replica set → sharded cluster sync does not support (as mongosync does not); nothing of the ' +
        'rename was applied to the destination. Start the migration again from the beginning',
    );
  }

  async #create(ns: Namespace, type: 'collection' | 'view', description: Document, uuid: unknown): Promise<void> {
    this.#refuseCrossDatabaseRename(ns);
    const { idIndex: _idIndex, ...options } = description;
    const existing = await this.#context.records.get(ns);
    const shardKey = type === 'collection' && (await this.#shardedDestination()) ? requestedShardKey(this.#context.request, ns) : undefined;
    const record = existing ?? this.#newRecord(ns, type, options, uuid, shardKey);
    try {
      await createOnDestination(this.#context.destination, record);
    } catch (error) {
      // Created earlier by the copy from a later catalog snapshot: later events bring it up to date.
      if (!(error instanceof DestinationConflict)) throw error;
      this.#context.logger.debug({ ns: namespaceOf(ns) }, 'create: the namespace already exists on the destination; kept');
    }
    if (existing === undefined) await this.#context.records.put(record);
    await this.#shard(record);
  }

  /** Shards a record's collection on the destination if its record says so and it is not yet. */
  async #shard(record: NamespaceRecord): Promise<void> {
    if (record.sharding === undefined || record.sharded === true) return;
    const { source, destination, records, logger } = this.#context;
    await shardOnDestination(source, destination, record, logger);
    await records.markDone(record, 'sharded');
  }

  /** A collection sharded on a sharded source: sharded on a sharded destination with the same key. */
  async #shardCollection(ns: Namespace, key: ShardKeyPattern): Promise<void> {
    if (!(await this.#shardedDestination()) || Object.keys(key).length === 0) return;
    const record = await this.#record(ns);
    if (record === undefined || record.type !== 'collection') return; // gone since: its drop follows
    if (record.sharding !== undefined && JSON.stringify(record.sharding.key) === JSON.stringify(key)) return this.#shard(record);
    const indexes = (await listIndexSpecs(this.#context.source, ns)) ?? [];
    const sharding = planDestinationSharding(key, indexes, record.indexes, record.sourceOptions.collation as Document | undefined);
    const updated: NamespaceRecord = { ...record, sharding, sharded: false };
    await this.#context.records.put(updated);
    await this.#shard(updated);
  }

  async #drop(ns: Namespace): Promise<void> {
    await dropNamespace(this.#context.destination, ns);
    await this.#context.records.remove(ns);
  }

  async #dropDatabase(db: string): Promise<void> {
    // mongod reports a drop for each collection first; drop what remains of the sync in that database.
    const records = (await this.#context.records.list()).filter((record) => record.db === db);
    for (const record of records) await this.#drop(record);
  }

  async #rename(from: Namespace, to: Namespace, uuid: Binary | undefined, duringCopy: boolean): Promise<void> {
    const { selector, destination, records, logger } = this.#context;
    this.#refuseCrossDatabaseRename(from);
    const fromSelected = selector.selects(from.db, from.coll);
    const toSelected = selector.selects(to.db, to.coll);
    if (fromSelected && !toSelected) {
      logger.info(
        { from: namespaceOf(from), to: namespaceOf(to) },
        `rename: ${namespaceOf(from)} left the sync's namespaces; dropped on the destination`,
      );
      return this.#drop(from);
    }
    if (!fromSelected) {
      logger.info(
        { from: namespaceOf(from), to: namespaceOf(to) },
        `rename: ${namespaceOf(to)} entered the sync's namespaces; reading it whole from the source`,
      );
      await resyncCollection(this.#context, to, uuid);
      return;
    }
    const record = (await records.get(from)) ?? (await records.get(to));
    if (record?.sharding !== undefined && (duringCopy || record.incomplete === true) && (await this.#shardedDestination())) {
      return this.#shardUnderNewName(from, to, record, uuid);
    }
    const renamed = await renameNamespace(destination, from, to);
    if (record !== undefined) await records.put({ ...record, db: to.db, coll: to.coll });
    await records.remove(from);
    if (!renamed && !(await namespaceExists(destination, to))) {
      // Neither name is on the destination: nothing to rename, so take the collection as the source has it.
      await resyncCollection(this.#context, to, uuid);
      return;
    }
    if (duringCopy || record?.incomplete === true) {
      logger.info(
        { from: namespaceOf(from), to: namespaceOf(to) },
        duringCopy
          ? `rename during the initial copy: reading ${namespaceOf(to)} whole from the source again`
          : `rename of a collection whose read was interrupted by it: reading ${namespaceOf(to)} whole from the source`,
      );
      await resyncCollection(this.#context, to, uuid);
    }
  }

  /**
   * Rule 8 (spec §3): a collection sharded on the destination renamed while the copy ran (so
   * before its copy began, or while it ran) or whose read was cut short, which is read whole
   * again anyway: dropped under its old name and sharded anew, with its key and chunks laid out,
   * under the new one, then read whole. Not renamed on the destination: mongos renames a sharded
   * collection only since 5.0, and the re-read brings every document. It stays sharded.
   */
  async #shardUnderNewName(from: Namespace, to: Namespace, record: NamespaceRecord, uuid: Binary | undefined): Promise<void> {
    const { destination, records, logger } = this.#context;
    logger.info(
      { from: namespaceOf(from), to: namespaceOf(to), key: record.sharding?.key },
      `rename of a collection sharded on the destination during the initial copy: ${namespaceOf(to)} is sharded anew and read whole`,
    );
    await dropNamespace(destination, from);
    await dropNamespace(destination, to);
    const { incomplete: _incomplete, ...rest } = record;
    const moved: NamespaceRecord = { ...rest, db: to.db, coll: to.coll, sharded: false };
    await records.put(moved);
    await records.remove(from);
    await createOnDestination(destination, moved);
    await this.#shard(moved);
    await resyncCollection(this.#context, to, uuid);
  }

  /** Whether `buildIndexes` has Ferry build this index on the destination. */
  #builds(spec: Document): boolean {
    const { buildIndexes } = this.#context.request;
    if (buildIndexes === 'never' || spec.name === ID_INDEX_NAME) return false;
    return !((buildIndexes === 'excludeHashed' || buildIndexes === 'excludeHashedAfterCopy') && isHashedIndex(spec));
  }

  async #createIndexes(ns: Namespace, specs: readonly Document[]): Promise<void> {
    const record = await this.#record(ns);
    if (record === undefined || record.type !== 'collection') return; // gone since: its drop follows
    const collation = record.sourceOptions.collation as Document | undefined;
    const added = specs.filter((s) => this.#builds(s)).map((spec) => temporaryIndex(spec, collation));
    const addedNames = new Set(added.map((plan) => plan.name));
    const previous = new Map(record.indexes.map((index) => [index.name, index]));
    const indexes = withoutTwins([...record.indexes.filter((index) => !addedNames.has(index.name)), ...added]);
    // An index that now has a twin is rebuilt in its distinguished form before the twin is built.
    const changed = indexes.filter((plan) => {
      const before = previous.get(plan.name);
      return before !== undefined && !addedNames.has(plan.name) && !sameSpec(before.temporary, plan.temporary);
    });
    const destination = this.#context.destination;
    for (const plan of [...changed, ...inBuildOrder(indexes.filter((plan) => addedNames.has(plan.name)))]) {
      await buildIndex(destination, ns, plan);
    }
    await this.#context.records.put({ ...record, indexes });
  }

  async #dropIndexes(ns: Namespace, names: readonly string[]): Promise<void> {
    for (const name of names) await dropIndex(this.#context.destination, ns, name);
    const record = await this.#context.records.get(ns);
    if (record !== undefined)
      await this.#context.records.put({ ...record, indexes: record.indexes.filter((index) => !names.includes(index.name)) });
  }

  async #modify(ns: Namespace, description: Document): Promise<void> {
    const record = await this.#record(ns);
    if (record === undefined) return; // gone since: its drop follows
    const destination = this.#context.destination;
    const plain = Object.fromEntries(Object.entries(description).filter(([name]) => PLAIN_COLLMOD_OPTIONS.includes(name)));
    if (Object.keys(plain).length > 0) await collMod(destination, ns, plain);
    const sourceOptions = { ...record.sourceOptions, ...plain };
    if (description.cappedSize !== undefined) sourceOptions.size = description.cappedSize;
    if (description.cappedMax !== undefined) sourceOptions.max = description.cappedMax;
    // A collection-level TTL turned off on the source ("off") is one the source no longer lists.
    if (description.expireAfterSeconds === 'off') delete sourceOptions.expireAfterSeconds;
    else if (description.expireAfterSeconds !== undefined) sourceOptions.expireAfterSeconds = description.expireAfterSeconds;
    const plan = createPlan(record.type, sourceOptions);
    let indexes = record.indexes;
    const change = description.index as Document | undefined;
    const current = change === undefined ? undefined : indexes.find((index) => index.name === change.name);
    if (change !== undefined && current !== undefined) {
      const updated = this.#modifiedIndex(current, change, record);
      if (updated.temporary.expireAfterSeconds !== current.temporary.expireAfterSeconds) {
        // A plain index became a TTL index: it is one on the destination too, but nothing expires there before commit.
        await collMod(destination, ns, { index: { name: current.name, expireAfterSeconds: TEMPORARY_TTL_SECONDS } });
      }
      indexes = indexes.map((index) => (index.name === current.name ? updated : index));
    }
    const { expireAfterSeconds: _previous, ...kept } = record;
    const next: NamespaceRecord = { ...kept, sourceOptions, createOptions: plan.options, indexes };
    if (plan.capped !== undefined) next.capped = plan.capped;
    if (plan.expireAfterSeconds !== undefined) next.expireAfterSeconds = plan.expireAfterSeconds;
    await this.#context.records.put(next);
  }

  /** The plan of an index after a `collMod` of its options on the source. */
  #modifiedIndex(current: IndexPlan, change: Document, record: NamespaceRecord): IndexPlan {
    const original: Document = { ...current.original };
    for (const option of ['hidden', 'prepareUnique', 'unique'] as const) {
      if (change[option] === true) original[option] = true;
      else if (change[option] === false) delete original[option];
    }
    if (change.expireAfterSeconds !== undefined) original.expireAfterSeconds = change.expireAfterSeconds;
    if (change.forceNonUnique === true) delete original.unique;
    const updated = temporaryIndex(original, record.sourceOptions.collation as Document | undefined);
    // The destination holds it in its distinguished form until commit (src/plan/indexes.ts).
    return current.changes.distinguished === true ? distinguished(updated) : updated;
  }
}
