/**
 * Restoring, at commit, the characteristics the destination held in temporary form during the
 * sync (src/plan/indexes.ts, src/plan/collection-options.ts): for every collection the sync holds,
 * each index is made what its namespace record says the source had at the commit point (change-
 * event application keeps the records in step with the source's DDL through the commit point), a
 * capped collection gets its size and document limit back, and a clustered or time-series
 * collection its collection-level TTL:
 *
 * - unique: `collMod` `prepareUnique: true`, then `unique: true` (the documented conversion; it
 *   fails with CannotConvertIndexToUnique if the destination holds duplicates);
 * - `prepareUnique` alone: `collMod` `prepareUnique: true`;
 * - TTL: `collMod` `expireAfterSeconds` back to the source's value;
 * - hidden: `collMod` `hidden: true`;
 * - capped: `collMod` `cappedSize` and `cappedMax`;
 * - collection-level TTL: `collMod` `expireAfterSeconds` (top level) back to the source's value,
 *   which mongod accepts on any collection clustered by `_id` that has none yet;
 * - an index built `distinguished` (the twin of a unique index on the same key): dropped and
 *   built as the source has it, after every `collMod` (its twin must be unique first); so is an
 *   index the destination lacks.
 *
 * The originals come from the records, never from the destination's values: a source value equal
 * to a temporary one (a TTL of 2147483647 seconds, a capped `max` of 2^31-1, a size of 1 PB) is
 * still the source's. Each step is computed by comparing the record with the destination (what
 * already matches needs nothing), so a commit interrupted half-way computes only what remains. A
 * step that fails does not stop the others (but an index of that collection is not rebuilt after
 * it); every failure is returned by namespace and index name.
 *
 * On a sharded destination each shard's indexes are compared (`$indexStats`: a `collMod` through
 * mongos runs on every shard, but only the shards say whether each of them took it), so a
 * characteristic is restored, and found restored, on every shard. A placeholder index built only
 * to support a shard key (src/plan/sharding.ts) is dropped, except with `buildIndexes: never`
 * (spec §4.1 rule 9: the collection keeps it, having no other), and wherever no other index
 * supports the key.
 */
import type { Document } from 'bson';
import type { MongoClient } from 'mongodb';
import { collectionEntry, collMod, createIndexes, dropIndex, listIndexSpecs } from '../cluster/commands.js';
import { indexSpecsByShard } from '../cluster/sharding.js';
import { supportsShardKey } from '../cluster/shard-key.js';
import type { IndexPlan } from '../domain/catalog.js';
import type { Namespace } from '../domain/namespaces.js';
import { type NamespaceRecord } from '../meta/namespaces.js';
import { namespaceOf } from '../domain/namespaces.js';
import { indexSignature } from '../plan/indexes.js';

/** One `collMod` that puts one characteristic back, or one index built again as the source has it. */
export interface RestoreStep {
  ns: { db: string; coll: string };
  /** The index it restores (absent for a collection option: capped size, collection-level TTL). */
  index?: string;
  /**
   * What it restores, for people: `unique`, `prepareUnique`, `expireAfterSeconds`, `hidden`,
   * `capped size`, `collection expireAfterSeconds`, `index` (built again).
   */
  what: string;
  /** The `collMod` options (without `collMod` itself). */
  change?: Document;
  /** The index specification to build, after dropping the index of that name (a `build` step). */
  build?: Document;
  /** Drop the index instead (a shard key's placeholder). */
  drop?: true;
}

/** A step the destination refused. */
export interface RestoreFailure {
  step: RestoreStep;
  /** The server's error name (e.g. CannotConvertIndexToUnique). */
  codeName: string;
  message: string;
}

function byName(indexes: readonly Document[]): Map<string, Document> {
  return new Map(indexes.map((index) => [String(index.name), index]));
}

/**
 * Whether a capped collection's `max` is "no limit". Only a missing, zero or negative one: mongod
 * lists 2^31-1 for a limit given as 0 or less, but 2^31-1 is also a limit a user can set, and it
 * is what the source lists either way, so it is restored as it is.
 */
