/**
 * Compares two clusters for equality, namespace by namespace, for tests and the demo.
 *
 * For every namespace a selector picks (on either side): the collection's kind and options (from
 * `listCollections`, `uuid` ignored), a view's definition, the indexes (from `listIndexes`, `v` and
 * `ns` ignored), and, for collections, the documents themselves: both sides are read in `_id`
 * order as raw BSON and compared byte for byte (so a type or field-order change counts), with a
 * SHA-256 over each side's bytes and the first `_id` where they part. The result is a list of
 * differences, empty when the clusters are equal.
 *
 * Indexes can be compared as restored (exact) or in the form Ferry gives them on the destination
 * during sync (`temporaryIndexForm`), by passing a mapping of the source's index specifications.
 */
import { createHash, type Hash } from 'node:crypto';
import { EJSON } from 'bson';
import { MongoClient, type Collection, type Document } from 'mongodb';
import { compareBsonValues, readId } from '../../src/bson/index.js';
import { createNamespaceSelector, type NamespaceSelector } from '../../src/plan/namespaces.js';

/** One way the clusters differ. `ns` is `db.collection`. */
export type ClusterDifference =
  | { kind: 'missingNamespace'; ns: string; missingOn: 'source' | 'destination' }
  | { kind: 'collectionType'; ns: string; source: string; destination: string }
  | { kind: 'collectionOptions'; ns: string; source: Document; destination: Document }
  | { kind: 'viewDefinition'; ns: string; source: Document; destination: Document }
  | { kind: 'documentCount'; ns: string; source: number; destination: number }
  | {
      kind: 'documents';
      ns: string;
      sourceHash: string;
      destinationHash: string;
      /** `_id` of the first document (in `_id` order) that differs or exists on one side only. */
      firstDifferentId: unknown;
    }
  | { kind: 'index'; ns: string; name: string; source?: Document; destination?: Document };

/** Options of `compareClusters`. */
export interface CompareOptions {
  /** Which namespaces to compare. Default: every namespace that is not reserved. */
  selector?: NamespaceSelector;
  /**
   * Maps each source index specification to what the destination should hold. Default: the
   * identity (indexes as restored). Pass `temporaryIndexForm` to check a destination mid-sync.
   */
  expectedIndex?: (sourceIndex: Document) => Document;
  /** Maps source collection options likewise (e.g. capped sizes raised during sync). Default: identity. */
  expectedOptions?: (sourceOptions: Document) => Document;
  /** Told of every namespace compared, equal or not (e.g. to show what was checked). Default: nothing. */
  onCompared?: (comparison: NamespaceComparison) => void;
}

/** One namespace as `compareClusters` checked it. */
export interface NamespaceComparison {
  ns: string;
  type: string;
  /** Documents on the source (collections only). */
  documents?: number;
  /** SHA-256 of the source's documents in `_id` order (collections only). */
  sourceHash?: string;
  /** Indexes on the source (collections only). */
  indexes?: number;
  /** No difference was found in this namespace. */
  equal: boolean;
}

/** TTL during sync: the largest 32-bit integer, so that nothing expires on the destination. */
export const TEMPORARY_TTL_SECONDS = 2147483647;

/**
 * An index as Ferry builds it on the destination during sync: unique indexes non-unique, TTL
 * indexes at `TEMPORARY_TTL_SECONDS`, hidden indexes visible (spec §4.2, reference.md).
 */
export function temporaryIndexForm(index: Document): Document {
  const { unique: _unique, hidden: _hidden, ...rest } = index;
  if (rest.expireAfterSeconds !== undefined) rest.expireAfterSeconds = TEMPORARY_TTL_SECONDS;
  return rest;
}

/** Objects with sorted keys (except index key patterns and pipelines, where order means something). */
function canonical(value: unknown, orderMatters = false): unknown {
  if (Array.isArray(value)) return value.map((v) => canonical(v, orderMatters));
  if (value === null || typeof value !== 'object' || '_bsontype' in value || value instanceof Date) return value;
  const entries = Object.entries(value).map(([k, v]) => [k, canonical(v, orderMatters || k === 'key' || k === 'pipeline')] as const);
  if (!orderMatters) entries.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return Object.fromEntries(entries);
}

