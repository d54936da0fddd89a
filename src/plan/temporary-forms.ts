/**
 * Putting collections that already exist on the destination, in their final form, into the
 * temporary form a sync gives its destination (indexes.ts, collection-options.ts): what a
 * reversed sync's destination (the committed sync's source) needs before any change event is
 * applied to it. A forward sync creates its collections in that form; here they exist, so each
 * difference becomes one `collMod`:
 *
 * - a unique index: `forceNonUnique: true` (the documented conversion back, MongoDB 6.0+;
 *   mongosync's reverse asks for unique indexes in the new format for it);
 * - `prepareUnique`: `prepareUnique: false`;
 * - a TTL index: `expireAfterSeconds` 2147483647;
 * - a hidden index: `hidden: false`;
 * - a capped collection: `cappedSize` at the largest size, and `cappedMax` 0 (no limit) when it
 *   has a limit;
 * - a clustered or time-series collection's own TTL: `expireAfterSeconds: "off"`.
 *
 * The target is the temporary form the namespace record gives (built from these very indexes and
 * options), so what "temporary" means stays in indexes.ts and collection-options.ts, and commit
 * restores it as it restores a forward sync's (src/commit/restore.ts: the source's indexes and
 * options are the final form). The steps are computed from what the destination lists now: an
 * interrupted preparation computes only what remains. A step the destination refuses does not stop
 * the others; every refusal is returned, by namespace and index.
 */
import type { Document } from 'bson';
import type { MongoClient } from 'mongodb';
import { collectionEntry, collMod, listIndexSpecs } from '../cluster/commands.js';
import { namespaceOf, type Namespace } from '../domain/namespaces.js';
import type { NamespaceRecord } from '../meta/namespaces.js';

/** One `collMod` towards the temporary form. */
export interface TemporaryStep {
  ns: Namespace;
  /** The index it changes (absent for a collection option). */
  index?: string;
  /**
   * What it changes, for people: `unique`, `prepareUnique`, `expireAfterSeconds`, `hidden`, `capped size`,
   * `collection expireAfterSeconds`.
   */
  what: string;
  /** The `collMod` options (without `collMod` itself). */
  change: Document;
}

/** A step the destination refused. */
export interface TemporaryStepFailure {
  step: TemporaryStep;
  /** The server's error name. */
  codeName: string;
  message: string;
}

/** Whether a capped collection's listed `max` is a limit (mongod lists "none" as 0, a negative number or 2^31-1). */
function hasMax(max: unknown): boolean {
  if (max === undefined || max === null) return false;
  const value = Number(max);
  return value > 0 && value < 0x7fffffff;
}

/** The steps that turn index `current` (as listed) into `temporary` (its form during a sync). */
export function indexToTemporary(ns: Namespace, current: Document, temporary: Document): TemporaryStep[] {
  const name = String(current.name);
  const steps: TemporaryStep[] = [];
  const step = (what: string, change: Document) => steps.push({ ns, index: name, what, change: { index: { name, ...change } } });
  if (current.unique === true && temporary.unique !== true) step('unique', { forceNonUnique: true });
  if (current.prepareUnique === true && temporary.prepareUnique !== true) step('prepareUnique', { prepareUnique: false });
  if (temporary.expireAfterSeconds !== undefined && Number(current.expireAfterSeconds) !== Number(temporary.expireAfterSeconds)) {
    step('expireAfterSeconds', { expireAfterSeconds: temporary.expireAfterSeconds });
  }
  if (current.hidden === true && temporary.hidden !== true) step('hidden', { hidden: false });
  return steps;
}

/** The steps that turn collection options `current` (as listed) into `temporary` (the record's `createOptions`). */
export function optionsToTemporary(ns: Namespace, current: Document, temporary: Document): TemporaryStep[] {
  const steps: TemporaryStep[] = [];
  if (current.capped === true) {
    const change: Document = {};
    if (temporary.size !== undefined && Number(current.size) !== Number(temporary.size)) change.cappedSize = temporary.size;
    if (hasMax(current.max) && !hasMax(temporary.max)) change.cappedMax = 0;
    if (Object.keys(change).length > 0) steps.push({ ns, what: 'capped size', change });
  }
  if (current.expireAfterSeconds !== undefined && temporary.expireAfterSeconds === undefined) {
    steps.push({ ns, what: 'collection expireAfterSeconds', change: { expireAfterSeconds: 'off' } });
  }
  return steps;
}

/** Every step one recorded collection still needs on `destination` (none for a view, or a collection gone since). */
export async function planTemporaryForms(destination: MongoClient, record: NamespaceRecord): Promise<TemporaryStep[]> {
  if (record.type !== 'collection') return [];
  const ns = { db: record.db, coll: record.coll };
  const [indexes, entry] = await Promise.all([listIndexSpecs(destination, ns), collectionEntry(destination, ns)]);
  if (indexes === undefined || entry === undefined) return [];
  const steps = optionsToTemporary(ns, entry.options, record.createOptions);
  const planned = new Map(record.indexes.map((index) => [index.name, index.temporary]));
  for (const index of indexes) {
    const temporary = planned.get(String(index.name));
    if (temporary !== undefined) steps.push(...indexToTemporary(ns, index, temporary));
  }
  return steps;
}

/** Runs the steps in order; returns the ones the destination refused. */
export async function runTemporarySteps(destination: MongoClient, steps: readonly TemporaryStep[]): Promise<TemporaryStepFailure[]> {
  const failures: TemporaryStepFailure[] = [];
  for (const step of steps) {
    try {
      await collMod(destination, step.ns, step.change);
    } catch (error) {
      const { codeName, message } = error as { codeName?: string; message?: string };
      if (codeName === undefined) throw error; // not a refusal: the cluster could not be reached
      failures.push({ step, codeName, message: message ?? String(error) });
    }
  }
  return failures;
}

/** A refusal as progress and the log say it. */
export function describeTemporaryFailure(failure: TemporaryStepFailure): string {
  const { step } = failure;
  const target = step.index === undefined ? namespaceOf(step.ns) : `index "${step.index}" of ${namespaceOf(step.ns)}`;
  const advice =
    step.what === 'unique'
      ? ' (a unique index built before MongoDB 4.2 may need rebuilding: see "Validate Unique Indexes" in the mongosync documentation)'
      : '';
  return `Reverse could not make ${step.what} temporary on ${target}: ${failure.codeName}: ${failure.message}${advice}`;
}