function noMax(max: unknown): boolean {
  return max === undefined || max === null || Number(max) <= 0;
}

/** The `collMod` steps one index needs to become what the source has. */
export function indexSteps(ns: { db: string; coll: string }, source: Document, destination: Document): RestoreStep[] {
  const steps: RestoreStep[] = [];
  const name = String(source.name);
  const step = (what: string, change: Document) => steps.push({ ns, index: name, what, change: { index: { name, ...change } } });
  const wantsUnique = source.unique === true;
  const wantsPrepare = source.prepareUnique === true || wantsUnique;
  if (wantsPrepare && destination.prepareUnique !== true && destination.unique !== true) step('prepareUnique', { prepareUnique: true });
  if (wantsUnique && destination.unique !== true) step('unique', { unique: true });
  if (source.expireAfterSeconds !== undefined && Number(source.expireAfterSeconds) !== Number(destination.expireAfterSeconds)) {
    step('expireAfterSeconds', { expireAfterSeconds: source.expireAfterSeconds });
  }
  if ((source.hidden === true) !== (destination.hidden === true)) step('hidden', { hidden: source.hidden === true });
  return steps;
}

/** The step a capped collection needs to get the source's size and limit back, if any. */
export function cappedSteps(ns: { db: string; coll: string }, source: Document, destination: Document): RestoreStep[] {
  if (source.capped !== true || destination.capped !== true) return [];
  const change: Document = {};
  if (Number(source.size) !== Number(destination.size)) change.cappedSize = source.size;
  if (!noMax(source.max) && Number(source.max) !== Number(destination.max)) change.cappedMax = source.max;
  return Object.keys(change).length === 0 ? [] : [{ ns, what: 'capped size', change }];
}

/**
 * The step a clustered or time-series collection needs to get the source's collection-level TTL
 * back, if any (the destination was created without one, see collection-options.ts). One the
 * source no longer has is turned `off`.
 */
export function collectionTtlSteps(ns: { db: string; coll: string }, source: Document, destination: Document): RestoreStep[] {
  const wanted = source.expireAfterSeconds;
  const current = destination.expireAfterSeconds;
  if (wanted === undefined && current === undefined) return [];
  if (wanted !== undefined && Number(wanted) === Number(current)) return [];
  return [{ ns, what: 'collection expireAfterSeconds', change: { expireAfterSeconds: wanted ?? 'off' } }];
}

/** The step that builds an index again as the source has it, when the destination lacks it or holds it distinguished. */
export function buildSteps(ns: { db: string; coll: string }, plan: IndexPlan, destination: Document | undefined): RestoreStep[] {
  if (destination !== undefined && (plan.changes.distinguished !== true || indexSignature(destination) === indexSignature(plan.original))) {
    return [];
  }
  return [{ ns, index: plan.name, what: 'index', build: plan.original }];
}

/** Every step the collections of `records` still need on `destination` (see the module comment). */
export async function planRestore(
  destination: MongoClient,
  records: readonly NamespaceRecord[],
  options: RestoreOptions = {},
): Promise<RestoreStep[]> {
  const steps: RestoreStep[] = [];
  const builds: RestoreStep[] = [];
  for (const record of records.filter((r) => r.type === 'collection')) {
    const ns = { db: record.db, coll: record.coll };
    const [destinationLists, destinationOptions] = await Promise.all([
      destinationIndexLists(destination, ns, options.perShard === true),
      collectionOptions(destination, ns),
    ]);
    if (destinationOptions === undefined) continue; // not on the destination: nothing to restore on it
    for (const destinationIndexes of destinationLists) {
      const onDestination = byName(destinationIndexes);
      for (const plan of record.indexes) {
        const counterpart = onDestination.get(plan.name);
        const build = buildSteps(ns, plan, counterpart);
        if (build.length > 0) builds.push(...build);
        else if (counterpart !== undefined) steps.push(...indexSteps(ns, plan.original, counterpart));
      }
    }
    const placeholder = record.sharding?.supportingIndex.origin === 'placeholder' ? String(record.sharding.supportingIndex.spec.name) : '';
    // Dropped only where another index supports the key (mongod refuses to drop the last one:
    // with `excludeHashed`, a hashed supporting index is never built, and the placeholder stays).
    const key = record.sharding?.key ?? {};
    const droppable = (list: Document[]) =>
      list.some((index) => index.name === placeholder) && list.some((index) => index.name !== placeholder && supportsShardKey(index, key));
    if (options.dropPlaceholders === true && destinationLists.some(droppable)) {
      steps.push({ ns, index: placeholder, what: 'placeholder index', drop: true });
    }
    steps.push(
      ...cappedSteps(ns, record.sourceOptions, destinationOptions),
      ...collectionTtlSteps(ns, record.sourceOptions, destinationOptions),
    );
  }
  return distinct([...steps, ...builds]);
}

