/**
 * The guard's record in the metadata (`guard`, one document per instance): the collection UUID of
 * each namespace Ferry created, as first seen on the destination after Ferry created it (or
 * changed it). Written only when it changes, and before each of Ferry's own changes (`forget`),
 * which it also lists as pending until the destination and Ferry's records agree on them again: a
 * Ferry killed between its own drop or rename and the record of it finds the namespace gone at
 * its restart, and must not take that for someone else's change.
 */
import { InstanceCollection, type MetadataStore } from '../meta/store.js';

/** A namespace, or a whole database (no `coll`), that Ferry changes. */
export interface ChangedName {
  db: string;
  coll?: string;
}

interface GuardDocument {
  _id: string;
  instance: string;
  namespaces: { ns: string; uuid: string }[];
  /** Names Ferry began changing and whose change is not yet seen through (see `pending`). */
  changing?: ChangedName[];
  updatedAt: Date;
}

function touches(name: ChangedName, ns: string): boolean {
  return name.coll === undefined ? ns.startsWith(`${name.db}.`) : ns === `${name.db}.${name.coll}`;
}

export class KnownCatalog extends InstanceCollection<GuardDocument> {
  /** What was last written (or read), to write only changes. */
  #stored: string | undefined;
  /** Names of Ferry's own changes not yet seen through, as last read or written. */
  #pending: ChangedName[] = [];

  constructor(store: MetadataStore) {
    super(store, 'guard');
  }

  /** The known UUID of each namespace, without those of the names Ferry changed since (learned again). */
  async read(changed: readonly ChangedName[]): Promise<Map<string, string>> {
    const doc = await this.collection.findOne({ _id: this.instance });
    const entries = doc?.namespaces ?? [];
    this.#pending = doc?.changing ?? [];
    this.#stored ??= stored(entries, this.#pending);
    return new Map(entries.filter(({ ns }) => !changed.some((name) => touches(name, ns))).map(({ ns, uuid }) => [ns, uuid]));
  }

  /** Whether `ns` is touched by one of Ferry's own changes not yet seen through (as of the last `read`). */
  pending(ns: string): boolean {
    return this.#pending.some((name) => touches(name, ns));
  }

  /**
   * Forgets the known UUID of every namespace `names` touch, durably, before Ferry changes them: a
   * Ferry killed after its change and before the next check must not find the old UUID recorded
   * (and take its own change for someone else's) when it starts again.
   */
  async forget(names: readonly ChangedName[]): Promise<void> {
    const doc = await this.collection.findOne({ _id: this.instance });
    const entries = doc?.namespaces ?? [];
    const kept = entries.filter(({ ns }) => !names.some((name) => touches(name, ns)));
    const changing = [...(doc?.changing ?? []), ...names.map(({ db, coll }) => (coll === undefined ? { db } : { db, coll }))];
    await this.write(new Map(kept.map(({ ns, uuid }) => [ns, uuid])), changing);
  }

  /**
   * Records `known` (namespace → UUID) as the whole of what is known, and the names whose change is
   * not yet seen through, if either changed.
   */
  async write(known: ReadonlyMap<string, string>, changing: readonly ChangedName[]): Promise<void> {
    const namespaces = [...known].map(([ns, uuid]) => ({ ns, uuid })).sort((a, b) => (a.ns < b.ns ? -1 : a.ns > b.ns ? 1 : 0));
    const text = stored(namespaces, changing);
    if (text === this.#stored) return;
    await this.collection.replaceOne(
      { _id: this.instance },
      { instance: this.instance, namespaces, changing: [...changing], updatedAt: new Date() },
      { upsert: true },
    );
    this.#stored = text;
    this.#pending = [...changing];
  }
}

function stored(namespaces: readonly { ns: string; uuid: string }[], changing: readonly ChangedName[]): string {
  return JSON.stringify({ namespaces, changing });
}
