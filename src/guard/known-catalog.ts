/**
 * The guard's record in the metadata (`guard`, one document per instance): the collection UUID of
 * each namespace Ferry created, as first seen on the destination after Ferry created it (or
 * changed it). Written only when it changes, and before each of Ferry's own changes (`forget`).
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
  updatedAt: Date;
}

function touches(name: ChangedName, ns: string): boolean {
  return name.coll === undefined ? ns.startsWith(`${name.db}.`) : ns === `${name.db}.${name.coll}`;
}

export class KnownCatalog extends InstanceCollection<GuardDocument> {
  /** What was last written (or read), to write only changes. */
  #stored: string | undefined;

  constructor(store: MetadataStore) {
    super(store, 'guard');
  }

  /** The known UUID of each namespace, without those of the names Ferry changed since (learned again). */
  async read(changed: readonly ChangedName[]): Promise<Map<string, string>> {
    const doc = await this.collection.findOne({ _id: this.instance });
    const entries = doc?.namespaces ?? [];
    this.#stored ??= JSON.stringify(entries);
    return new Map(entries.filter(({ ns }) => !changed.some((name) => touches(name, ns))).map(({ ns, uuid }) => [ns, uuid]));
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
    if (kept.length === entries.length) return;
    await this.write(new Map(kept.map(({ ns, uuid }) => [ns, uuid])));
  }

  /** Records `known` (namespace → UUID) as the whole of what is known, if it changed. */
  async write(known: ReadonlyMap<string, string>): Promise<void> {
    const namespaces = [...known].map(([ns, uuid]) => ({ ns, uuid })).sort((a, b) => (a.ns < b.ns ? -1 : a.ns > b.ns ? 1 : 0));
    const text = JSON.stringify(namespaces);
    if (text === this.#stored) return;
    await this.collection.replaceOne(
      { _id: this.instance },
      { instance: this.instance, namespaces, updatedAt: new Date() },
      { upsert: true },
    );
    this.#stored = text;
  }
}
