/**
 * Reads the source catalog a sync covers: every selected collection and view with its options,
 * UUID and indexes, type-faithfully (an Int32 in a validator or key pattern stays an Int32), with
 * `listDatabases`, `listCollections` and `listIndexes` only.
 */
import type { Binary, Document } from 'bson';
import type { MongoClient } from 'mongodb';
import type { Logger } from '../log/logger.js';
import { TYPE_FAITHFUL_READ } from '../meta/store.js';
import type { NamespaceSelector } from './namespaces.js';

export interface SourceNamespace {
  db: string;
  coll: string;
  type: 'collection' | 'view';
  /** `listCollections` options (for a view: `viewOn`, `pipeline`, `collation`). */
  options: Document;
  /** The collection's UUID (`info.uuid`); absent for views. */
  uuid?: Binary;
  /** `listIndexes` of a collection, `_id_` included; empty for views. */
  indexes: Document[];
}

const NAMESPACE_NOT_FOUND = 26;

interface CollectionEntry {
  name: string;
  type?: string;
  options?: Document;
  info?: { uuid?: Binary };
}

/** Reads every selected namespace of the source, sorted by database then name. */
export async function readSourceCatalog(client: MongoClient, selector: NamespaceSelector, logger: Logger): Promise<SourceNamespace[]> {
  const { databases } = await client.db('admin').command({ listDatabases: 1, nameOnly: true });
  const names = (databases as { name: string }[])
    .map((d) => d.name)
    .filter((db) => selector.selectsDatabase(db))
    .sort();
  const found: SourceNamespace[] = [];
  for (const db of names) {
    const entries = (await client
      .db(db)
      .listCollections({}, { nameOnly: false, ...TYPE_FAITHFUL_READ })
      .toArray()) as CollectionEntry[];
    for (const entry of entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))) {
      if (!selector.selects(db, entry.name)) continue;
      const type = entry.type ?? 'collection';
      if (type !== 'collection' && type !== 'view') {
        logger.warn(
          { ns: `${db}.${entry.name}`, type },
          `Namespace ${db}.${entry.name} is a ${type}, which Ferry does not sync; it is skipped`,
        );
        continue;
      }
      const namespace: SourceNamespace = { db, coll: entry.name, type, options: entry.options ?? {}, indexes: [] };
      if (type === 'collection') {
        if (entry.info?.uuid !== undefined) namespace.uuid = entry.info.uuid;
        try {
          namespace.indexes = await client.db(db).collection(entry.name).listIndexes(TYPE_FAITHFUL_READ).toArray();
        } catch (error) {
          // Dropped since it was listed (after T0): change-event application replays the drop.
          // (A type-faithful read gets the error's code as an Int32 too.)
          if (Number((error as { code?: unknown }).code) === NAMESPACE_NOT_FOUND) continue;
          throw error;
        }
      }
      found.push(namespace);
    }
  }
  return found;
}
