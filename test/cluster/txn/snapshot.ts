/**
 * Transaction-private copies of collections and of the catalog. A fork shares everything with its
 * live collection (options, index specs, methods) through the prototype chain, but has its own
 * B+trees (record-tree.ts: clones in O(1), copy-on-write) and its own unique-index maps, so writes
 * inside a transaction change only the fork. The catalog overlay hands out forks, holds the
 * collections a transaction creates, and refuses the DDL transactions may not run.
 */
import { ServerError } from '../errors.js';
import type { Catalog } from '../storage/catalog.js';
import { validateCollectionName } from '../storage/catalog.js';
import { Collection, type CollectionOptions, type Namespace } from '../storage/collection.js';
import type { Index } from '../storage/indexes.js';

/** A copy of `live` whose writes stay private. */
export function forkCollection(live: Collection): Collection {
  const fork = Object.create(live) as Collection;
  Object.assign(fork as object, {
    byId: live.byId.clone(),
    byRid: live.byRid.clone(),
    dataSize: live.dataSize,
    indexes: live.indexes.map(forkIndex),
  });
  return fork;
}

function forkIndex(index: Index): Index {
  const fork = Object.create(index) as Index;
  // The unique-key map is the only state an index changes on writes.
  Object.assign(fork as object, { owners: index.forkOwners() });
  return fork;
}

function notInTransaction(what: string): ServerError {
  return new ServerError('OperationNotSupportedInTransaction', `Cannot ${what} in a multi-document transaction.`);
}

/** The catalog as a transaction sees it. */
export class CatalogOverlay {
  /** Forks of live collections, by the live collection they copy. */
  readonly forks = new Map<Collection, Collection>();
  /** Collections created inside the transaction, by namespace. */
  readonly created = new Map<string, Collection>();
  private readonly liveByFork = new Map<Collection, Collection>();

  constructor(
    private readonly live: Catalog,
    /** Told about each fork as it is made (the transaction keeps its snapshot current). */
    private readonly onFork: (live: Collection, fork: Collection) => void,
  ) {}

  /** The overlay, typed as the Catalog that command code expects. */
  asCatalog(): Catalog {
    const overlay = Object.create(this.live) as Catalog;
    return Object.assign(overlay, {
      get: (db: string, name: string) => this.get(db, name),
      collection: (db: string, name: string) => {
        const ns = this.get(db, name);
        if (ns?.kind === 'view') throw new ServerError('CommandNotSupportedOnView', `Namespace ${db}.${name} is a view, not a collection`);
        return ns;
      },
      namespaces: (db: string) => this.namespaces(db),
      databaseNames: () => [...new Set([...this.live.databaseNames(), ...[...this.created.values()].map((c) => c.db)])].sort(),
      addCollection: (db: string, name: string, options: CollectionOptions) => this.addCollection(db, name, options),
      addView: () => {
        throw notInTransaction('create a view');
      },
      move: () => {
        throw notInTransaction('rename a collection');
      },
      remove: () => {
        throw notInTransaction('drop a collection');
      },
      removeDatabase: () => {
        throw notInTransaction('drop a database');
      },
    });
  }

  get(db: string, name: string): Namespace | undefined {
    const created = this.created.get(`${db}.${name}`);
    if (created) return created;
    const live = this.live.get(db, name);
    if (live?.kind !== 'collection') return live;
    let fork = this.forks.get(live);
    if (!fork) {
      fork = forkCollection(live);
      this.forks.set(live, fork);
      this.liveByFork.set(fork, live);
      this.onFork(live, fork);
    }
    return fork;
  }

  private namespaces(db: string): Namespace[] {
    const live = this.live.namespaces(db).map((ns) => this.get(db, ns.name)!);
    return [...live, ...[...this.created.values()].filter((c) => c.db === db)];
  }

  private addCollection(db: string, name: string, options: CollectionOptions): Collection {
    validateCollectionName(db, name);
    if (this.get(db, name)) throw new ServerError('NamespaceExists', `Collection ${db}.${name} already exists.`);
    const collection = new Collection(db, name, options);
    this.created.set(`${db}.${name}`, collection);
    return collection;
  }

  /** Forgets every fork (a finished transaction must not keep old versions of live data alive). */
  release(): void {
    this.forks.clear();
    this.created.clear();
    this.liveByFork.clear();
  }

  /** The live collection a fork copies (undefined for collections the transaction created). */
  liveOf(collection: Collection): Collection | undefined {
    return this.liveByFork.get(collection);
  }
}
