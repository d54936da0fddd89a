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
 * Both statements name the new key, so they commute: the batch stays unordered. Those `_id`s are
 * `movedIds`: while the initial copy runs, they get tombstones (tombstones.ts), as deletes do.
 */
import { shardKeyValues, type RawKeyValue, type ShardKeyPattern } from '../cluster/shard-key.js';
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
      return !first;
    case 'update':
      return event.fullDocument === null || mayChangeShardKey(event.updateDescription, key);
    default:
      return true;
  }
}

/** The writes for `events`, in stream order (see the module comment); `shardKeys` by `db.coll`. */
export function planWrites(events: readonly CrudEvent[], shardKeys: Readonly<Record<string, ShardKeyPattern>> = {}): WritePlan {
  const last = new Map<string, CrudEvent>();
  const moving = new Set<string>();
  for (const event of events) {
    const document = `${event.db}.${event.coll}\0${event.key}`;
    const key = shardKeys[`${event.db}.${event.coll}`];
    if (key !== undefined && mayMoveDocument(event, !last.has(document), key)) moving.add(document);
    last.set(document, event);
  }
  const byNamespace = new Map<string, NamespaceWrites>();
  for (const [document, event] of last) {
    const name = `${event.db}.${event.coll}`;
    let writes = byNamespace.get(name);
    if (writes === undefined) {
      writes = { db: event.db, coll: event.coll, upserts: [], deletes: [], deletedIds: [], movedIds: [], unresolved: [] };
      const shardKey = shardKeys[name];
      if (shardKey !== undefined) writes.shardKey = shardKey;
      byNamespace.set(name, writes);
    }
    if (event.operationType === 'delete') {
      writes.deletes.push(deleteStatement(event.idElement, writes.shardKey !== undefined));
      writes.deletedIds.push(event.idElement);
    } else if (event.fullDocument) {
      documentWrites(writes, event.idElement, event.fullDocument, moving.has(document));
    } else {
      const unresolved: UnresolvedUpdate = { idElement: event.idElement };
      if (event.collectionUUID !== undefined) unresolved.collectionUUID = event.collectionUUID;
      writes.unresolved.push(unresolved);
    }
  }
  return { namespaces: [...byNamespace.values()], events: events.length, coalesced: events.length - last.size };
}
