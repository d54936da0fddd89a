/**
 * Reads the source catalog a sync covers: every selected collection and view with its options,
 * UUID and indexes, type-faithfully (an Int32 in a validator or key pattern stays an Int32), with
 * `listDatabases`, `listCollections` and `listIndexes` only; and the namespace record each starts
 * as (what the destination gets, src/meta/namespaces.ts).
 */
import type { Binary, Document } from 'bson';
import type { MongoClient } from 'mongodb';
import { collectionEntry, listCollectionEntries, listDatabaseNames, listIndexSpecs } from '../cluster/commands.js';
import type { IndexBuildTime } from '../domain/catalog.js';
import type { Namespace } from '../domain/namespaces.js';
import type { StartRequest } from '../domain/start-request.js';
import type { Logger } from '../log/logger.js';
import type { NamespaceRecord } from '../meta/namespaces.js';
import { PLANNING_PARALLELISM } from '../config/settings.js';
import { createPlan } from './collection-options.js';
import { forEachBounded } from './for-each-bounded.js';
import { indexesToBuild } from './indexes.js';
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

/** Reads every selected namespace of the source, sorted by database then name. */
export async function readSourceCatalog(client: MongoClient, selector: NamespaceSelector, logger: Logger): Promise<SourceNamespace[]> {
  const names = (await listDatabaseNames(client)).filter((db) => selector.selectsDatabase(db)).sort();
  const found: SourceNamespace[] = [];
  for (const db of names) {
    const entries = await listCollectionEntries(client.db(db));
    for (const entry of entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))) {
      if (!selector.selects(db, entry.name)) continue;
      const { type } = entry;
      if (type !== 'collection' && type !== 'view') {
        logger.warn(
          { ns: `${db}.${entry.name}`, type },
          `Namespace ${db}.${entry.name} is a ${type}, which Ferry does not sync; it is skipped`,
        );
        continue;
      }
      const namespace: SourceNamespace = { db, coll: entry.name, type, options: entry.options, indexes: [] };
      if (type === 'collection' && entry.uuid !== undefined) namespace.uuid = entry.uuid;
      found.push(namespace);
    }
  }
  // One listIndexes round trip per collection: several at once.
  const dropped = new Set<SourceNamespace>();
  await forEachBounded(
    found.filter((namespace) => namespace.type === 'collection'),
    PLANNING_PARALLELISM,
    async (namespace) => {
      const indexes = await listIndexSpecs(client, namespace);
      // Dropped since it was listed (after T0): change-event application replays the drop.
      if (indexes === undefined) dropped.add(namespace);
      else namespace.indexes = indexes;
    },
  );
  return dropped.size === 0 ? found : found.filter((namespace) => !dropped.has(namespace));
}

/** One namespace as the source has it now; undefined when the source has no such namespace. */
export async function readSourceNamespace(client: MongoClient, ns: Namespace): Promise<SourceNamespace | undefined> {
  const entry = await collectionEntry(client, ns);
  if (entry === undefined) return undefined;
  const type = entry.type === 'view' ? 'view' : 'collection';
  const found: SourceNamespace = { db: ns.db, coll: ns.coll, type, options: entry.options, indexes: [] };
  if (entry.uuid !== undefined) found.uuid = entry.uuid;
  if (type === 'collection') found.indexes = (await listIndexSpecs(client, ns)) ?? [];
  return found;
}

/** What a namespace record starts as, from the source catalog. */
export function namespaceRecord(source: SourceNamespace, buildTime: IndexBuildTime, request: StartRequest): NamespaceRecord {
  const plan = createPlan(source.type, source.options);
  const record: NamespaceRecord = {
    db: source.db,
    coll: source.coll,
    type: source.type,
    sourceOptions: source.options,
    createOptions: plan.options,
    indexes:
      source.type === 'collection'
        ? indexesToBuild(source.indexes, request.buildIndexes, source.options.collation as Document | undefined)
        : [],
    indexBuildTime: buildTime,
    sourceCount: 0,
    sourceBytes: 0,
    created: false,
    partitioned: source.type === 'view',
    indexesBuilt: source.type === 'view',
  };
  if (source.uuid !== undefined) record.uuid = source.uuid;
  if (plan.capped !== undefined) record.capped = plan.capped;
  if (plan.expireAfterSeconds !== undefined) record.expireAfterSeconds = plan.expireAfterSeconds;
  return record;
}
