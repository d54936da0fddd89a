/**
 * The catalog: databases and their namespaces (collections and views), with mongod's naming
 * rules. A database exists while it holds at least one namespace.
 */
import type { UUID } from 'bson';
import { ServerError } from '../errors.js';
import { Collection, type CollectionOptions, type Namespace, View } from './collection.js';
import { storeInternal } from './system-collections.js';

/** Where mongod keeps a database's view definitions (listed like any collection). */
export const SYSTEM_VIEWS = 'system.views';

/** mongod's limit on a full namespace name (`db.collection`) in bytes. */
export const MAX_NAMESPACE_BYTES = 255;
/** mongod's limit on a database name (fewer than 64 characters). */
export const MAX_DATABASE_NAME_LENGTH = 63;

export function validateDatabaseName(db: string): void {
  if (db.length === 0) throw new ServerError('InvalidNamespace', 'Invalid empty database name');
  if (db.length > MAX_DATABASE_NAME_LENGTH) {
    throw new ServerError('InvalidNamespace', `db name is too long: ${db}`);
  }
  if (/[/\\. "$\0]/.test(db)) throw new ServerError('InvalidNamespace', `Invalid database name: '${db}'`);
}

export function validateCollectionName(db: string, name: string): void {
  validateDatabaseName(db);
  if (name.length === 0) throw new ServerError('InvalidNamespace', `Invalid namespace specified '${db}.'`);
  if (name.includes('\0') || (name.includes('$') && !name.startsWith('$cmd'))) {
    throw new ServerError('InvalidNamespace', `Invalid collection name: ${name}`);
  }
  if (Buffer.byteLength(`${db}.${name}`) > MAX_NAMESPACE_BYTES) {
    throw new ServerError(
      'InvalidNamespace',
      `Fully qualified namespace is too long. Namespace: ${db}.${name} Max: ${MAX_NAMESPACE_BYTES}`,
    );
  }
}

export class Catalog {
  private readonly dbs = new Map<string, Map<string, Namespace>>();

  databaseNames(): string[] {
    return [...this.dbs.keys()].sort();
  }

  namespaces(db: string): Namespace[] {
    return [...(this.dbs.get(db)?.values() ?? [])];
  }

  get(db: string, name: string): Namespace | undefined {
    return this.dbs.get(db)?.get(name);
  }

  /** The collection, or undefined when missing; a view there is an error for data commands. */
  collection(db: string, name: string): Collection | undefined {
    const ns = this.get(db, name);
    if (ns?.kind === 'view') {
      throw new ServerError('CommandNotSupportedOnView', `Namespace ${db}.${name} is a view, not a collection`);
    }
    return ns;
  }

  private database(db: string): Map<string, Namespace> {
    let namespaces = this.dbs.get(db);
    if (!namespaces) {
      namespaces = new Map();
      this.dbs.set(db, namespaces);
    }
    return namespaces;
  }

  /**
   * `uuid`: given when a shard creates a sharded collection another shard already has (same
   * UUID), or when `applyOps` replays a `create` with its `ui` (mongorestore --preserveUUID).
   */
  addCollection(db: string, name: string, options: CollectionOptions, uuid?: UUID): Collection {
    validateCollectionName(db, name);
    if (this.get(db, name)) throw new ServerError('NamespaceExists', `Collection ${db}.${name} already exists.`);
    const collection = new Collection(db, name, options, uuid);
    this.database(db).set(name, collection);
    return collection;
  }

  addView(view: View): void {
    validateCollectionName(view.db, view.name);
    if (this.get(view.db, view.name)) {
      throw new ServerError('NamespaceExists', `Namespace ${view.db}.${view.name} already exists`);
    }
    this.database(view.db).set(view.name, view);
    const definitions = (this.get(view.db, SYSTEM_VIEWS) as Collection | undefined) ?? this.addCollection(view.db, SYSTEM_VIEWS, {});
    storeInternal(definitions, view.definition());
  }

  /** Rewrites a view's stored definition after collMod changed it. */
  updateView(view: View): void {
    this.forgetViewDefinition(view);
    const definitions = this.get(view.db, SYSTEM_VIEWS) as Collection | undefined;
    if (definitions) storeInternal(definitions, view.definition());
  }

  private forgetViewDefinition(view: View): void {
    const definitions = this.get(view.db, SYSTEM_VIEWS);
    if (definitions?.kind !== 'collection') return;
    const entry = definitions.get(view.ns);
    if (entry) definitions.remove(entry);
  }

  /** Re-homes a namespace object under a new name (rename); the target must be free. */
  move(ns: Namespace, db: string, name: string): void {
    this.detach(ns.db, ns.name);
    ns.db = db;
    ns.name = name;
    this.database(db).set(name, ns);
  }

  /** Drops a namespace: a collection is marked dropped (its open cursors die on their next getMore). */
  remove(db: string, name: string): Namespace | undefined {
    const ns = this.detach(db, name);
    if (ns?.kind === 'collection') ns.dropped = true;
    return ns;
  }

  private detach(db: string, name: string): Namespace | undefined {
    const namespaces = this.dbs.get(db);
    const ns = namespaces?.get(name);
    if (ns) {
      if (ns.kind === 'view') this.forgetViewDefinition(ns);
      namespaces!.delete(name);
      if (namespaces!.size === 0) this.dbs.delete(db);
    }
    return ns;
  }

  removeDatabase(db: string): Namespace[] {
    const removed = this.namespaces(db);
    this.dbs.delete(db);
    for (const ns of removed) if (ns.kind === 'collection') ns.dropped = true;
    return removed;
  }
}
