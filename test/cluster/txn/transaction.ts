/**
 * One multi-document transaction. Commands inside it run against a transaction-scoped view of
 * the instance: the catalog hands out private forks of the collections, and the write path stages
 * oplog entries instead of appending them. Commit checks that nobody else changed a document the
 * transaction wrote (else WriteConflict), applies the final state of every written document to
 * the live collections, and appends the staged entries under one cluster time, each with the
 * session's lsid and txnNumber and its txnOpIndex, as mongod's applyOps entry carries them.
 */
import { createHash } from 'node:crypto';
import { Binary, type Long } from 'bson';
import { ServerError } from '../errors.js';
import { Instance, type OpContext } from '../instance.js';
import type { OplogEntry } from '../oplog.js';
import { DocEntry, type Collection } from '../storage/collection.js';
import { canonicalKey } from '../storage/keys.js';
import { sameBytes } from '../storage/memory.js';
import { CatalogOverlay } from './snapshot.js';

export type TransactionState = 'inProgress' | 'committed' | 'aborted';

/** A document the transaction wrote, and what the live collection held when it first did. */
interface Write {
  collection: Collection;
  id: unknown;
  /** The live entry (and its bytes) at the first write; undefined when absent. */
  base: DocEntry | undefined;
  baseRaw: Buffer | undefined;
}

/** Documents written by open transactions, for first-writer-wins conflicts between them. */
const locksByInstance = new WeakMap<Instance, Map<string, Transaction>>();
/** Forks of each live collection held by open transactions. */
const forksByCollection = new WeakMap<Collection, Set<Collection>>();

/** Whether `entry` (if any) still holds the bytes `raw` viewed when the transaction wrote it (an update replaces them). */
function sameStored(entry: DocEntry | undefined, raw: Buffer | undefined): boolean {
  return entry === undefined || raw === undefined ? entry === undefined && raw === undefined : sameBytes(entry.raw, raw);
}

/**
 * Live updates replace a document's bytes in place, in an entry a fork may still share: before
 * that happens, each fork that shares it gets its own copy of the old version (its snapshot).
 */
function keepSnapshots(collection: Collection, entry: DocEntry): void {
  const forks = forksByCollection.get(collection);
  if (!forks) return;
  for (const fork of forks) {
    if (fork.byId.get(entry.id) !== entry) continue;
    const snapshot = new DocEntry(entry.rid, entry.id, entry.raw);
    fork.byId.set(entry.id, snapshot);
    fork.byRid.set(entry.rid, snapshot);
    fork.changes++;
  }
}

/** The `uid` mongod records in an lsid: SHA-256 of the user name (the empty one without auth). */
const ANONYMOUS_UID = new Binary(createHash('sha256').update('').digest());

export function writeConflict(): ServerError {
  return new ServerError(
    'WriteConflict',
    'Write conflict during plan execution and yielding is disabled. :: Please retry your operation or multi-document transaction.',
    {},
    ['TransientTransactionError'],
  );
}

export class Transaction {
  state: TransactionState = 'inProgress';
  /** The instance as commands inside the transaction see it. */
  readonly view: Instance;
  private readonly overlay: CatalogOverlay;
  private readonly staged: Omit<OplogEntry, 'ts' | 'wall'>[] = [];
  private readonly writes = new Map<string, Write>();
  /** Entries created or copied by this transaction (safe to change in place). */
  private readonly own = new WeakSet<DocEntry>();
  private readonly locks: Map<string, Transaction>;
  private expiry: NodeJS.Timeout | undefined;

  constructor(
    private readonly live: Instance,
    readonly lsid: { id: Binary },
    readonly txnNumber: Long,
    lifetimeSeconds: number,
  ) {
    this.overlay = new CatalogOverlay(live.catalog, (liveCollection, fork) => {
      let forks = forksByCollection.get(liveCollection);
      if (!forks) forksByCollection.set(liveCollection, (forks = new Set()));
      forks.add(fork);
      live.beforeReplace ??= keepSnapshots;
    });
    this.locks = locksByInstance.get(live) ?? new Map();
    locksByInstance.set(live, this.locks);
    this.view = this.makeView();
    // mongod aborts transactions that outlive transactionLifetimeLimitSeconds.
    this.expiry = setTimeout(() => this.abort(), lifetimeSeconds * 1000);
    this.expiry.unref();
  }

  /** The OpContext fields that route a command's writes into this transaction. */
  stage = (entry: Omit<OplogEntry, 'ts' | 'wall'>): void => {
    this.staged.push(entry);
  };

  private makeView(): Instance {
    // The view's methods take the view as `this`; the transaction is reached through this name.
    // eslint-disable-next-line @typescript-eslint/no-this-alias
    const txn = this;
    const view = Object.create(this.live) as Instance;
    const base = Instance.prototype;
    Object.defineProperty(view, 'catalog', { value: this.overlay.asCatalog() });
    Object.assign(view, {
      insertDocument(ctx: OpContext, collection: Collection, raw: Buffer, id: unknown): DocEntry {
        txn.checkWritable(collection);
        txn.track(collection, id);
        const entry = base.insertDocument.call(view, ctx, collection, raw, id);
        txn.own.add(entry);
        return entry;
      },
      updateDocument(
        ctx: OpContext,
        collection: Collection,
        entry: DocEntry,
        raw: Buffer,
        description: Record<string, unknown> | undefined,
      ): void {
        txn.checkWritable(collection);
        txn.track(collection, entry.id);
        base.updateDocument.call(view, ctx, collection, txn.ownCopy(collection, entry), raw, description);
      },
      deleteDocument(ctx: OpContext, collection: Collection, entry: DocEntry): void {
        txn.checkWritable(collection);
        txn.track(collection, entry.id);
        base.deleteDocument.call(view, ctx, collection, entry);
      },
    });
    return view;
  }

