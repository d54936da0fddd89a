/**
 * Updates whose looked-up document was null (write-plan.ts, `unresolved`). The server looks a
 * document up by the event's namespace when it reads the event, possibly long after the event: a
 * null means the document was not in that collection any more. If the collection still has the
 * event's UUID under that name, the document was deleted and a delete event follows: nothing to
 * do. If the collection was renamed since (a rename event follows), the document is looked up
 * again under the collection's current name, found by its UUID, and written to the event's
 * namespace on the destination (which the rename, applied later, moves along). If no collection
 * has that UUID any more, it was dropped (a drop event follows).
 */
import type { Document } from 'bson';
import type { MongoClient } from 'mongodb';
import { decodeValue, findId, TYPE_FAITHFUL } from '../bson/index.js';
import { upsertStatement, type UnresolvedUpdate } from './write-plan.js';

interface CollectionEntry {
  name: string;
  info?: { uuid?: unknown };
}

function uuidHex(value: unknown): string | undefined {
  const bytes = (value as { buffer?: Uint8Array } | undefined)?.buffer;
  return bytes instanceof Uint8Array ? Buffer.from(bytes).toString('hex') : undefined;
}

/** The `_id` value of an `_id` element, type-faithful. */
function idValue(idElement: Uint8Array): unknown {
  const doc = new Uint8Array(idElement.length + 5);
  new DataView(doc.buffer).setInt32(0, doc.length, true);
  doc.set(idElement, 4);
  return decodeValue(doc, findId(doc));
}

/** The element of a raw document's `_id`, as bytes. */
function idElementOf(document: Uint8Array): Uint8Array {
  const id = findId(document);
  return document.subarray(id.nameOffset - 1, id.valueEnd);
}

/**
 * Upsert statements for the documents of `unresolved` (updates of `db.coll`) that now live in a
 * renamed collection of the same database; the rest are gone for good.
 */
export async function lookUpMovedDocuments(source: MongoClient, db: string, coll: string, unresolved: readonly UnresolvedUpdate[]): Promise<Uint8Array[]> {
  const byUuid = new Map<string, UnresolvedUpdate[]>();
  for (const update of unresolved) {
    const uuid = uuidHex(update.collectionUUID);
    if (uuid === undefined) continue; // a stream without expanded events: the delete or rename that follows decides
    byUuid.set(uuid, [...(byUuid.get(uuid) ?? []), update]);
  }
  if (byUuid.size === 0) return [];
  const entries = (await source.db(db).listCollections({}, { nameOnly: false, ...TYPE_FAITHFUL }).toArray()) as CollectionEntry[];
  const nameOf = new Map(entries.flatMap((entry) => {
    const uuid = uuidHex(entry.info?.uuid);
    return uuid === undefined ? [] : [[uuid, entry.name] as const];
  }));
  const statements: Uint8Array[] = [];
  for (const [uuid, updates] of byUuid) {
    const current = nameOf.get(uuid);
    if (current === undefined || current === coll) continue; // dropped, or the documents were deleted
    const ids = updates.map((update) => idValue(update.idElement));
    const found = (await source
      .db(db)
      .collection(current)
      .find({ _id: { $in: ids } } as Document, { raw: true, ...TYPE_FAITHFUL })
      .toArray()) as unknown as Uint8Array[];
    for (const document of found) statements.push(upsertStatement(idElementOf(document), document));
  }
  return statements;
}

