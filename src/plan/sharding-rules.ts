/**
 * The rules a replica set → sharded cluster sync's `sharding.shardingEntries` must meet, checked
 * at `start` against the source's catalog (spec §4.1 rules 5–7, mongosync's "Supporting
 * Indexes"), so that a sync never fails half-way on what could be known before it began:
 *
 * - an entry names a collection the namespace filters select, and not a view, a time series or a
 *   capped collection (mongod shards none of those): ShardingEntryInvalid;
 * - every source unique index (`_id` excepted) starts with the shard key's fields: a sharded
 *   collection refuses any other, so its conversion back to unique at commit would fail
 *   (mongod's `isUniqueIndexCompatible`): UniqueIndexIncompatible;
 * - with `createSupportingIndexes` false, a source index supports the key (it starts with the
 *   key's fields, each the same way, and is neither sparse nor partial) and, on a collection with
 *   a default collation, one such index has the simple collation: ShardKeyIndexMissing.
 *
 * An entry for a collection the source does not have (yet) is accepted: created later, it is
 * sharded then, empty, and mongod builds the key's index itself.
 */
import type { Document } from 'bson';
import type { MongoClient } from 'mongodb';
import { collectionEntry, listIndexSpecs } from '../cluster/commands.js';
import {
  describeKeyPattern,
  hasSimpleCollation,
  isUniqueIndex,
  isUniqueIndexCompatible,
  keyPatternOf,
  supportsShardKey,
  type ShardKeyPattern,
} from '../cluster/shard-key.js';
import { ID_INDEX_NAME } from '../domain/constants.js';
import type { ShardingConfig } from '../domain/start-request.js';
import { ShardingEntryInvalid, ShardKeyIndexMissing, UniqueIndexIncompatible } from '../errors/errors.js';
import type { NamespaceSelector } from './namespaces.js';

/** The indexes-against-key rules of one collection (see the module comment). */
export function checkShardKeyIndexes(
  ns: string,
  key: ShardKeyPattern,
  indexes: readonly Document[],
  collation: Document | undefined,
  createSupportingIndexes: boolean,
): void {
  const keyText = describeKeyPattern(key);
  for (const index of indexes) {
    if (index.name === ID_INDEX_NAME || !isUniqueIndex(index)) continue;
    if (!isUniqueIndexCompatible(key, (index.key ?? {}) as Document)) {
      throw new UniqueIndexIncompatible(
        `${ns}: the unique index "${String(index.name)}" ${describeKeyPattern((index.key ?? {}) as Document)} does not start with ` +
          `the shard key ${keyText}, and a sharded collection refuses such an index; shard ${ns} on a key its unique ` +
          'indexes start with, make the index non-unique on the source, or leave the collection out of shardingEntries',
      );
    }
  }
  if (createSupportingIndexes) return;
  const supporters = indexes.filter((index) => supportsShardKey(index, key));
  if (supporters.length === 0) {
    throw new ShardKeyIndexMissing(
      `${ns}: no index on the source supports the shard key ${keyText} (one whose key starts with it, not sparse, not ` +
        `partial); create one on the source (createIndexes with key ${keyText}), or set sharding.createSupportingIndexes ` +
        'to true to have Ferry create it on the destination',
    );
  }
  const nonSimple = collation !== undefined && collation.locale !== 'simple';
  if (nonSimple && !supporters.some(hasSimpleCollation)) {
    throw new ShardKeyIndexMissing(
      `${ns} has the collation ${JSON.stringify(collation)}, and none of the source indexes supporting the shard key ` +
        `${keyText} has the simple collation, which a shard key needs; create one with collation {locale: "simple"} on the ` +
        'source, or set sharding.createSupportingIndexes to true',
    );
  }
}

/** Checks every entry against the source (see the module comment); reads only. */
export async function checkShardingEntries(source: MongoClient, sharding: ShardingConfig, selector: NamespaceSelector): Promise<void> {
  for (const [i, entry] of sharding.shardingEntries.entries()) {
    const ns = `${entry.database}.${entry.collection}`;
    const where = `sharding.shardingEntries[${i}]`;
    if (!selector.selects(entry.database, entry.collection)) {
      throw new ShardingEntryInvalid(`${where} names ${ns}, which the namespace filters leave out of the sync`);
    }
    const found = await collectionEntry(source, { db: entry.database, coll: entry.collection });
    if (found === undefined) continue;
    if (found.type !== 'collection')
      throw new ShardingEntryInvalid(`${where} names ${ns}, a ${found.type}: only collections can be sharded`);
    if (found.options.capped === true) throw new ShardingEntryInvalid(`${where} names ${ns}, a capped collection: mongod cannot shard it`);
    const indexes = (await listIndexSpecs(source, { db: entry.database, coll: entry.collection })) ?? [];
    checkShardKeyIndexes(
      ns,
      keyPatternOf(entry.shardCollection.key),
      indexes,
      found.options.collation as Document | undefined,
      sharding.createSupportingIndexes,
    );
  }
}
