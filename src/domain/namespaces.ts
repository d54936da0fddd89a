/**
 * Namespaces, and the names Ferry and the server reserve on the clusters it works with.
 */

/** A collection or view: database and collection name. */
export interface Namespace {
  db: string;
  coll: string;
}

/** `db.coll` */
export function namespaceOf(ns: Namespace): string {
  return `${ns.db}.${ns.coll}`;
}

/** `db.coll` split at its first dot (database names cannot hold one). */
export function splitNamespace(ns: string): Namespace {
  const dot = ns.indexOf('.');
  return { db: ns.slice(0, dot), coll: ns.slice(dot + 1) };
}

/**
 * The database on the destination where Ferry keeps everything it needs to continue after a
 * crash (start options, partition table, resume token, characteristics to restore at commit).
 * It is never synced and no filter can select it; the name says whose it is so that no
 * application database collides with it (mongosync's own is `mongosync_reserved_for_internal_use`).
 */
export const METADATA_DATABASE = 'ferry_reserved_for_internal_use';

/** Databases that belong to the server itself and are never synced. */
export const SYSTEM_DATABASES: readonly string[] = Object.freeze(['admin', 'local', 'config']);

/** Collections whose names start with this belong to the server and are never synced. */
export const SYSTEM_COLLECTION_PREFIX = 'system.';

/**
 * Databases MongoDB Atlas keeps for its own use start with this: never synced, and never in the
 * way of an empty destination (mongosync ignores them too, since 1.18).
 */
export const ATLAS_INTERNAL_PREFIX = '__mdb_internal';

/** Whether a database is never synced whatever the filters say. */
export function isReservedDatabase(db: string): boolean {
  return db === METADATA_DATABASE || SYSTEM_DATABASES.includes(db) || db.startsWith(ATLAS_INTERNAL_PREFIX);
}

/** Whether a collection is never synced whatever the filters say. */
export function isReservedCollection(coll: string): boolean {
  return coll.startsWith(SYSTEM_COLLECTION_PREFIX);
}
