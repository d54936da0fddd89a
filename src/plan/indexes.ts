/**
 * Which of a collection's indexes Ferry builds on the destination, when, and in what form.
 *
 * During a sync the destination holds indexes in a temporary form (spec §4.2, reference.md), so
 * that the copy and change-event application can never be refused or lose data because of them:
 * unique indexes are built non-unique (documents arrive out of order and transiently duplicate
 * keys), TTL indexes expire after 2147483647 seconds (nothing the source still holds may vanish),
 * hidden indexes are built visible, and `prepareUnique` is left off (it would refuse the same
 * transient duplicates). What was changed is recorded (`TemporaryChanges`) so that commit can put
 * each index back exactly as the source has it.
 *
 * Two source indexes may share a key pattern when their signatures differ (mongod 5.0+: unique,
 * sparse, partial filter, collation, wildcard projection), e.g. one unique and one not. Made
 * non-unique, the unique one would be the other's twin, which mongod refuses (IndexOptionsConflict):
 * so the other one is built with a temporary difference instead (`distinguished`: without `sparse`,
 * with `_id: {$exists: true}` added to its partial filter, which every document matches), and
 * commit rebuilds it as the source has it once the first is unique again (src/commit/restore.ts).
 * Hidden, TTL and `prepareUnique` are not part of a signature, so two source indexes never differ
 * in them alone.
 *
 * `buildIndexes` (mongosync's start option) decides when:
 * - `afterDataCopy` (default): every index after the collection copy (faster copy).
 * - `beforeDataCopy`: every index before the copy.
 * - `excludeHashed`: before the copy, hashed indexes skipped.
 * - `excludeHashedAfterCopy`: after the copy, hashed indexes skipped.
 * - `never`: only `_id` (created with the collection), never any other.
 */
import { EJSON, type Document } from 'bson';
import type { IndexPlan, TemporaryChanges } from '../domain/catalog.js';
import { DestinationConflict } from '../errors/errors.js';
import { ID_INDEX_NAME, TEMPORARY_TTL_SECONDS } from '../domain/constants.js';
import type { BuildIndexes } from '../domain/start-request.js';

/** Whether any field of the index's key is `hashed`. */
export function isHashedIndex(spec: Document): boolean {
  return Object.values((spec.key ?? {}) as Document).some((direction) => direction === 'hashed');
}

/**
 * The temporary form of one source index specification (see the module comment).
 *
 * `listIndexes` shows no `collation` for an index with the simple collation, but an index created
 * without one takes the collection's default collation: on a collection with a non-simple default
 * collation (`collectionCollation`), such an index is created with `collation: {locale: 'simple'}`
 * so that it stays simple (as mongod's documentation asks, e.g. for text indexes).
 */
export function temporaryIndex(sourceSpec: Document, collectionCollation?: Document): IndexPlan {
  const { v: _v, ns: _ns, ...original } = sourceSpec;
  const { unique, hidden, prepareUnique, ...temporary } = original;
  if (temporary.collation === undefined && collectionCollation !== undefined && collectionCollation.locale !== 'simple') {
    temporary.collation = { locale: 'simple' };
  }
  const changes: TemporaryChanges = {};
  if (unique === true) changes.unique = true;
  if (hidden === true) changes.hidden = true;
  if (prepareUnique === true) changes.prepareUnique = true;
  if (original.expireAfterSeconds !== undefined) {
    changes.expireAfterSeconds = Number(original.expireAfterSeconds);
    temporary.expireAfterSeconds = TEMPORARY_TTL_SECONDS;
  }
  return { name: String(original.name), original, temporary, changes };
}

/** A value with every document's fields sorted, for comparisons where field order means nothing. */
function sortedFields(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortedFields);
  if (value === null || typeof value !== 'object' || '_bsontype' in value) return value;
  return Object.fromEntries(
    Object.entries(value as Document)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
      .map(([name, inner]) => [name, sortedFields(inner)]),
  );
}

