/**
 * Checks what a namespace is, besides its documents: a collection's options and indexes, a view's
 * definition, and that it exists on the destination as on the source. What the destination should
 * hold is what Ferry gives it (src/plan/collection-options.ts, src/plan/indexes.ts): during the sync
 * the temporary form (unique indexes non-unique, TTLs off, hidden indexes visible, capped
 * collections at the largest size...), after commit the source's own; the indexes `buildIndexes`
 * leaves out (all with `never`, hashed ones with `excludeHashed*`) are not expected.
 *
 * Two definitions are equal when they hold the same fields with the same values, numbers compared
 * by value (mongod may store `size: 1024` as an int or a long); field order counts only where it
 * means something (an index's key pattern, a view's pipeline). `v` and `ns` of an index, and a
 * `collation` that is the simple one, are not compared.
 */
import type { Document, Timestamp } from 'bson';
import type { MongoClient } from 'mongodb';
import { compareBsonValues } from '../bson/index.js';
import {
  collectionEntryAt,
  indexSpecsAt,
  listCollectionEntriesAt,
  listDatabaseNames,
  type CollectionEntry,
  type TimedRead,
} from '../cluster/commands.js';
import { ID_INDEX_NAME } from '../domain/constants.js';
import { namespaceOf, type Namespace } from '../domain/namespaces.js';
import { shardKeyOf } from '../cluster/sharding.js';
import { laterTime } from '../domain/time.js';
import type { StartRequest } from '../domain/start-request.js';
import type { MismatchKind } from '../domain/verification.js';
import { cappedMax, createPlan } from '../plan/collection-options.js';
import { indexesToBuild } from '../plan/indexes.js';
import type { NamespaceSelector } from '../plan/namespaces.js';

/** Which form the destination should hold: during the sync, or after commit. */
export type CatalogForm = 'temporary' | 'final';

/** A namespace-level difference: `subject` is `namespace`, `options` or `index:<name>`. */
export interface CatalogDifference {
  ns: string;
  subject: string;
  kind: MismatchKind;
  detail: string;
}

/** Fields whose order means something: inside them, documents are compared in order. */
const ORDERED_FIELDS = new Set(['key', 'pipeline']);

function isSimpleCollation(value: unknown): boolean {
  return typeof value === 'object' && value !== null && (value as Document).locale === 'simple';
}

/** A definition with top-level (and nested, except ordered) fields sorted, and what is not compared left out. */
function canonical(value: unknown, ordered = false): unknown {
  if (Array.isArray(value)) return value.map((item) => canonical(item, ordered));
  if (value === null || typeof value !== 'object' || '_bsontype' in value || value instanceof Date || value instanceof Map) return value;
  const entries = Object.entries(value as Document)
    .filter(([name, field]) => !(name === 'collation' && isSimpleCollation(field)))
    .map(([name, field]) => [name, canonical(field, ordered || ORDERED_FIELDS.has(name))] as const);
  if (!ordered) entries.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return Object.fromEntries(entries);
}

/** A capped collection's "no limit" (absent, 0, negative or 2^31-1, as mongod lists it after `cappedMax: 0`) said one way. */
function withoutNoLimit(doc: Document): Document {
  // Compared, not restored: the copy records 2^31-1 as a limit (src/plan/collection-options.ts), but
  // a collection listed with it and one without `max` hold the same documents.
  const limit = cappedMax(doc.max);
  if (doc.capped !== true || !('max' in doc) || (limit !== undefined && limit < 0x7fffffff)) return doc;
  const { max: _max, ...rest } = doc;
  return rest;
}

export function sameDefinition(a: Document, b: Document): boolean {
  return compareBsonValues(canonical(withoutNoLimit(a)), canonical(withoutNoLimit(b))) === 0;
}

function withoutVersion(spec: Document): Document {
  const { v: _v, ns: _ns, ...rest } = spec;
  return rest;
}

