/**
 * The commit's copy of hot documents (`--hotDocIDs`, src/domain/hot-documents.ts), once every
 * event through the commit point is applied: each is read from the source as it is now and
 * written whole to the destination (an upserting replace), or deleted there when the source no
 * longer holds it. Running it again (a retried or restarted commit) gives the same result.
 *
 * On a collection sharded on the destination the write carries the document's shard key (mongos
 * routes an upsert by it), after deleting any copy of it under another key (its key changed).
 *
 * Documents go through the driver decoded with their BSON types kept (TYPE_FAITHFUL): a hot
 * document holding a type with no JavaScript value (a deprecated one) would not survive that.
 */
import type { Document, MongoClient } from 'mongodb';
import { compareBsonValues, TYPE_FAITHFUL } from '../bson/index.js';
import { MAJORITY } from '../cluster/concerns.js';
import type { HotDocuments } from '../domain/hot-documents.js';
import type { Logger } from '../log/logger.js';
import { shardKeyOf, type ShardKeyPattern } from '../cluster/shard-key.js';

export interface HotCopyOutcome {
  written: number;
  deleted: number;
}

export async function copyHotDocuments(
  source: MongoClient,
  destination: MongoClient,
  hot: readonly HotDocuments[],
  logger: Logger,
  /** The destination's shard keys by `db.coll`, for the collections sharded there. */
  shardKeys: Readonly<Record<string, ShardKeyPattern>> = {},
): Promise<HotCopyOutcome> {
  const outcome: HotCopyOutcome = { written: 0, deleted: 0 };
  for (const { db, coll, ids } of hot) {
    const found = await source
      .db(db)
      .collection(coll)
      .find({ _id: { $in: ids } } as Document, { ...TYPE_FAITHFUL, readConcern: { level: 'majority' } })
      .toArray();
    const target = destination.db(db).collection(coll);
    const key = shardKeys[`${db}.${coll}`];
    for (const document of found) {
      const fields = key === undefined ? {} : shardKeyOf(document, key);
      if (key !== undefined) {
        await target.deleteMany({ _id: document._id, $nor: [fields] } as Document, { writeConcern: MAJORITY });
      }
      await target.replaceOne({ _id: document._id, ...fields } as Document, document, {
        upsert: true,
        bypassDocumentValidation: true,
        writeConcern: MAJORITY,
      });
      outcome.written++;
    }
    const gone = ids.filter((id) => !found.some((document) => compareBsonValues(document._id, id) === 0));
    if (gone.length > 0) {
      outcome.deleted += (await target.deleteMany({ _id: { $in: gone } } as Document, { writeConcern: MAJORITY })).deletedCount;
    }
  }
  if (hot.length > 0) logger.info(outcome, 'Commit: hot documents (--hotDocIDs) copied from the source');
  return outcome;
}
