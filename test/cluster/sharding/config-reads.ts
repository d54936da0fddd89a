/**
 * Reading the sharding catalog kept on the config server (`config.collections`, `config.chunks`,
 * `config.databases`, `config.shards`), as routers and shards refresh their routing information
 * from it. Values are decoded with their BSON types kept (hashed chunk bounds are int64).
 */
import type { ObjectId, Timestamp } from 'bson';
import type { NodeClient } from './node-client.js';
import { type Chunk, RoutingTable, type ShardedCollectionInfo, uuidOf } from './routing-table.js';
import { ShardKeyPattern } from './shard-key.js';

/** Every document a `find` on `db.coll` returns (following its cursor), types kept. */
export async function findAll(
  client: NodeClient,
  db: string,
  coll: string,
  filter: Record<string, unknown> = {},
  sort?: Record<string, unknown>,
): Promise<Record<string, unknown>[]> {
  const first = await client.run(db, { find: coll, filter, ...(sort ? { sort } : {}), batchSize: 100_000 });
  const reply = first.ok ? first.typed : first.orThrow();
  let cursor = reply.cursor as {
    id: { isZero?(): boolean };
    firstBatch?: Record<string, unknown>[];
    nextBatch?: Record<string, unknown>[];
  };
  const docs = [...(cursor.firstBatch ?? [])];
  while (cursor.id && !(cursor.id.isZero?.() ?? Number(cursor.id) === 0)) {
    const more = await client.run(db, { getMore: cursor.id, collection: coll, batchSize: 100_000 });
    cursor = (more.ok ? more.typed : more.orThrow()).cursor as typeof cursor;
    docs.push(...(cursor.nextBatch ?? []));
  }
  return docs;
}

/** A `config.collections` document as the collection's facts. */
export function collectionInfoOf(doc: Record<string, unknown>): ShardedCollectionInfo {
  return {
    ns: String(doc._id),
    uuid: uuidOf(doc.uuid),
    key: doc.key as Record<string, unknown>,
    unique: doc.unique === true,
    epoch: doc.lastmodEpoch as ObjectId,
    timestamp: doc.timestamp as Timestamp,
  };
}

/** A `config.chunks` document as a chunk of a collection with `pattern`. */
export function chunkOf(pattern: ShardKeyPattern, doc: Record<string, unknown>): Chunk {
  return {
    id: doc._id as ObjectId,
    min: pattern.tupleOf(doc.min as Record<string, unknown>),
    max: pattern.tupleOf(doc.max as Record<string, unknown>),
    shard: String(doc.shard),
    lastmod: doc.lastmod as Timestamp,
  };
}

/**
 * The routing tables of every sharded collection (or of `ns` alone), by namespace. Chunks are
 * read whole and grouped by collection UUID here (a test cluster's catalog is small).
 */
export async function loadRoutingTables(config: NodeClient, ns?: string): Promise<Map<string, RoutingTable>> {
  const collections = await findAll(config, 'config', 'collections', ns === undefined ? {} : { _id: ns });
  const tables = new Map<string, RoutingTable>();
  if (collections.length === 0) return tables;
  const chunksByUuid = new Map<string, Record<string, unknown>[]>();
  for (const chunk of await findAll(config, 'config', 'chunks', {}, { min: 1 })) {
    const key = uuidOf(chunk.uuid).toHexString();
    let list = chunksByUuid.get(key);
    if (!list) chunksByUuid.set(key, (list = []));
    list.push(chunk);
  }
  for (const doc of collections) {
    const info = collectionInfoOf(doc);
    const pattern = new ShardKeyPattern(info.key);
    const chunks = chunksByUuid.get(info.uuid.toHexString()) ?? [];
    if (chunks.length === 0) continue;
    tables.set(
      info.ns,
      new RoutingTable(
        info,
        chunks.map((c) => chunkOf(pattern, c)),
      ),
    );
  }
  return tables;
}