/**
 * What tells two indexes apart on mongod 5.0+ (IndexDescriptor::compareIndexOptions): the key
 * pattern (in order), `unique` and `sparse` (absent = false), the partial filter, the collation
 * (none = simple) and a wildcard projection. Two indexes with one signature cannot coexist.
 */
export function indexSignature(spec: Document): string {
  const collation = spec.collation as Document | undefined;
  return EJSON.stringify(
    [
      spec.key ?? {},
      spec.unique === true,
      spec.sparse === true,
      sortedFields(spec.partialFilterExpression ?? null),
      collation === undefined || collation.locale === 'simple' ? null : sortedFields(collation),
      sortedFields(spec.wildcardProjection ?? null),
    ],
    { relaxed: false },
  );
}

/** The filter every document matches (every document has an `_id`), added to tell twins apart. */
const EVERY_DOCUMENT = { $exists: true };

/** `plan` with its temporary form made different from its twin's (see the module comment). */
export function distinguished(plan: IndexPlan): IndexPlan {
  const { sparse: _sparse, ...temporary } = plan.temporary;
  const filter = { ...((temporary.partialFilterExpression as Document | undefined) ?? {}) };
  // Top-level conditions are ANDed; an `_id` condition of the source's own goes into `$and`.
  if (filter._id === undefined) filter._id = EVERY_DOCUMENT;
  else filter.$and = [...((filter.$and as Document[] | undefined) ?? []), { _id: EVERY_DOCUMENT }];
  temporary.partialFilterExpression = filter;
  return { ...plan, temporary, changes: { ...plan.changes, distinguished: true } };
}

/**
 * The plans of one collection's indexes with no two temporary forms of one signature: of twins,
 * the one that is unique on the source keeps its form, the others are `distinguished`.
 */
export function withoutTwins(plans: readonly IndexPlan[]): IndexPlan[] {
  const result = [...plans];
  const bySignature = new Map<string, number[]>();
  result.forEach((plan, i) => {
    const signature = indexSignature(plan.temporary);
    bySignature.set(signature, [...(bySignature.get(signature) ?? []), i]);
  });
  for (const twins of bySignature.values()) {
    if (twins.length < 2) continue;
    const kept = twins.find((i) => result[i]!.changes.unique === true) ?? twins[0]!;
    for (const i of twins) if (i !== kept) result[i] = distinguished(result[i]!);
  }
  const signatures = new Map<string, string>();
  for (const plan of result) {
    const other = signatures.get(indexSignature(plan.temporary));
    if (other !== undefined) {
      throw new DestinationConflict(
        `indexes "${other}" and "${plan.name}" cannot both be built in their temporary form during the sync ` +
          '(they would be identical); drop one on the source or build indexes with buildIndexes: "never"',
      );
    }
    signatures.set(indexSignature(plan.temporary), plan.name);
  }
  return result;
}

/**
 * The indexes Ferry builds for one collection under `buildIndexes`, in the source's order:
 * none for `never`, hashed ones left out for the `excludeHashed` values, and never `_id` (the
 * destination creates it with the collection, with the collection's collation).
 */
export function indexesToBuild(sourceSpecs: readonly Document[], buildIndexes: BuildIndexes, collectionCollation?: Document): IndexPlan[] {
  if (buildIndexes === 'never') return [];
  const skipHashed = buildIndexes === 'excludeHashed' || buildIndexes === 'excludeHashedAfterCopy';
  return withoutTwins(
    sourceSpecs
      .filter((spec) => spec.name !== ID_INDEX_NAME)
      .filter((spec) => !(skipHashed && isHashedIndex(spec)))
      .map((spec) => temporaryIndex(spec, collectionCollation)),
  );
}

/** Plans in the order they can be built one by one next to each other: `distinguished` ones first. */
export function inBuildOrder(plans: readonly IndexPlan[]): IndexPlan[] {
  return [...plans.filter((plan) => plan.changes.distinguished === true), ...plans.filter((plan) => plan.changes.distinguished !== true)];
}