async function listIndexes(client: MongoClient, ns: Namespace): Promise<Document[]> {
  return (await listIndexSpecs(client, ns)) ?? [];
}

async function collectionOptions(client: MongoClient, ns: Namespace): Promise<Document | undefined> {
  return (await collectionEntry(client, ns))?.options;
}

/** How `planRestore` looks at the destination. */
export interface RestoreOptions {
  /** The destination is sharded: compare every shard's indexes. Default false. */
  perShard?: boolean;
  /** Drop shard keys' placeholder indexes (all but `buildIndexes: never`). Default false. */
  dropPlaceholders?: boolean;
}

/** The destination's indexes of `ns`: one list, or one per shard. */
async function destinationIndexLists(destination: MongoClient, ns: Namespace, perShard: boolean): Promise<Document[][]> {
  if (!perShard) return [await listIndexes(destination, ns)];
  return [...(await indexSpecsByShard(destination, ns)).values()];
}

/** Steps once each: the same step found on several shards is one command (mongos runs it on all). */
function distinct(steps: readonly RestoreStep[]): RestoreStep[] {
  const seen = new Set<string>();
  return steps.filter((step) => {
    const key = JSON.stringify([namespaceOf(step.ns), step.index ?? null, step.what]);
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
}

/**
 * Runs the steps in order (an index's `prepareUnique` before its `unique`, builds last); returns
 * the failures. No index of a collection is built after a step of that collection failed: a twin
 * not yet unique would collide with it.
 */
export async function runRestore(destination: MongoClient, steps: readonly RestoreStep[]): Promise<RestoreFailure[]> {
  const failures: RestoreFailure[] = [];
  const failed = (step: RestoreStep, sameIndex: boolean) =>
    failures.some((f) => namespaceOf(f.step.ns) === namespaceOf(step.ns) && (!sameIndex || f.step.index === step.index));
  for (const step of steps) {
    // A unique conversion cannot run once its prepareUnique failed.
    if (step.what === 'unique' && failed(step, true)) continue;
    if (step.build !== undefined && failed(step, false)) continue;
    try {
      if (step.drop === true) {
        await dropIndex(destination, step.ns, step.index!);
      } else if (step.build !== undefined) {
        await dropIndex(destination, step.ns, String(step.build.name));
        await createIndexes(destination, step.ns, [step.build]);
      } else {
        await collMod(destination, step.ns, step.change ?? {});
      }
    } catch (error) {
      const { codeName, message } = error as { codeName?: string; message?: string };
      failures.push({ step, codeName: codeName ?? 'Error', message: message ?? String(error) });
    }
  }
  return failures;
}

/** A failure as progress and the log say it. */
export function describeFailure(failure: RestoreFailure): string {
  const { step } = failure;
  const target = step.index === undefined ? namespaceOf(step.ns) : `index "${step.index}" of ${namespaceOf(step.ns)}`;
  const advice =
    failure.codeName === 'CannotConvertIndexToUnique' || failure.codeName === 'DuplicateKey'
      ? ': the destination holds documents with duplicate keys for it; remove ' +
        'the duplicates on the destination, and the commit completes by itself'
      : '';
  return `Commit could not restore ${step.what} on ${target}: ${failure.codeName}: ${failure.message}${advice}`;
}
