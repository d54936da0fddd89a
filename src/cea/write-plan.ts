/**
 * Turning a lane's batch of CRUD events into idempotent writes, one per document.
 *
 * Within a batch only the last event of each document matters, because each event's write puts
 * the document in a state that needs nothing from before it:
 * - insert and replace carry the whole document: an upserting replace by `_id`;
 * - update carries the document as it was looked up (`fullDocument: 'updateLookup'`), at or
 *   after the event: an upserting replace by `_id` too;
 * - delete: a delete by `_id`;
 * - an update whose looked-up document was null: the document was gone from the event's
 *   collection when the stream read the event. Either it was deleted (a delete, drop or
 *   dropDatabase event follows, which removes it) or its collection was renamed since (the
 *   rename follows, and the document lives on under the new name): `unresolved`, looked up again
 *   by collection UUID before anything is skipped (apply-batch.ts).
 *
 * So a hot document with a thousand events in a batch costs one write. Keeping only the last
 * event also means at most one statement per document, so a batch's statements can run
 * unordered and in parallel; per-document order across batches is the lane's (one batch in
 * flight per lane).
 *
 * A collection sharded on the destination (its shard key given, `shardKeys`) is written through
 * mongos, which routes each statement by the shard key: an upsert's filter carries the document's
 * key values as well as its `_id` (a replica set source's `documentKey` holds only `_id`, so they
 * come from the full document), and a delete by `_id` alone goes to every shard (`limit: 0`). A
 * document whose shard key changed lives on under its new key, maybe on another shard, where
 * `_id` is not unique: when the batch's events for a document may have changed its key (a
 * replace, a delete, an insert after other events, an update whose `updateDescription` touches
 * a key field, or one whose document must be looked up again), a second statement deletes every
 * copy of it whose key is not the new one (`{_id, $nor: [{<key>}]}`), whichever shard holds it.
 * Those `_id`s are `movedIds`: while the initial copy runs, they get tombstones (tombstones.ts),
 * as deletes do; a batch with any runs its deletes before its upserts (apply-batch.ts): on the
 * shard that holds an old copy, the upsert under the new key would meet it as a duplicate `_id`.
 *
 * A sharded source reports an update that moves a document to another shard as a delete (under
 * the old key) and an insert (under the new), in either order (SERVER-95461, SERVER-104246).
 * Every event of such a collection has the shard key in its `documentKey`, so a delete removes
 * only the document under the key it had (`{q: <documentKey>}`): arriving after the insert, it
 * leaves the new version alone, in the same batch as in a later one (then it is kept beside the
 * insert instead of replacing it). An insert of such a collection into one sharded on the
 * destination deletes other-key copies too: its delete may be still to come.
 */
import { shardKeyValues, type RawKeyValue, type ShardKeyPattern } from '../cluster/shard-key.js';
import { elementName, forEachElement } from '../bson/index.js';
import { RawDocumentBuilder } from './raw-document.js';
import type { CrudEvent } from './crud-event.js';
import { mayChangeShardKey } from './shard-key-change.js';

/** An update whose looked-up document was null. */
export interface UnresolvedUpdate {
  idElement: Uint8Array;
  collectionUUID?: unknown;
}

/** The writes of one namespace in a batch. */
export interface NamespaceWrites {
  db: string;
  coll: string;
  /** The destination's shard key, when the collection is sharded there. */
  shardKey?: ShardKeyPattern;
  /** `{q: {_id[, <shard key>]}, u: <document>, upsert: true}` statements. */
  upserts: Uint8Array[];
  /** `{q: {_id}, limit}` statements, and the `$nor` deletes of documents whose shard key changed. */
  deletes: Uint8Array[];
  /** `_id` elements of the deleted documents (for tombstones). */
  deletedIds: Uint8Array[];
  /** `_id` elements of documents whose other-key copies were deleted (for tombstones). */
  movedIds: Uint8Array[];
  unresolved: UnresolvedUpdate[];
}

