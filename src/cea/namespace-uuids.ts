/**
 * Several instances, one per source shard: whether the destination is ready for a CRUD event of
 * this shard that follows a DDL another instance applies.
 *
 * A DDL on a sharded collection is reported by the database's primary shard alone, and its
 * instance applies it (applier.ts). The other shards' events after it name the collection as it is
 * after the DDL: a rename's new name with the same UUID, a collection created again under an old
 * name with a new UUID. Applied before the DDL reaches the destination, they would land under a
 * name the DDL then overwrites (a rename onto it, a drop of it): lost. An event is held while
 * the namespace records (every instance's: each keeps its own, and the instance that applies a
 * DDL updates its own) show evidence of such a DDL still to come, that is no record has the
 * event's name with its UUID, but one has the name with another UUID or the UUID under another
 * name. An event of a collection no record knows goes on (nothing says a DDL is pending).
 */
import type { Binary } from 'bson';

export type RecordedNames = () => Promise<{ db: string; coll: string; uuid?: Binary }[]>;

function hexOf(uuid: unknown): string | undefined {
  const bytes = (uuid as { buffer?: Uint8Array } | undefined)?.buffer;
  return bytes instanceof Uint8Array ? Buffer.from(bytes).toString('hex') : undefined;
}

export class NamespaceUuids {
  readonly #read: RecordedNames;
  /** `db.coll\0uuid` of every record; and the names and UUIDs recorded. */
  #pairs = new Set<string>();
  #names = new Set<string>();
  #uuids = new Set<string>();

  constructor(read: RecordedNames) {
    this.#read = read;
  }

  async refresh(): Promise<void> {
    const pairs = new Set<string>();
    const names = new Set<string>();
    const uuids = new Set<string>();
    for (const { db, coll, uuid } of await this.#read()) {
      const hex = hexOf(uuid);
      if (hex === undefined) continue;
      pairs.add(`${db}.${coll}\0${hex}`);
      names.add(`${db}.${coll}`);
      uuids.add(hex);
    }
    [this.#pairs, this.#names, this.#uuids] = [pairs, names, uuids];
  }

  /** Whether an event of `namespace` with collection UUID `uuid` must wait for another instance's DDL (module comment). */
  pending(namespace: string, uuid: unknown): boolean {
    const hex = hexOf(uuid);
    if (hex === undefined || this.#pairs.has(`${namespace}\0${hex}`)) return false;
    return this.#names.has(namespace) || this.#uuids.has(hex);
  }
}
