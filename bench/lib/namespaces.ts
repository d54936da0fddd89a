/**
 * A source made of many small collections, for the namespaces axis of `bench:scale`: large
 * migrations have thousands of collections, and planning, destination preparation, index builds
 * and progress must grow with their number linearly, not quadratically.
 */
import { BSON } from 'bson';
import { MongoClient } from 'mongodb';
import type { CopyWorkload } from './copy-runs.js';

/** Options of `fillNamespaces`. */
export interface NamespaceFillOptions {
  /** Collections to create, each holding one document. Required. */
  collections: number;
  /** Secondary indexes on each collection (besides `_id`). Default 1. */
  indexesPerCollection?: number;
  /** Collections per database (databases `ns0`, `ns1`, ...). Default 1,000. */
  collectionsPerDatabase?: number;
  /** Writes in flight at once. Default 32. */
  concurrency?: number;
}

/** Creates the collections, one document and the indexes each, and returns what a copier must copy. */
export async function fillNamespaces(uri: string, options: NamespaceFillOptions): Promise<CopyWorkload> {
  const perDatabase = options.collectionsPerDatabase ?? 1000;
  const indexes = options.indexesPerCollection ?? 1;
  const client = await MongoClient.connect(uri);
  const documentsByNamespace: Record<string, number> = {};
  let bytes = 0;
  try {
    let next = 0;
    const fillOne = async (i: number): Promise<void> => {
      const db = `ns${Math.floor(i / perDatabase)}`;
      const coll = `c${i % perDatabase}`;
      const doc = { _id: i, name: `collection ${i}`, created: new Date(0), tags: ['a', 'b'] };
      const collection = client.db(db).collection<{ _id: number }>(coll);
      await collection.insertOne(doc);
      for (let k = 0; k < indexes; k++) await collection.createIndex({ [`f${k}`]: 1 });
      documentsByNamespace[`${db}.${coll}`] = 1;
      bytes += BSON.calculateObjectSize(doc);
    };
    const lane = async (): Promise<void> => {
      while (next < options.collections) await fillOne(next++);
    };
    await Promise.all(Array.from({ length: options.concurrency ?? 32 }, lane));
  } finally {
    await client.close();
  }
  return { bytes, documents: options.collections, documentsByNamespace };
}