export interface WritePlan {
  namespaces: NamespaceWrites[];
  /** Events in the batch. */
  events: number;
  /** Events made redundant by a later event for the same document. */
  coalesced: number;
}

/** `{_id[, <shard key fields but _id>]}`: the filter that finds one document, and routes it through mongos. */
function documentFilter(idElement: Uint8Array, key?: readonly RawKeyValue[]): Uint8Array {
  const filter = new RawDocumentBuilder().element(idElement);
  for (const field of key ?? []) if (field.path !== '_id') filter.value(field.path, field.type, field.value);
  return filter.finish();
}

/** `{q: {_id[, <shard key>]}, u: document, upsert: true}` */
export function upsertStatement(idElement: Uint8Array, document: Uint8Array, key?: readonly RawKeyValue[]): Uint8Array {
  return new RawDocumentBuilder().document('q', documentFilter(idElement, key)).document('u', document).boolean('upsert', true).finish();
}

/** `{q: {_id}, limit: 1}`; with `everyShard`, `limit: 0` (a delete by `_id` on a sharded collection: mongos sends it to every shard). */
export function deleteStatement(idElement: Uint8Array, everyShard = false): Uint8Array {
  return new RawDocumentBuilder()
    .document('q', documentFilter(idElement))
    .int32('limit', everyShard ? 0 : 1)
    .finish();
}

/**
 * `{q: <documentKey>, limit}`: the delete of a sharded source's document under the shard key it
 * had (its `documentKey`), so that it never removes the document under its new key (see the
 * module comment); `limit: 0` on a sharded destination, as `deleteStatement`.
 */
export function keyedDeleteStatement(documentKey: Uint8Array, everyShard = false): Uint8Array {
  return new RawDocumentBuilder()
    .document('q', documentKey)
    .int32('limit', everyShard ? 0 : 1)
    .finish();
}

/**
 * `{q: {_id, $nor: [{<shard key>}]}, limit: 0}`: every copy of the document whose shard key is not
 * `key` (left under an old key, on whatever shard); undefined when the key is `_id` alone.
 */
export function otherKeysDeleteStatement(idElement: Uint8Array, key: readonly RawKeyValue[]): Uint8Array | undefined {
  const fields = key.filter((field) => field.path !== '_id');
  if (fields.length === 0) return undefined;
  const match = new RawDocumentBuilder();
  for (const field of fields) match.value(field.path, field.type, field.value);
  const q = new RawDocumentBuilder().element(idElement).documentArray('$nor', [match.finish()]).finish();
  return new RawDocumentBuilder().document('q', q).int32('limit', 0).finish();
}

/** The statements writing `document` to a namespace (see the module comment); `mayMove` adds the other-key delete. */
export function documentWrites(writes: NamespaceWrites, idElement: Uint8Array, document: Uint8Array, mayMove: boolean): void {
  if (writes.shardKey === undefined) {
    writes.upserts.push(upsertStatement(idElement, document));
    return;
  }
  const key = shardKeyValues(document, writes.shardKey);
  writes.upserts.push(upsertStatement(idElement, document, key));
  const others = mayMove ? otherKeysDeleteStatement(idElement, key) : undefined;
  if (others !== undefined) {
    writes.deletes.push(others);
    writes.movedIds.push(idElement);
  }
}

/** Whether one event may move its document to another shard-key value (see the module comment). */
function mayMoveDocument(event: CrudEvent, first: boolean, key: ShardKeyPattern): boolean {
  switch (event.operationType) {
    case 'insert':
      // On a sharded source an insert may be the second half of a cross-shard move, its delete
      // still to come (module comment): the other-key copy goes now.
      return !first || event.documentKey !== undefined;
    case 'update':
      return event.fullDocument === null || mayChangeShardKey(event.updateDescription, key);
    default:
      return true;
  }
}

/**
 * Whether a delete event (from a sharded source: with a `documentKey`) is about another version of
 * its document than `previous`, an insert or replace of it under another shard key: the two
 * halves of a cross-shard move, in either order (see the module comment).
 */
