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
 * `buildIndexes` (mongosync's start option) decides when:
 * - `afterDataCopy` (default): every index after the collection copy (faster copy).
 * - `beforeDataCopy`: every index before the copy.
 * - `excludeHashed`: before the copy, hashed indexes skipped.
 * - `excludeHashedAfterCopy`: after the copy, hashed indexes skipped.
 * - `never`: only `_id` (created with the collection), never any other.
 */
import type { Document } from 'bson';
import type { IndexPlan, TemporaryChanges } from '../domain/catalog.js';
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

/**
 * The indexes Ferry builds for one collection under `buildIndexes`, in the source's order:
 * none for `never`, hashed ones left out for the `excludeHashed` values, and never `_id` (the
 * destination creates it with the collection, with the collection's collation).
 */
export function indexesToBuild(sourceSpecs: readonly Document[], buildIndexes: BuildIndexes, collectionCollation?: Document): IndexPlan[] {
  if (buildIndexes === 'never') return [];
  const skipHashed = buildIndexes === 'excludeHashed' || buildIndexes === 'excludeHashedAfterCopy';
  return sourceSpecs
    .filter((spec) => spec.name !== ID_INDEX_NAME)
    .filter((spec) => !(skipHashed && isHashedIndex(spec)))
    .map((spec) => temporaryIndex(spec, collectionCollation));
}