/** Equality of two option or index documents, type-exact, ignoring top-level field order. */
function sameDefinition(a: Document, b: Document): boolean {
  const text = (d: Document) => EJSON.stringify(canonical(d) as Document, { relaxed: false });
  return text(a) === text(b);
}

interface CollectionInfo {
  name: string;
  type: string;
  options: Document;
}

async function listNamespaces(client: MongoClient, selector: NamespaceSelector): Promise<Map<string, CollectionInfo>> {
  const found = new Map<string, CollectionInfo>();
  const { databases } = await client.db('admin').command({ listDatabases: 1, nameOnly: true });
  for (const { name: db } of databases as { name: string }[]) {
    if (!selector.selectsDatabase(db)) continue;
    const collections = await client.db(db).listCollections({}, { nameOnly: false }).toArray();
    for (const info of collections as CollectionInfo[]) {
      if (selector.selects(db, info.name)) {
        found.set(`${db}.${info.name}`, { name: info.name, type: info.type ?? 'collection', options: info.options ?? {} });
      }
    }
  }
  return found;
}

async function compareIndexes(
  ns: string,
  source: Collection,
  destination: Collection,
  expectedIndex: (index: Document) => Document,
  comparison?: NamespaceComparison,
): Promise<ClusterDifference[]> {
  const strip = ({ v: _v, ns: _ns, ...rest }: Document) => rest;
  const byName = async (collection: Collection) =>
    new Map((await collection.listIndexes().toArray()).map((index) => [index.name as string, strip(index)]));
  const [sourceIndexes, destinationIndexes] = await Promise.all([byName(source), byName(destination)]);
  if (comparison !== undefined) comparison.indexes = sourceIndexes.size;
  const differences: ClusterDifference[] = [];
  for (const name of new Set([...sourceIndexes.keys(), ...destinationIndexes.keys()])) {
    const expected = sourceIndexes.has(name) ? expectedIndex(sourceIndexes.get(name)!) : undefined;
    const actual = destinationIndexes.get(name);
    if (expected === undefined || actual === undefined || !sameDefinition(expected, actual)) {
      differences.push({ kind: 'index', ns, name, source: expected, destination: actual });
    }
  }
  return differences;
}

/** Reads both collections in `_id` order, hashing each and noting the first document that differs. */
async function compareDocuments(
  ns: string,
  source: Collection,
  destination: Collection,
  comparison?: NamespaceComparison,
): Promise<ClusterDifference[]> {
  const open = (collection: Collection) =>
    collection.find({}, { sort: { _id: 1 }, hint: { _id: 1 }, raw: true, batchSize: 1000 })[Symbol.asyncIterator]();
  const sides = [open(source), open(destination)] as const;
  const hashes: [Hash, Hash] = [createHash('sha256'), createHash('sha256')];
  const counts = [0, 0];
  let firstDifferentId: unknown;
  let differ = false;
  for (;;) {
    const [a, b] = await Promise.all(sides.map((side) => side.next()));
    const bytes = [a!.done ? undefined : (a!.value as unknown as Uint8Array), b!.done ? undefined : (b!.value as unknown as Uint8Array)];
    if (bytes[0] === undefined && bytes[1] === undefined) break;
    bytes.forEach((doc, i) => {
      if (doc === undefined) return;
      hashes[i]!.update(doc);
      counts[i]!++;
    });
    if (!differ && (bytes[0] === undefined || bytes[1] === undefined || Buffer.compare(bytes[0], bytes[1]) !== 0)) {
      differ = true;
      // The smaller of the two _ids: the document one side lacks, or the one both hold differently.
      const ids = bytes.filter((doc) => doc !== undefined).map((doc) => readId(doc));
      firstDifferentId = ids.reduce((min, id) => (compareBsonValues(id, min) < 0 ? id : min));
    }
  }
  const sourceHash = hashes[0].digest('hex');
  if (comparison !== undefined) {
    comparison.documents = counts[0]!;
    comparison.sourceHash = sourceHash;
  }
  const differences: ClusterDifference[] = [];
  if (counts[0] !== counts[1]) {
    differences.push({ kind: 'documentCount', ns, source: counts[0]!, destination: counts[1]! });
  }
  if (differ) {
    differences.push({
      kind: 'documents',
      ns,
      sourceHash,
      destinationHash: hashes[1].digest('hex'),
      firstDifferentId,
    });
  }
  return differences;
}