function deletesAnotherVersion(deletion: CrudEvent, previous: CrudEvent | undefined): boolean {
  if (deletion.documentKey === undefined || previous === undefined || !previous.fullDocument) return false;
  if (previous.operationType !== 'insert' && previous.operationType !== 'replace') return false;
  const fields = shardKeyValues(deletion.documentKey, documentKeyPattern(deletion.documentKey));
  const current = shardKeyValues(previous.fullDocument, documentKeyPattern(deletion.documentKey));
  return fields.some((field, i) => field.type !== current[i]!.type || Buffer.compare(field.value, current[i]!.value) !== 0);
}

/** The fields of a `documentKey` as a key pattern (their values are what matters, not their order). */
function documentKeyPattern(documentKey: Uint8Array): Record<string, 1> {
  const pattern: Record<string, 1> = {};
  forEachElement(documentKey, (element) => {
    pattern[elementName(documentKey, element)] = 1;
  });
  return pattern;
}

/**
 * The writes for `events`, in stream order (see the module comment); `shardKeys` by `db.coll`.
 * `everyDocumentMayMove`: every document written to a sharded namespace gets the other-key delete
 * (the retry of a batch that met a copy under another key: apply-batch.ts).
 */
export function planWrites(
  events: readonly CrudEvent[],
  shardKeys: Readonly<Record<string, ShardKeyPattern>> = {},
  everyDocumentMayMove = false,
): WritePlan {
  const last = new Map<string, CrudEvent>();
  const moving = new Set<string>();
  /** Deletes of a document's other version (a cross-shard move's delete after its insert). */
  const otherVersions: CrudEvent[] = [];
  for (const event of events) {
    const document = `${event.db}.${event.coll}\0${event.key}`;
    const key = shardKeys[`${event.db}.${event.coll}`];
    if (event.operationType === 'delete' && deletesAnotherVersion(event, last.get(document))) {
      otherVersions.push(event);
      continue;
    }
    if (key !== undefined && mayMoveDocument(event, !last.has(document), key)) moving.add(document);
    last.set(document, event);
  }
  const byNamespace = new Map<string, NamespaceWrites>();
  const writesOf = (event: CrudEvent): NamespaceWrites => {
    const name = `${event.db}.${event.coll}`;
    let writes = byNamespace.get(name);
    if (writes === undefined) {
      writes = { db: event.db, coll: event.coll, upserts: [], deletes: [], deletedIds: [], movedIds: [], unresolved: [] };
      const shardKey = shardKeys[name];
      if (shardKey !== undefined) writes.shardKey = shardKey;
      byNamespace.set(name, writes);
    }
    return writes;
  };
  const remove = (writes: NamespaceWrites, event: CrudEvent) =>
    writes.deletes.push(
      event.documentKey === undefined
        ? deleteStatement(event.idElement, writes.shardKey !== undefined)
        : keyedDeleteStatement(event.documentKey, writes.shardKey !== undefined),
    );
  for (const event of otherVersions) {
    const writes = writesOf(event);
    remove(writes, event);
    // Applied before the batch's upserts (apply-batch.ts): the old version may share a shard with the new.
    writes.movedIds.push(event.idElement);
  }
  for (const [document, event] of last) {
    const writes = writesOf(event);
    if (event.operationType === 'delete') {
      remove(writes, event);
      writes.deletedIds.push(event.idElement);
    } else if (event.fullDocument) {
      documentWrites(writes, event.idElement, event.fullDocument, everyDocumentMayMove || moving.has(document));
    } else {
      const unresolved: UnresolvedUpdate = { idElement: event.idElement };
      if (event.collectionUUID !== undefined) unresolved.collectionUUID = event.collectionUUID;
      writes.unresolved.push(unresolved);
    }
  }
  const coalesced = events.length - last.size - otherVersions.length;
  return { namespaces: [...byNamespace.values()], events: events.length, coalesced };
}
