/**
 * Preparing the destination: each collection created with its source options in temporary form
 * (collection-options.ts), each view as a view, and each collection's indexes built in temporary
 * form (indexes.ts) with one `createIndexes` per collection, a bounded number at once.
 *
 * Every step can be repeated after a crash: an existing collection or view is accepted when it is
 * exactly what Ferry would create (an earlier attempt made it), and refused with
 * `DestinationConflict` otherwise; `createIndexes` with indexes that already exist is a no-op.
 */
import { EJSON, type Document } from 'bson';
import type { MongoClient } from 'mongodb';
import { collectionEntry, createIndexes, createNamespace, dropIndex } from '../cluster/commands.js';
import { isIndexConflict, isNamespaceExists } from '../cluster/errors.js';
import type { IndexPlan } from '../domain/catalog.js';
import { namespaceOf, type Namespace } from '../domain/namespaces.js';
import { DestinationConflict } from '../errors/errors.js';
import type { NamespaceRecord } from '../meta/namespaces.js';

/** Type-exact equality of two option documents, ignoring top-level field order. */
function sameOptions(a: Document, b: Document): boolean {
  const text = (doc: Document) =>
    EJSON.stringify(Object.fromEntries(Object.entries(doc).sort(([x], [y]) => (x < y ? -1 : x > y ? 1 : 0))), { relaxed: false });
  return text(a) === text(b);
}

/** Creates a collection or view on the destination as its record says; see the module comment. */
export async function createOnDestination(client: MongoClient, record: NamespaceRecord): Promise<void> {
  try {
    await createNamespace(client, record, record.createOptions);
  } catch (error) {
    if (!isNamespaceExists(error)) throw error;
    const existing = await collectionEntry(client, record);
    if (existing !== undefined && existing.type === record.type && sameOptions(existing.options, record.createOptions)) return;
    throw new DestinationConflict(
      `the destination already has ${namespaceOf(record)}${existing === undefined ? '' : ` (a ${existing.type})`} ` +
        `with other options than the source's; drop it or exclude it from the sync`,
      { cause: error },
    );
  }
}

/** Builds a collection's indexes in temporary form; returns how many it asked for. */
export async function buildIndexesOnDestination(client: MongoClient, record: NamespaceRecord): Promise<number> {
  if (record.indexes.length === 0) return 0;
  await createIndexes(
    client,
    record,
    record.indexes.map((index) => index.temporary),
  );
  return record.indexes.length;
}

/** Builds one index in temporary form; an index of that name in another form is replaced. */
export async function buildIndex(client: MongoClient, ns: Namespace, plan: IndexPlan): Promise<void> {
  try {
    await createIndexes(client, ns, [plan.temporary]);
  } catch (error) {
    if (!isIndexConflict(error)) throw error;
    await dropIndex(client, ns, plan.name);
    await createIndexes(client, ns, [plan.temporary]);
  }
}
