/**
 * Reading one collection again, whole, from the source into the destination, at a DDL barrier
 * (every lane drained): for a collection renamed into the sync's namespaces, for one renamed
 * while the initial copy ran (the copy read it by its old name and may have missed documents),
 * and for one whose earlier read could not finish (below).
 *
 * The collection is created in temporary form if missing (or recreated if the destination holds
 * something else under that name), its indexes built in temporary form, then made equal to the
 * source as it is now: documents the source no longer holds are deleted (a merge of both sides'
 * `_id`s in index order), and every source document is written with an upserting replace. The
 * source may change meanwhile; its events come after the one being applied and put the rest
 * right, as they do after the initial copy. Running it twice (a crash before the barrier's
 * checkpoint) gives the same result.
 *
 * The source reads by name, and the name may stop meaning the collection the event named: the
 * source can rename it again, drop it, or put another collection under the name, before or while
 * Ferry reads (a killed cursor, QueryPlanKilled; or a read of the wrong collection). The
 * collection is known by its UUID (the event's `collectionUUID`), checked before and after the
 * read. When the name no longer holds it, the DDL that moved it away comes later in the stream:
 * the namespace record is marked `incomplete` and the destination's collection left as it is
 * (later CRUD events of the name still land in it). That DDL then settles it: a rename carries
 * the mark to the new name and reads the collection whole there (ddl.ts), a drop ends it. Commit
 * refuses to complete while a record is marked (src/commit/commit.ts). A read that fails for
 * another passing reason while the name still holds the collection is tried again.
 */
import type { Binary, Document } from 'bson';
import type { Collection, Db, MongoClient } from 'mongodb';
import { compareBsonValues, findId, TYPE_FAITHFUL } from '../bson/index.js';
import { MAJORITY } from '../cluster/concerns.js';
import { collectionEntry, dropNamespace } from '../cluster/commands.js';
import { isNamespaceNotFound, isTransient } from '../cluster/errors.js';
import { findRaw } from '../cluster/raw-cursor.js';
import { RETRY_POLICY, retryDelay, sleep } from '../cluster/retry.js';
import { indexBuildTime } from '../domain/catalog.js';
import { namespaceOf, type Namespace } from '../domain/namespaces.js';
import type { StartRequest } from '../domain/start-request.js';
import { DestinationConflict } from '../errors/errors.js';
import type { Logger } from '../log/logger.js';
import type { NamespaceRecord, NamespaceRecords } from '../meta/namespaces.js';
import { namespaceRecord, readSourceNamespace } from '../plan/catalog.js';
import { buildIndex, createOnDestination } from '../plan/destination.js';
import { inBuildOrder } from '../plan/indexes.js';
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

/** What `resyncCollection` did. */
export type ResyncOutcome =
  /** The destination's collection is the source's, as of the read. */
  | 'read'
  /** The name no longer holds the collection: its record is marked `incomplete` (see the module comment). */
  | 'incomplete';

function sameUuid(a: Binary | undefined, b: Binary | undefined): boolean {
  return a !== undefined && b !== undefined && Buffer.from(a.buffer).equals(Buffer.from(b.buffer));
}

/** Whether the source's `ns` holds the collection `uuid` names (any collection, when `uuid` is not known). */
function holds(found: { uuid?: Binary } | undefined, uuid: Binary | undefined): boolean {
  return found !== undefined && (uuid === undefined || sameUuid(found.uuid, uuid));
}

/** A record that only carries the mark, for a name whose collection was never read. */
function markerRecord(ns: Namespace): NamespaceRecord {
  return {
    db: ns.db,
    coll: ns.coll,
    type: 'collection',
    sourceOptions: {},
    createOptions: {},
    indexes: [],
    indexBuildTime: 'never',
    sourceCount: 0,
    sourceBytes: 0,
    created: true,
    partitioned: true,
    indexesBuilt: true,
  };
}

/** Marks `ns`'s record `incomplete` (see the module comment); `read` is the record the destination's collection was made from, if any. */
async function markIncomplete(context: ResyncContext, ns: Namespace, read: NamespaceRecord | undefined): Promise<ResyncOutcome> {
  const base = (await context.records.get(ns)) ?? read ?? markerRecord(ns);
  await context.records.put({ ...base, incomplete: true });
  context.logger.info(
    { ns: namespaceOf(ns) },
    `${namespaceOf(ns)} no longer holds the collection Ferry was to read: the source renamed or dropped it since; ` +
      'the DDL that follows in the change stream decides where it is read whole',
  );
  return 'incomplete';
}

/**
 * Makes the destination's `ns` what the source's is now, when the source's `ns` is the
 * collection `uuid` names (see the module comment).
 */
export async function resyncCollection(context: ResyncContext, ns: Namespace, uuid?: Binary): Promise<ResyncOutcome> {
  const { destination, records, logger } = context;
  const destinationDb = destination.db(ns.db);
  // Sharded on the destination (by Ferry, before): it stays so, with its key.
  const sharding = (await records.get(ns))?.sharding;
  let read: NamespaceRecord | undefined;
  for (let retry = 0; ; retry++) {
    const found = await sourceRecord(context, ns);
    if (found === undefined || !holds(found, uuid)) return markIncomplete(context, ns, read);
    const record = sharding === undefined ? found : { ...found, sharding, sharded: true };
    try {
      try {
        await createOnDestination(destination, record);
      } catch (error) {
        if (!(error instanceof DestinationConflict)) throw error;
        await dropNamespace(destination, ns);
        await createOnDestination(destination, record);
      }
      read = record;
      if (record.type === 'collection') {
        for (const plan of inBuildOrder(record.indexes)) await buildIndex(destination, ns, plan);
        const source = context.source.db(ns.db).collection(ns.coll);
        const deleted = await deleteMissing(source, destinationDb.collection(ns.coll));
        const written = await writeAll(context.source, ns, destinationDb, record.sharding?.key);
        // A read done in few batches sees no rename or drop of its collection: check the name still holds it.
        if (!holds(await collectionEntry(context.source, ns), record.uuid)) return markIncomplete(context, ns, read);
        logger.info(
          { ns: namespaceOf(ns), written, deleted },
          `${namespaceOf(ns)} read again whole from the source: ${written} document(s) written, ${deleted} removed`,
        );
      }
      await records.put(record);
      return 'read';
    } catch (error) {
      // A killed cursor (QueryPlanKilled), a vanished collection or a passing failure: look at the name again.
      if (!(isTransient(error) || isNamespaceNotFound(error)) || retry >= RETRY_POLICY.retries) throw error;
      logger.info({ ns: namespaceOf(ns), err: error }, `Reading ${namespaceOf(ns)} whole was interrupted; looking at the source again`);
      await sleep(retryDelay(retry));
    }
  }
}
