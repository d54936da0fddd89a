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
import type { Collection, Db, MongoClient } from 'mongodb';
import { compareBsonValues, findId, TYPE_FAITHFUL } from '../bson/index.js';
import { MAJORITY } from '../cluster/concerns.js';
import { dropNamespace } from '../cluster/commands.js';
import { findRaw } from '../cluster/raw-cursor.js';
import { indexBuildTime } from '../domain/catalog.js';
import { namespaceOf, type Namespace } from '../domain/namespaces.js';
import type { StartRequest } from '../domain/start-request.js';
import { DestinationConflict } from '../errors/errors.js';
import type { Logger } from '../log/logger.js';
import type { NamespaceRecord, NamespaceRecords } from '../meta/namespaces.js';
import { namespaceRecord, readSourceNamespace } from '../plan/catalog.js';
import { buildIndex, createOnDestination } from '../plan/destination.js';
import type { ShardKeyPattern } from '../cluster/shard-key.js';
import { sendStatements } from './destination-writes.js';
import { documentWrites, type NamespaceWrites } from './write-plan.js';

/** What reading a collection again needs. */
export interface ResyncContext {
  source: MongoClient;
  destination: MongoClient;
  records: NamespaceRecords;
  request: StartRequest;
  logger: Logger;
}

/** Documents read and written per round trip. */
const BATCH_DOCUMENTS = 1000;
const BATCH_BYTES = 8 * 1024 * 1024;

/** The namespace as the source has it now, as a record; undefined when the source has no such namespace. */
async function sourceRecord(context: ResyncContext, ns: Namespace): Promise<NamespaceRecord | undefined> {
  const found = await readSourceNamespace(context.source, ns);
  if (found === undefined) return undefined;
  const record = namespaceRecord(found, indexBuildTime(context.request.buildIndexes), context.request);
  return { ...record, created: true, partitioned: true, indexesBuilt: true };
}

/** `_id`s of a collection in index order. */
function ids(collection: Collection): AsyncIterator<Document> {
  const cursor = collection.find(
    {},
    { projection: { _id: 1 }, sort: { _id: 1 }, hint: { _id: 1 }, batchSize: BATCH_DOCUMENTS, ...TYPE_FAITHFUL },
  );
  return cursor[Symbol.asyncIterator]();
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
    deleted += (await destination.deleteMany({ _id: { $in: gone.splice(0) } } as Document, { writeConcern: MAJORITY })).deletedCount;
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

/**
 * Writes every source document to the destination (upserting replaces; on a collection sharded
 * there, with its shard key, and deleting any copy under another key).
 */
async function writeAll(source: MongoClient, ns: Namespace, destinationDb: Db, shardKey: ShardKeyPattern | undefined): Promise<number> {
  const empty = (): NamespaceWrites => ({
    ...ns,
    ...(shardKey === undefined ? {} : { shardKey }),
    upserts: [],
    deletes: [],
    deletedIds: [],
    movedIds: [],
    unresolved: [],
  });
  let writes = empty();
  let bytes = 0;
  let written = 0;
  const flush = async () => {
    if (writes.upserts.length === 0) return;
    // Copies under another shard key first: on their shard they would be a duplicate `_id` for the upsert.
    if (writes.deletes.length > 0) await sendStatements(destinationDb, 'delete', ns.coll, writes.deletes);
    await sendStatements(destinationDb, 'update', ns.coll, writes.upserts);
    written += writes.upserts.length;
    writes = empty();
    bytes = 0;
  };
  for await (const document of findRaw(source, ns, {}, { sort: { _id: 1 }, hint: { _id: 1 }, batchSize: BATCH_DOCUMENTS })) {
    const id = findId(document);
    documentWrites(writes, document.subarray(id.nameOffset - 1, id.valueEnd), document, true);
    bytes += document.length;
    if (writes.upserts.length >= BATCH_DOCUMENTS || bytes >= BATCH_BYTES) await flush();
  }
  await flush();
  return written;
}

/** Makes the destination's `ns` what the source's is now (see the module comment). */
export async function resyncCollection(context: ResyncContext, ns: Namespace): Promise<void> {
  const { destination, records, logger } = context;
  // Sharded on the destination (by Ferry, before): it stays so, with its key.
  const sharding = (await records.get(ns))?.sharding;
  const found = await sourceRecord(context, ns);
  const record = found === undefined || sharding === undefined ? found : { ...found, sharding, sharded: true };
  const destinationDb = destination.db(ns.db);
  if (record === undefined) {
    // Gone from the source since: its drop (or next rename) follows; hold nothing under this name meanwhile.
    await dropNamespace(destination, ns).catch(() => undefined);
    await records.remove(ns);
    return;
  }
  try {
    await createOnDestination(destination, record);
  } catch (error) {
    if (!(error instanceof DestinationConflict)) throw error;
    await dropNamespace(destination, ns);
    await createOnDestination(destination, record);
  }
  if (record.type === 'collection') {
    for (const plan of record.indexes) await buildIndex(destination, ns, plan);
    const source = context.source.db(ns.db).collection(ns.coll);
    const deleted = await deleteMissing(source, destinationDb.collection(ns.coll));
    const written = await writeAll(context.source, ns, destinationDb, record.sharding?.key);
    logger.info(
      { ns: namespaceOf(ns), written, deleted },
      `${namespaceOf(ns)} read again whole from the source: ${written} document(s) written, ${deleted} removed`,
    );
  }
  await records.put(record);
}
