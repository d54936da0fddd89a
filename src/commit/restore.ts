/**
 * Restoring, at commit, the characteristics the destination held in temporary form during the
 * sync (src/plan/indexes.ts, src/plan/collection-options.ts): for every collection the sync holds
 * (its namespace records), each index is made what the source's index of that name is now
 * (writes stopped at the commit point), a capped collection gets the source's size and
 * document limit back, and a clustered or time-series collection its collection-level TTL:
 *
 * - unique: `collMod` `prepareUnique: true`, then `unique: true` (the documented conversion; it
 *   fails with CannotConvertIndexToUnique if the destination holds duplicates);
 * - `prepareUnique` alone: `collMod` `prepareUnique: true`;
 * - TTL: `collMod` `expireAfterSeconds` back to the source's value;
 * - hidden: `collMod` `hidden: true`;
 * - capped: `collMod` `cappedSize` and `cappedMax`;
 * - collection-level TTL: `collMod` `expireAfterSeconds` (top level) back to the source's value,
 *   which mongod accepts on any collection clustered by `_id` that has none yet.
 *
 * The steps are computed from both clusters each time (what already matches needs nothing), so a
 * commit interrupted half-way computes only what remains. A step that fails does not stop the
 * others; every failure is returned by namespace and index name.
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
import { collectionEntry, collMod, dropIndex, listIndexSpecs } from '../cluster/commands.js';
import { indexSpecsByShard } from '../cluster/sharding.js';
import { supportsShardKey } from '../cluster/shard-key.js';
import type { Namespace } from '../domain/namespaces.js';
import { type NamespaceRecord } from '../meta/namespaces.js';
import { namespaceOf } from '../domain/namespaces.js';
import { ID_INDEX_NAME } from '../domain/constants.js';

/** One `collMod` that puts one characteristic back. */
export interface RestoreStep {
  ns: { db: string; coll: string };
  /** The index it restores (absent for a collection option: capped size, collection-level TTL). */
  index?: string;
  /**
   * What it restores, for people: `unique`, `prepareUnique`, `expireAfterSeconds`, `hidden`,
   * `capped size`, `collection expireAfterSeconds`.
   */
  what: string;
  /** The `collMod` options (without `collMod` itself). */
  change: Document;
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

/** Whether mongod reports "no limit" for a capped collection's `max`. */
function noMax(max: unknown): boolean {
  if (max === undefined || max === null) return true;
  const value = Number(max);
  return value <= 0 || value >= 0x7fffffff;
}

/** The steps one index needs to become what the source has. */
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

/** Steps once each: the same step found on several shards is one `collMod` (mongos runs it on all). */
function distinct(steps: readonly RestoreStep[]): RestoreStep[] {
  const seen = new Set<string>();
  return steps.filter((step) => {
    const key = JSON.stringify([namespaceOf(step.ns), step.index ?? null, step.what]);
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
}

/** Every step the collections of `records` still need (see the module comment). */
export async function planRestore(
  source: MongoClient,
  destination: MongoClient,
  records: readonly NamespaceRecord[],
  options: RestoreOptions = {},
): Promise<RestoreStep[]> {
  const steps: RestoreStep[] = [];
  for (const record of records.filter((r) => r.type === 'collection')) {
    const ns = { db: record.db, coll: record.coll };
    const [sourceIndexes, destinationLists, sourceOptions, destinationOptions] = await Promise.all([
      listIndexes(source, ns),
      destinationIndexLists(destination, ns, options.perShard === true),
      collectionOptions(source, ns),
      collectionOptions(destination, ns),
    ]);
    for (const destinationIndexes of destinationLists) {
      const onDestination = byName(destinationIndexes);
      for (const index of sourceIndexes) {
        const counterpart = onDestination.get(String(index.name));
        if (index.name === ID_INDEX_NAME || counterpart === undefined) continue; // not built (buildIndexes)
        steps.push(...indexSteps(ns, index, counterpart));
      }
    }
    const placeholder = record.sharding?.supportingIndex.origin === 'placeholder' ? String(record.sharding.supportingIndex.spec.name) : '';
    // Dropped only where another index supports the key (mongod refuses to drop the last one:
    // with `excludeHashed`, a hashed supporting index is never built, and the placeholder stays).
    const key = record.sharding?.key ?? {};
    const droppable = (list: Document[]) =>
      list.some((index) => index.name === placeholder) && list.some((index) => index.name !== placeholder && supportsShardKey(index, key));
    if (options.dropPlaceholders === true && destinationLists.some(droppable)) {
      steps.push({ ns, index: placeholder, what: 'placeholder index', change: {}, drop: true });
    }
    if (sourceOptions !== undefined && destinationOptions !== undefined) {
      steps.push(...cappedSteps(ns, sourceOptions, destinationOptions), ...collectionTtlSteps(ns, sourceOptions, destinationOptions));
    }
  }
  return distinct(steps);
}

/** Runs the steps in order (an index's `prepareUnique` before its `unique`); returns the failures. */
export async function runRestore(destination: MongoClient, steps: readonly RestoreStep[]): Promise<RestoreFailure[]> {
  const failures: RestoreFailure[] = [];
  for (const step of steps) {
    // A unique conversion cannot run once its prepareUnique failed.
    if (step.what === 'unique' && failures.some((f) => f.step.index === step.index && namespaceOf(f.step.ns) === namespaceOf(step.ns)))
      continue;
    try {
      if (step.drop === true) await dropIndex(destination, step.ns, step.index!);
      else await collMod(destination, step.ns, step.change);
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
    failure.codeName === 'CannotConvertIndexToUnique'
      ? ': the destination holds documents with duplicate keys for it; remove ' +
        'the duplicates on the destination, and the commit completes by itself'
      : '';
  return `Commit could not restore ${step.what} on ${target}: ${failure.codeName}: ${failure.message}${advice}`;
}
