/**
 * Updates whose looked-up document was null (write-plan.ts, `unresolved`). The server looks a
 * document up by the event's namespace when it reads the event, possibly long after the event: a
 * null means the document was not in that collection, under that name, at that moment. It is
 * looked up again here, a little later, by the collection's UUID, under whatever name the
 * collection has now:
 * - renamed within its database since (the UUID stays; a rename event follows): found under the
 *   new name and written to the event's namespace on the destination, which the rename, applied
 *   later, moves along;
 * - under the event's name again (renamed away and back between the stream's lookup and this one,
 *   or deleted): looked up there too, since a rename away and back leaves nothing else to bring
 *   the document across; a deleted document is simply not found, and its delete event follows;
 * - no collection of the database has the UUID: dropped (a drop event follows), or renamed into
 *   another database. mongod renames across databases by copying: it inserts every document, as
 *   it is then, into a temporary collection of the target database (insert events with the whole
 *   document), renames that one to the target within the target database and drops the source
 *   (a drop event). So there is no rename event from the old name to the new one, nothing to
 *   move on the destination, and every document reaches the target through those inserts (or,
 *   when the filter selects the target but not the temporary collection, through the read of the
 *   target whole that a rename into the filter does: ddl.ts). Nothing is lost by skipping.
 *
 * Writing the document as the source holds it now is always safe: the events after this one put
 * it right, as they do after the initial copy.
 */
import type { MongoClient } from 'mongodb';
import { listCollectionEntries } from '../cluster/commands.js';
import { findRaw } from '../cluster/raw-cursor.js';
import { decodeValue, findId, TYPE_FAITHFUL } from '../bson/index.js';
import type { UnresolvedUpdate } from './write-plan.js';

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
export function idElementOf(document: Uint8Array): Uint8Array {
  const id = findId(document);
  return document.subarray(id.nameOffset - 1, id.valueEnd);
}

/**
 * The documents of `unresolved` (updates of `db.coll`), raw, that the collection the events name
 * (by UUID) still holds, under its current name in `db`; the rest are gone from it (see the
 * module comment).
 */
export async function lookUpMovedDocuments(
  source: MongoClient,
  db: string,
  coll: string,
  unresolved: readonly UnresolvedUpdate[],
): Promise<Uint8Array[]> {
  const byUuid = new Map<string, UnresolvedUpdate[]>();
  for (const update of unresolved) {
    const uuid = uuidHex(update.collectionUUID);
    if (uuid === undefined) continue; // a stream without expanded events: the delete or rename that follows decides
    byUuid.set(uuid, [...(byUuid.get(uuid) ?? []), update]);
  }
  if (byUuid.size === 0) return [];
  const entries = await listCollectionEntries(source.db(db));
  const nameOf = new Map(
    entries.flatMap((entry) => {
      const uuid = uuidHex(entry.uuid);
      return uuid === undefined ? [] : [[uuid, entry.name] as const];
    }),
  );
  const documents: Uint8Array[] = [];
  for (const [uuid, updates] of byUuid) {
    const current = nameOf.get(uuid);
    if (current === undefined) continue; // dropped, or renamed into another database: nothing to bring across
    const ids = updates.map((update) => idValue(update.idElement));
    for await (const document of findRaw(source, { db, coll: current }, { _id: { $in: ids } }, TYPE_FAITHFUL)) {
      // A view into the driver's reply: copied, so the statements built from it own their bytes.
      documents.push(Uint8Array.from(document));
    }
  }
  return documents;
}