/** Compares one namespace present on either side (see the module comment). */
async function compareNamespace(
  ns: string,
  source: CollectionInfo | undefined,
  destination: CollectionInfo | undefined,
  context: {
    sourceClient: MongoClient;
    destinationClient: MongoClient;
    expectedIndex: (index: Document) => Document;
    expectedOptions: (options: Document) => Document;
    comparison: NamespaceComparison;
  },
): Promise<ClusterDifference[]> {
  if (source === undefined || destination === undefined) {
    return [{ kind: 'missingNamespace', ns, missingOn: source === undefined ? 'source' : 'destination' }];
  }
  if (source.type !== destination.type) {
    return [{ kind: 'collectionType', ns, source: source.type, destination: destination.type }];
  }
  if (source.type === 'view') {
    const definition = (o: Document) => ({ viewOn: o.viewOn, pipeline: o.pipeline ?? [] });
    if (!sameDefinition(definition(source.options), definition(destination.options))) {
      return [{ kind: 'viewDefinition', ns, source: source.options, destination: destination.options }];
    }
    return [];
  }
  const differences: ClusterDifference[] = [];
  const expected = context.expectedOptions(source.options);
  if (!sameDefinition(expected, destination.options)) {
    differences.push({ kind: 'collectionOptions', ns, source: expected, destination: destination.options });
  }
  const db = ns.slice(0, ns.indexOf('.'));
  const sourceCollection = context.sourceClient.db(db).collection(source.name);
  const destinationCollection = context.destinationClient.db(db).collection(destination.name);
  differences.push(...(await compareIndexes(ns, sourceCollection, destinationCollection, context.expectedIndex, context.comparison)));
  differences.push(...(await compareDocuments(ns, sourceCollection, destinationCollection, context.comparison)));
  return differences;
}

/**
 * Compares the namespaces of two clusters (see the module comment). Returns the differences in a
 * stable order (by namespace), empty when the clusters are equal.
 */
export async function compareClusters(
  sourceUri: string,
  destinationUri: string,
  options: CompareOptions = {},
): Promise<ClusterDifference[]> {
  const selector = options.selector ?? createNamespaceSelector();
  const expectedIndex = options.expectedIndex ?? ((index: Document) => index);
  const expectedOptions = options.expectedOptions ?? ((collectionOptions: Document) => collectionOptions);
  const sourceClient = new MongoClient(sourceUri);
  const destinationClient = new MongoClient(destinationUri);
  try {
    const [sourceNamespaces, destinationNamespaces] = await Promise.all([
      listNamespaces(sourceClient, selector),
      listNamespaces(destinationClient, selector),
    ]);
    const differences: ClusterDifference[] = [];
    const all = [...new Set([...sourceNamespaces.keys(), ...destinationNamespaces.keys()])].sort();
    for (const ns of all) {
      const source = sourceNamespaces.get(ns);
      const destination = destinationNamespaces.get(ns);
      const comparison: NamespaceComparison = { ns, type: (source ?? destination)!.type, equal: false };
      const found = await compareNamespace(ns, source, destination, {
        sourceClient,
        destinationClient,
        expectedIndex,
        expectedOptions,
        comparison,
      });
      differences.push(...found);
      options.onCompared?.({ ...comparison, equal: found.length === 0 });
    }
    return differences;
  } finally {
    await Promise.all([sourceClient.close(), destinationClient.close()]);
  }
}
