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
import type { Db, MongoClient } from 'mongodb';
import { type NamespaceRecord } from '../meta/namespaces.js';
import { TYPE_FAITHFUL_READ } from '../meta/store.js';
import { namespaceOf } from '../domain/namespaces.js';
import { DestinationConflict } from '../errors/errors.js';

const NAMESPACE_EXISTS = 48;
const WRITE_CONCERN = { w: 'majority' } as const;

/** Type-exact equality of two option documents, ignoring top-level field order. */
function sameOptions(a: Document, b: Document): boolean {
  const text = (doc: Document) =>
    EJSON.stringify(Object.fromEntries(Object.entries(doc).sort(([x], [y]) => (x < y ? -1 : x > y ? 1 : 0))), { relaxed: false });
  return text(a) === text(b);
}

async function existingOptions(db: Db, name: string): Promise<{ type: string; options: Document } | undefined> {
  const [entry] = await db.listCollections({ name }, { nameOnly: false, ...TYPE_FAITHFUL_READ }).toArray();
  return entry === undefined ? undefined : { type: entry.type ?? 'collection', options: (entry as { options?: Document }).options ?? {} };
}

/** Creates a collection or view on the destination as its record says; see the module comment. */
export async function createOnDestination(client: MongoClient, record: NamespaceRecord): Promise<void> {
  const db = client.db(record.db);
  try {
    await db.command({ create: record.coll, ...record.createOptions, writeConcern: WRITE_CONCERN });
  } catch (error) {
    if ((error as { code?: number }).code !== NAMESPACE_EXISTS) throw error;
    const existing = await existingOptions(db, record.coll);
    if (existing !== undefined && existing.type === record.type && sameOptions(existing.options, record.createOptions)) return;
    throw new DestinationConflict(
      `the destination already has ${namespaceOf(record)}${existing === undefined ? '' : ` (a ${existing.type})`} with other options than the source's; drop it or exclude it from the sync`,
      { cause: error },
    );
  }
}

/** Builds a collection's indexes in temporary form; returns how many it asked for. */
export async function buildIndexesOnDestination(client: MongoClient, record: NamespaceRecord): Promise<number> {
  if (record.indexes.length === 0) return 0;
  await client.db(record.db).command({
    createIndexes: record.coll,
    indexes: record.indexes.map((index) => index.temporary),
    writeConcern: WRITE_CONCERN,
  });
  return record.indexes.length;
}

/** Runs `task` over `items` with at most `parallelism` at once; rejects with the first failure. */
export async function forEachBounded<T>(items: readonly T[], parallelism: number, task: (item: T) => Promise<void>): Promise<void> {
  const queue = [...items];
  let failure: unknown;
  const lane = async () => {
    for (let item = queue.shift(); item !== undefined && failure === undefined; item = queue.shift()) {
      try {
        await task(item);
      } catch (error) {
        failure ??= error;
      }
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(parallelism, queue.length)) }, lane));
  if (failure !== undefined) throw failure;
}
