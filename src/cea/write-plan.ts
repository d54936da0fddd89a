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
 */
import { RawDocumentBuilder } from './raw-document.js';
import type { CrudEvent } from './crud-event.js';

/** An update whose looked-up document was null. */
export interface UnresolvedUpdate {
  idElement: Uint8Array;
  collectionUUID?: unknown;
}

/** The writes of one namespace in a batch. */
export interface NamespaceWrites {
  db: string;
  coll: string;
  /** `{q: {_id}, u: <document>, upsert: true}` statements. */
  upserts: Uint8Array[];
  /** `{q: {_id}, limit: 1}` statements. */
  deletes: Uint8Array[];
  /** `_id` elements of the deleted documents (for tombstones). */
  deletedIds: Uint8Array[];
  unresolved: UnresolvedUpdate[];
}

export interface WritePlan {
  namespaces: NamespaceWrites[];
  /** Events in the batch. */
  events: number;
  /** Events made redundant by a later event for the same document. */
  coalesced: number;
}

function idFilter(idElement: Uint8Array): Uint8Array {
  return new RawDocumentBuilder().element(idElement).finish();
}

/** `{q: {_id}, u: document, upsert: true}` */
export function upsertStatement(idElement: Uint8Array, document: Uint8Array): Uint8Array {
  return new RawDocumentBuilder().document('q', idFilter(idElement)).document('u', document).boolean('upsert', true).finish();
}

/** `{q: {_id}, limit: 1}` */
export function deleteStatement(idElement: Uint8Array): Uint8Array {
  return new RawDocumentBuilder().document('q', idFilter(idElement)).int32('limit', 1).finish();
}

/** The writes for `events`, in stream order (see the module comment). */
export function planWrites(events: readonly CrudEvent[]): WritePlan {
  const last = new Map<string, CrudEvent>();
  for (const event of events) last.set(`${event.db}.${event.coll}\0${event.key}`, event);
  const byNamespace = new Map<string, NamespaceWrites>();
  for (const event of last.values()) {
    const name = `${event.db}.${event.coll}`;
    let writes = byNamespace.get(name);
    if (writes === undefined) {
      writes = { db: event.db, coll: event.coll, upserts: [], deletes: [], deletedIds: [], unresolved: [] };
      byNamespace.set(name, writes);
    }
    if (event.operationType === 'delete') {
      writes.deletes.push(deleteStatement(event.idElement));
      writes.deletedIds.push(event.idElement);
    } else if (event.fullDocument) {
      writes.upserts.push(upsertStatement(event.idElement, event.fullDocument));
    } else {
      const unresolved: UnresolvedUpdate = { idElement: event.idElement };
      if (event.collectionUUID !== undefined) unresolved.collectionUUID = event.collectionUUID;
      writes.unresolved.push(unresolved);
    }
  }
  return { namespaces: [...byNamespace.values()], events: events.length, coalesced: events.length - last.size };
}