const show = (doc: Document | undefined) => (doc === undefined ? 'none' : JSON.stringify(canonical(doc)));

/** The indexes the destination should hold for a source collection, by name. */
export function expectedIndexes(
  source: readonly Document[],
  options: Document,
  request: StartRequest,
  form: CatalogForm,
): Map<string, Document> {
  const expected = new Map<string, Document>();
  const id = source.find((spec) => spec.name === ID_INDEX_NAME);
  if (id !== undefined) {
    const spec = withoutVersion(id);
    // A clustered collection's TTL shows on its `_id` index; the sync's temporary form has none (collection-options.ts).
    if (form === 'temporary' && createPlan('collection', options).expireAfterSeconds !== undefined) delete spec.expireAfterSeconds;
    expected.set(ID_INDEX_NAME, spec);
  }
  for (const plan of indexesToBuild(source, request.buildIndexes, options.collation as Document | undefined)) {
    expected.set(plan.name, withoutVersion(form === 'final' ? plan.original : plan.temporary));
  }
  return expected;
}

/** The options the destination should list for a source collection or view. */
export function expectedOptions(entry: CollectionEntry, form: CatalogForm): Document {
  if (entry.type === 'view' || form === 'final') return entry.options;
  return createPlan('collection', entry.options).options;
}

/** What one check of a namespace found, and when each cluster was read (the newest reply time of its reads). */
export interface NamespaceCheck {
  differences: CatalogDifference[];
  sourceTime?: Timestamp;
  destinationTime?: Timestamp;
}

/** A namespace's `listCollections` entry on each cluster as already read (`selectedNamespaces`), with the time of that read. */
export interface ListedEntries {
  source: TimedRead<CollectionEntry | undefined>;
  destination: TimedRead<CollectionEntry | undefined>;
}

/**
 * Compares one namespace's definition on the two clusters (see the module comment), reading each
 * cluster's time with it: one difference proves nothing while the destination trails the source
 * (the verifier confirms it, catalog-rechecks.ts). `listed`: the entries a listing of the whole
 * catalog read (with its times), instead of one `listCollections` per cluster for this namespace.
 */
