/**
 * Reading one collection again, whole, from the source into the destination, at a DDL barrier
 * (every lane drained): for a collection renamed into the sync's namespaces, and for one renamed
 * while the initial copy ran (the copy read it by its old name and may have missed documents).
 *
 * The collection is created in temporary form if missing (or recreated if the destination holds
 * something else under that name), its indexes built in temporary form, then made equal to the
 * source as it is now: documents the source no longer holds are deleted (a merge of both sides'
 * `_id`s in index order), and every source document is written with an upserting replace. The
 * source may change meanwhile; its events come after the one being applied and put the rest
 * right, as they do after the initial copy. Running it twice (a crash before the barrier's
 * checkpoint) gives the same result.
 */
import type { Document } from 'bson';
import type { Collection, Db } from 'mongodb';
import { compareBsonValues, findId, TYPE_FAITHFUL } from '../bson/index.js';
import { type NamespaceRecord } from '../meta/namespaces.js';
import { createOnDestination } from '../plan/destination.js';
import { namespaceRecord } from '../sync/initial-copy.js';
import type { DdlContext } from './ddl.js';
import { sendStatements } from './destination-writes.js';
import { upsertStatement } from './write-plan.js';
import { namespaceOf } from '../domain/namespaces.js';
import { indexBuildTime, type IndexPlan } from '../domain/catalog.js';
import { DestinationConflict } from '../errors/errors.js';

const WRITE_CONCERN = { w: 'majority' } as const;
const INDEX_OPTIONS_CONFLICT = 85;
const INDEX_KEY_SPECS_CONFLICT = 86;
/** Documents read and written per round trip. */
const BATCH_DOCUMENTS = 1000;
const BATCH_BYTES = 8 * 1024 * 1024;

interface Namespace {
  db: string;
  coll: string;
}

/** Builds one index in temporary form; an index of that name in another form is replaced. */
export async function buildIndex(db: Db, coll: string, plan: IndexPlan): Promise<void> {
  const create = () => db.command({ createIndexes: coll, indexes: [plan.temporary], writeConcern: WRITE_CONCERN });
  try {
    await create();
  } catch (error) {
    const code = Number((error as { code?: unknown }).code);
    if (code !== INDEX_OPTIONS_CONFLICT && code !== INDEX_KEY_SPECS_CONFLICT) throw error;
    await db.command({ dropIndexes: coll, index: plan.name, writeConcern: WRITE_CONCERN });
    await create();
  }
}

/** The namespace as the source has it now, as a record; undefined when the source has no such namespace. */
async function sourceRecord(context: DdlContext, ns: Namespace): Promise<NamespaceRecord | undefined> {
  const db = context.source.db(ns.db);
  const [entry] = await db.listCollections({ name: ns.coll }, { nameOnly: false, ...TYPE_FAITHFUL }).toArray();
  if (entry === undefined) return undefined;
  const type = entry.type === 'view' ? 'view' : 'collection';
  const options = (entry as { options?: Document }).options ?? {};
  const indexes = type === 'collection' ? await db.collection(ns.coll).listIndexes(TYPE_FAITHFUL).toArray() : [];
  const uuid = (entry as { info?: { uuid?: unknown } }).info?.uuid;
  const record = namespaceRecord(
    { db: ns.db, coll: ns.coll, type, options, indexes, ...(uuid === undefined ? {} : { uuid: uuid as never }) },
    indexBuildTime(context.request.buildIndexes),
    context.request,
  );
  return { ...record, created: true, partitioned: true, indexesBuilt: true };
}

/** `_id`s of a collection in index order. */
function ids(collection: Collection): AsyncIterator<Document> {
  return collection
    .find({}, { projection: { _id: 1 }, sort: { _id: 1 }, hint: { _id: 1 }, batchSize: BATCH_DOCUMENTS, ...TYPE_FAITHFUL })
    [Symbol.asyncIterator]();
}

/** Deletes from `destination` every document whose `_id` `source` does not hold. */
async function deleteMissing(source: Collection, destination: Collection): Promise<number> {
  const sourceIds = ids(source);
  const destinationIds = ids(destination);
  let s = await sourceIds.next();
  let d = await destinationIds.next();
  const gone: unknown[] = [];
  let deleted = 0;
  const flush = async () => {
    if (gone.length === 0) return;
    deleted += (await destination.deleteMany({ _id: { $in: gone.splice(0) } } as Document, { writeConcern: WRITE_CONCERN })).deletedCount;
  };
  while (!d.done) {
    const order = s.done ? -1 : compareBsonValues(d.value._id, s.value._id);
    if (order < 0) {
      gone.push(d.value._id);
      if (gone.length >= BATCH_DOCUMENTS) await flush();
      d = await destinationIds.next();
    } else {
      if (order === 0) d = await destinationIds.next();
      s = await sourceIds.next();
    }
  }
  await flush();
  return deleted;
}

/** Writes every source document to the destination (upserting replaces). */
async function writeAll(source: Collection, destinationDb: Db, coll: string): Promise<number> {
  const cursor = source.find({}, { sort: { _id: 1 }, hint: { _id: 1 }, batchSize: BATCH_DOCUMENTS, raw: true });
  let statements: Uint8Array[] = [];
  let bytes = 0;
  let written = 0;
  const flush = async () => {
    if (statements.length === 0) return;
    await sendStatements(destinationDb, 'update', coll, statements);
    written += statements.length;
    statements = [];
    bytes = 0;
  };
  for await (const raw of cursor) {
    const document = raw as unknown as Uint8Array;
    const id = findId(document);
    statements.push(upsertStatement(document.subarray(id.nameOffset - 1, id.valueEnd), document));
    bytes += document.length;
    if (statements.length >= BATCH_DOCUMENTS || bytes >= BATCH_BYTES) await flush();
  }
  await flush();
  return written;
}

/** Makes the destination's `ns` what the source's is now (see the module comment). */
export async function resyncCollection(context: DdlContext, ns: Namespace): Promise<void> {
  const { destination, records, logger } = context;
  const record = await sourceRecord(context, ns);
  const destinationDb = destination.db(ns.db);
  if (record === undefined) {
    // Gone from the source since: its drop (or next rename) follows; hold nothing under this name meanwhile.
    await destinationDb.command({ drop: ns.coll, writeConcern: WRITE_CONCERN }).catch(() => undefined);
    await records.remove(ns);
    return;
  }
  try {
    await createOnDestination(destination, record);
  } catch (error) {
    if (!(error instanceof DestinationConflict)) throw error;
    await destinationDb.command({ drop: ns.coll, writeConcern: WRITE_CONCERN });
    await createOnDestination(destination, record);
  }
  if (record.type === 'collection') {
    for (const plan of record.indexes) await buildIndex(destinationDb, ns.coll, plan);
    const source = context.source.db(ns.db).collection(ns.coll);
    const deleted = await deleteMissing(source, destinationDb.collection(ns.coll));
    const written = await writeAll(source, destinationDb, ns.coll);
    logger.info(
      { ns: namespaceOf(ns), written, deleted },
      `${namespaceOf(ns)} read again whole from the source: ${written} document(s) written, ${deleted} removed`,
    );
  }
  await records.put(record);
}