  private checkWritable(collection: Collection): void {
    if (this.state !== 'inProgress')
      throw new ServerError('NoSuchTransaction', `Transaction with { txnNumber: ${this.txnNumber.toString()} } has been aborted.`, {}, [
        'TransientTransactionError',
      ]);
    if (collection.capped) {
      throw new ServerError(
        'OperationNotSupportedInTransaction',
        `Collection '${collection.ns}' is a capped collection. Writes in transactions are not allowed on capped collections.`,
      );
    }
  }

  /** The entry to modify in the fork: copied first when it is shared with the live collection. */
  private ownCopy(collection: Collection, entry: DocEntry): DocEntry {
    if (this.own.has(entry)) return entry;
    const copy = new DocEntry(entry.rid, entry.id, entry.raw);
    collection.byId.set(entry.id, copy);
    collection.byRid.set(entry.rid, copy);
    collection.changes++;
    this.own.add(copy);
    return copy;
  }

  /** Records the first write to a document; conflicts with other writers end the transaction. */
  private track(collection: Collection, id: unknown): void {
    const key = `${collection.uuid.toHexString()}:${canonicalKey(id)}`;
    if (this.writes.has(key)) return;
    const holder = this.locks.get(key);
    if (holder && holder !== this && holder.state === 'inProgress') this.fail(writeConflict());
    const live = this.overlay.liveOf(collection);
    const current = live?.get(id);
    const seen = collection.get(id);
    // Someone else changed the document since the transaction's snapshot of the collection.
    if (seen !== undefined && !this.own.has(seen) && seen !== current) this.fail(writeConflict());
    if (seen === undefined && current !== undefined) this.fail(writeConflict());
    this.locks.set(key, this);
    this.writes.set(key, { collection, id, base: current, baseRaw: current?.raw });
  }

  private fail(error: ServerError): never {
    this.abort();
    throw error;
  }

  /**
   * Two-phase commit's first phase (a shard of a cross-shard transaction): checks now what
   * `commit` would check, so that the transaction either fails here or commits (txn/prepare.ts).
   */
  prepare(): void {
    if (this.state !== 'inProgress') return;
    this.checkCommittable();
  }

  /** Applies the transaction; throws WriteConflict (and aborts) when another writer interfered. */
  commit(): void {
    if (this.state !== 'inProgress') return;
    this.checkCommittable();
    this.apply();
  }

  /** Throws WriteConflict (and aborts) when another writer interfered with what this one wrote. */
  private checkCommittable(): void {
    const live = this.live;
    // Nobody may have replaced a written document, or taken a name the transaction created.
    for (const created of this.overlay.created.values()) {
      if (live.catalog.get(created.db, created.name)) this.fail(writeConflict());
    }
    for (const [liveCollection, fork] of this.overlay.forks) {
      if (live.catalog.get(fork.db, fork.name) !== liveCollection && this.touches(fork)) this.fail(writeConflict());
    }
    for (const write of this.writes.values()) {
      const liveCollection = this.overlay.liveOf(write.collection);
      if (!liveCollection) continue;
      const current = liveCollection.get(write.id);
      if (current !== write.base || !sameStored(current, write.baseRaw)) this.fail(writeConflict());
    }
  }

  private apply(): void {
    const live = this.live;
    const undo: (() => void)[] = [];
    try {
      for (const created of this.overlay.created.values()) {
        live.catalog.move(created, created.db, created.name);
        undo.push(() => live.catalog.remove(created.db, created.name));
      }
      for (const write of this.writes.values()) {
        const target = this.overlay.liveOf(write.collection);
        if (!target) continue;
        const final = write.collection.get(write.id);
        const current = target.get(write.id);
        if (final === undefined) {
          if (current) {
            target.remove(current);
            undo.push(() => target.insert(current.raw, current.id));
          }
        } else if (current) {
          const before = current.raw;
          target.replace(current, final.raw);
          undo.push(() => target.replace(current, before));
        } else {
          const { entry } = target.insert(final.raw, write.id);
          undo.push(() => target.remove(entry));
        }
      }
    } catch (e) {
      for (const step of undo.reverse()) step();
      if (e instanceof ServerError && e.codeName === 'DuplicateKey') this.fail(writeConflict());
      throw e;
    }
    if (this.staged.length > 0) {
      const ts = live.clock.tick();
      const wall = new Date();
      const lsid = { id: this.lsid.id, uid: ANONYMOUS_UID };
      live.oplog.appendAll(this.staged.map((entry, txnOpIndex) => ({ ...entry, ts, wall, lsid, txnNumber: this.txnNumber, txnOpIndex })));
    }
    this.finish('committed');
  }

  private touches(fork: Collection): boolean {
    for (const write of this.writes.values()) if (write.collection === fork) return true;
    return false;
  }

  abort(): void {
    if (this.state === 'inProgress') this.finish('aborted');
  }

  private finish(state: TransactionState): void {
    this.state = state;
    clearTimeout(this.expiry);
    for (const key of this.writes.keys()) if (this.locks.get(key) === this) this.locks.delete(key);
    for (const [liveCollection, fork] of this.overlay.forks) forksByCollection.get(liveCollection)?.delete(fork);
    // The session keeps this object (to answer a retried commit); the data it held can go.
    this.writes.clear();
    this.staged.length = 0;
    this.overlay.release();
  }
}
