/**
 * Which namespaces a start request selects on the source, and whether another instance (another
 * `--id`) that has not committed syncs any of them to the same destination. Two such syncs would
 * write the same collections (each copying over the other's), and one's commit would restore and
 * unblock what the other still syncs; so the second is refused (OverlappingSync), read-only,
 * before anything is written.
 *
 * Two filters overlap when one selects a namespace the other syncs or names: the namespaces that
 * exist (this request's on its source, the other's as it recorded them) and those the filters
 * name literally (each listed collection; a database named whole stands for all its collections,
 * those created later included). Regular expressions are matched against those names, not
 * compared with each other.
 */
import type { MongoClient } from 'mongodb';
import { listDatabaseNames } from '../cluster/commands.js';
import { namespaceOf, splitNamespace } from '../domain/namespaces.js';
import type { StartRequest } from '../domain/start-request.js';
import { NamespaceRecords } from '../meta/namespaces.js';
import { ResumeStore } from '../meta/resume.js';
import { MetadataStore } from '../meta/store.js';
import { selectorFor, type NamespaceSelector } from './namespaces.js';

/** A collection name no collection can have (`$` is not allowed in one): "any collection" of a database named whole. */
const ANY_COLLECTION = '$any';

/** What one sync covers, for comparing. */
export interface SyncSelection {
  selector: NamespaceSelector;
  /** `db.coll` names it syncs or names literally (`db.$any` for a database named whole). */
  names: string[];
}

/** The namespaces of the source a selector selects (collections and views), as `db.coll`. */
export async function selectedNamespaces(client: MongoClient, selector: NamespaceSelector): Promise<string[]> {
  const names: string[] = [];
  for (const db of await listDatabaseNames(client)) {
    if (!selector.selectsDatabase(db)) continue;
    const collections = await client.db(db).listCollections({}, { nameOnly: true }).toArray();
    for (const { name } of collections) if (selector.selects(db, name)) names.push(namespaceOf({ db, coll: name }));
  }
  return names.sort();
}

/** The namespaces a request's include filters name literally. */
export function literalNamespaces(request: Pick<StartRequest, 'includeNamespaces'>): string[] {
  return (request.includeNamespaces ?? []).flatMap((entry) => {
    if (entry.database === undefined) return [];
    if (entry.collections === undefined && entry.collectionsRegex === undefined) return [`${entry.database}.${ANY_COLLECTION}`];
    return (entry.collections ?? []).map((coll) => `${entry.database}.${coll}`);
  });
}

/** The names either selection covers that the other selects (`db.*` for a whole database). */
export function overlapping(a: SyncSelection, b: SyncSelection): string[] {
  const found = new Set<string>();
  for (const [one, other] of [
    [a, b],
    [b, a],
  ] as const) {
    for (const name of one.names) {
      const { db, coll } = splitNamespace(name);
      if (other.selector.selects(db, coll)) found.add(coll === ANY_COLLECTION ? `${db}.*` : name);
    }
  }
  return [...found].sort();
}

/** Another instance's uncommitted sync to this destination that overlaps this request's. */
export interface Overlap {
  instance: string;
  state: string;
  namespaces: string[];
}

/** The first uncommitted sync of another instance on `destination` that overlaps `request` (see the module comment). */
export async function findOverlap(
  destination: MongoClient,
  id: string,
  request: StartRequest,
  selected: readonly string[],
  /** The other instances of this migration (one per source shard): theirs is this sync. */
  fellows: readonly string[] = [],
): Promise<Overlap | undefined> {
  // A document without a request is not a sync Ferry recorded: nothing to compare.
  const others = (await new ResumeStore(new MetadataStore(destination, id)).all()).filter(
    (doc) =>
      doc._id !== id && !fellows.includes(doc._id) && doc.state !== 'COMMITTED' && typeof doc.request === 'object' && doc.request !== null,
  );
  const mine: SyncSelection = { selector: selectorFor(request), names: [...selected, ...literalNamespaces(request)] };
  for (const other of others) {
    const recorded = await new NamespaceRecords(new MetadataStore(destination, other._id)).list();
    const theirs: SyncSelection = {
      selector: selectorFor(other.request),
      names: [...recorded.map((record) => namespaceOf(record)), ...literalNamespaces(other.request)],
    };
    const namespaces = overlapping(mine, theirs);
    if (namespaces.length > 0) return { instance: other._id, state: other.state, namespaces };
  }
  return undefined;
}