export async function checkNamespace(
  source: MongoClient,
  destination: MongoClient,
  ns: Namespace,
  request: StartRequest,
  form: CatalogForm,
  listed?: ListedEntries,
): Promise<NamespaceCheck> {
  const check: NamespaceCheck = { differences: [] };
  const timed = async <T>(side: 'sourceTime' | 'destinationTime', read: Promise<TimedRead<T>>): Promise<T> => {
    const { value, time } = await read;
    const latest = laterTime(check[side], time);
    if (latest !== undefined) check[side] = latest;
    return value;
  };
  const name = namespaceOf(ns);
  const differences = check.differences;
  const [onSource, onDestination] = await Promise.all([
    timed('sourceTime', listed === undefined ? collectionEntryAt(source, ns) : Promise.resolve(listed.source)),
    timed('destinationTime', listed === undefined ? collectionEntryAt(destination, ns) : Promise.resolve(listed.destination)),
  ]);
  if (onSource === undefined && onDestination === undefined) return check;
  if (onSource === undefined) {
    differences.push({
      ns: name,
      subject: 'namespace',
      kind: 'extra',
      detail: `the destination has a ${onDestination!.type} the source does not`,
    });
    return check;
  }
  if (onDestination === undefined) {
    differences.push({ ns: name, subject: 'namespace', kind: 'missing', detail: `the destination lacks this ${onSource.type}` });
    return check;
  }
  if (onSource.type !== onDestination.type) {
    differences.push({
      ns: name,
      subject: 'options',
      kind: 'option',
      detail: `a ${onSource.type} on the source, a ${onDestination.type} on the destination`,
    });
    return check;
  }
  const wanted = expectedOptions(onSource, form);
  if (!sameDefinition(wanted, onDestination.options)) {
    const what = onSource.type === 'view' ? 'view definition' : 'collection options';
    differences.push({
      ns: name,
      subject: 'options',
      kind: 'option',
      detail: `${what} differ: expected ${show(wanted)}, the destination has ${show(onDestination.options)}`,
    });
  }
  if (onSource.type !== 'collection') return check;
  const [sourceIndexes, destinationIndexes] = await Promise.all([
    timed('sourceTime', indexSpecsAt(source, ns)),
    timed('destinationTime', indexSpecsAt(destination, ns)),
  ]);
  // Dropped while being looked at: the change stream will say so, and the namespace is checked again.
  if (sourceIndexes === undefined || destinationIndexes === undefined) return check;
  const expected = expectedIndexes(sourceIndexes, onSource.options, request, form);
  const actual = new Map(destinationIndexes.map((spec) => [String(spec.name), withoutVersion(spec)]));
  // Read only when an index is on the destination alone: most checks need no extra round trip.
  let shardKey: Promise<Document | undefined> | undefined;
  for (const index of new Set([...expected.keys(), ...actual.keys()])) {
    const want = expected.get(index);
    const have = actual.get(index);
    if (want !== undefined && have !== undefined && sameDefinition(want, have)) continue;
    // An index on the destination's shard key that the source lacks is the one sharding needed
    // (created with createSupportingIndexes, or a placeholder for one buildIndexes leaves out).
    if (want === undefined) {
      const key = await (shardKey ??= shardKeyOf(destination, ns));
      if (key !== undefined && sameDefinition({ key: have!.key }, { key })) continue;
    }
    const detail =
      have === undefined
        ? `index ${JSON.stringify(index)} missing on the destination`
        : want === undefined
          ? `index ${JSON.stringify(index)} only on the destination`
          : `index ${JSON.stringify(index)} differs: expected ${show(want)}, the destination has ${show(have)}`;
    differences.push({ ns: name, subject: `index:${index}`, kind: 'index', detail });
  }
  return check;
}

/** A namespace `selectedNamespaces` found, with the time of the listing that found it. */
export type SelectedNamespace = CollectionEntry & Namespace & { listedAt?: Timestamp };

/** Every namespace `selector` picks on a cluster (collections and views), by `db.coll`. */
export async function selectedNamespaces(client: MongoClient, selector: NamespaceSelector): Promise<Map<string, SelectedNamespace>> {
  const found = new Map<string, SelectedNamespace>();
  for (const db of (await listDatabaseNames(client)).filter((name) => selector.selectsDatabase(name))) {
    const { value: entries, time } = await listCollectionEntriesAt(client, db);
    for (const entry of entries) {
      if (!selector.selects(db, entry.name) || (entry.type !== 'collection' && entry.type !== 'view')) continue;
      found.set(`${db}.${entry.name}`, { ...entry, db, coll: entry.name, ...(time === undefined ? {} : { listedAt: time }) });
    }
  }
  return found;
}

/**
 * What two listings (`selectedNamespaces` of each cluster) say of one namespace, as `checkNamespace`
 * takes it. A namespace absent from a listing is absent as of that database's listing, whose time
 * is not known here: the check then reads it itself (undefined).
 */
export function listedEntries(
  name: string,
  onSource: ReadonlyMap<string, SelectedNamespace>,
  onDestination: ReadonlyMap<string, SelectedNamespace>,
): ListedEntries | undefined {
  const source = onSource.get(name);
  const destination = onDestination.get(name);
  if (source === undefined || destination === undefined) return undefined;
  const timed = (entry: SelectedNamespace): TimedRead<CollectionEntry> => {
    const { db: _db, coll: _coll, listedAt, ...listed } = entry;
    return { value: listed, ...(listedAt === undefined ? {} : { time: listedAt }) };
  };
  return { source: timed(source), destination: timed(destination) };
}
