/**
 * Deletes applied while the initial copy could still write the deleted document back.
 *
 * Change events are applied from T0 while the copy runs. A copy worker may read a document,
 * the source then deletes it, change-event application deletes it on the destination, and only
 * then does the worker's insert of what it read land: the document would come back. Inserts,
 * replaces and updates cannot lose this way (the copy inserts, never overwrites: an insert that
 * finds the document is a tolerated duplicate), only deletes can.
 *
 * So while the copy runs, every applied delete leaves a tombstone in the metadata (written
 * before the delete is acknowledged, so every tombstone the resume token covers is durable).
 * Once the copy is complete, with every lane drained, the sweep checks each tombstoned
 * document on the source: if the source does not hold it now, it is deleted on the destination
 * (again). That is right whatever happened since the delete: a document the source holds now
 * was written again after the delete and its own event puts it right; a document the source
 * does not hold is either gone for good or will be written again by a later event, applied after
 * the sweep. Then the tombstones are removed. A crash during the sweep runs it again.
 */
import { serialize } from 'bson';
import type { Document, MongoClient } from 'mongodb';
import { findId } from '../bson/index.js';
import { MAJORITY } from '../cluster/concerns.js';
import { isDuplicateKey } from '../cluster/errors.js';
import { writeRaw } from '../cluster/raw-writes.js';
import { retryTransient } from '../cluster/retry.js';
import { shardKeyOf, type ShardKeyPattern } from '../cluster/shard-key.js';
import { METADATA_DATABASE, splitNamespace } from '../domain/namespaces.js';
import { TombstoneWriteRefused } from '../errors/errors.js';
import type { Logger } from '../log/logger.js';
import { METADATA_COLLECTIONS } from '../meta/names.js';
import { TYPE_FAITHFUL_READ, type MetadataStore } from '../meta/store.js';
import { idKey } from './document-key.js';
import { RawDocumentBuilder } from './raw-document.js';

/** `_id`s looked up on the source per query during the sweep. */
const SWEEP_CHUNK = 1000;

/** A tombstone: `{_id: {instance, ns, _id: <the document's _id>}, instance}`, built from raw bytes. */
export function tombstoneDocument(instance: string, namespace: string, idElement: Uint8Array): Uint8Array {
  const key = new RawDocumentBuilder().string('instance', instance).string('ns', namespace).element(idElement).finish();
  return new RawDocumentBuilder().document('_id', key).string('instance', instance).finish();
}

/** Writes tombstones (majority); one already there is fine. */
export async function recordTombstones(destination: MongoClient, tombstones: readonly Uint8Array[]): Promise<void> {
  if (tombstones.length === 0) return;
  const reply = await writeRaw(destination.db(METADATA_DATABASE), 'insert', METADATA_COLLECTIONS.tombstones, tombstones);
  const refused = reply.writeErrors.find((error) => !isDuplicateKey(error));
  if (refused !== undefined) {
    throw new TombstoneWriteRefused(`recording tombstones failed: code ${refused.code}: ${refused.errmsg ?? ''}`, {
      serverCode: refused.code,
    });
  }
  if (reply.writeConcernError !== undefined) {
    throw new TombstoneWriteRefused(`recording tombstones: write concern not satisfied: ${reply.writeConcernError.errmsg ?? ''}`, {
      serverCode: reply.writeConcernError.code,
    });
  }
}

interface TombstoneDocument {
  _id: { instance: string; ns: string; _id: unknown };
  instance: string;
}

/** The canonical key of an `_id` value (numbers by value, as the server matches them). */
function keyOf(id: unknown): string {
  const doc = serialize({ _id: id });
  return idKey(doc, findId(doc));
}

/** The binary collation: strings equal only when their bytes are. */
const SIMPLE_COLLATION = { locale: 'simple' };

/** Deletes, on a sharded destination, the copies of `held` documents whose shard key is not the source's; returns how many. */
async function deleteOtherKeys(
  destination: MongoClient,
  ns: { db: string; coll: string },
  held: readonly Document[],
  key: ShardKeyPattern,
): Promise<number> {
  const others = Object.fromEntries(Object.entries(key).filter(([path]) => path !== '_id'));
  if (held.length === 0 || Object.keys(others).length === 0) return 0;
  const result = await destination
    .db(ns.db)
    .collection(ns.coll)
    .bulkWrite(
      held.map((doc) => ({ deleteMany: { filter: { _id: doc._id, $nor: [shardKeyOf(doc, others)] }, collation: SIMPLE_COLLATION } })),
      { ordered: false, writeConcern: MAJORITY },
    );
  return result.deletedCount;
}

/**
 * The sweep (see the module comment). Call only with every lane drained and the copy complete.
 * `shardKeys`: the destination's shard keys by `db.coll`, for the collections sharded there.
 * Returns how many documents it deleted on the destination.
 */
export async function sweepTombstones(
  source: MongoClient,
  destination: MongoClient,
  store: MetadataStore,
  logger: Logger,
  shardKeys: Readonly<Record<string, ShardKeyPattern>> = {},
): Promise<number> {
  const collection = store.collection<TombstoneDocument>('tombstones');
  const tombstones = (await collection.find({ instance: store.instance }, TYPE_FAITHFUL_READ).toArray()) as TombstoneDocument[];
  const byNamespace = new Map<string, unknown[]>();
  for (const { _id } of tombstones) byNamespace.set(_id.ns, [...(byNamespace.get(_id.ns) ?? []), _id._id]);
  let deleted = 0;
  for (const [ns, ids] of byNamespace) {
    const { db, coll } = splitNamespace(ns);
    const shardKey = shardKeys[ns];
    const projection = { _id: 1, ...Object.fromEntries(Object.keys(shardKey ?? {}).map((path) => [path, 1])) };
    for (let start = 0; start < ids.length; start += SWEEP_CHUNK) {
      const chunk = ids.slice(start, start + SWEEP_CHUNK);
      // Idempotent: a passing failure, or a rename or drop of the collection killing the read
      // (QueryPlanKilled; the name then holds nothing, and the rename's re-read puts it right), runs it again.
      deleted += await retryTransient(async () => {
        const present = await source
          .db(db)
          .collection(coll)
          // The primary: a lagging secondary (a URI's readPreference) could still hold a deleted document.
          .find({ _id: { $in: chunk } } as Document, { projection, readPreference: 'primary', ...TYPE_FAITHFUL_READ })
          .toArray();
        let removed = shardKey === undefined ? 0 : await deleteOtherKeys(destination, { db, coll }, present, shardKey);
        const held = new Set(present.map((doc) => keyOf(doc._id)));
        const gone = chunk.filter((id) => !held.has(keyOf(id)));
        if (gone.length === 0) return removed;
        const result = await destination
          .db(db)
          .collection(coll)
          // Byte-exact _ids, as `gone` was worked out: under a case-insensitive collection collation
          // {_id: 'abc'} would also delete the 'ABC' the source holds.
          .deleteMany({ _id: { $in: gone } } as Document, { writeConcern: MAJORITY, collation: SIMPLE_COLLATION });
        removed += result.deletedCount;
        return removed;
      });
    }
  }
  await collection.deleteMany({ instance: store.instance });
  if (tombstones.length > 0) {
    logger.info(
      { tombstones: tombstones.length, deleted },
      `Initial copy complete: ${tombstones.length} delete(s) applied during the ` +
        `copy checked again, ${deleted} document(s) the copy had written back removed`,
    );
  }
  return deleted;
}
