/**
 * Secondary indexes. Documents are found by scanning, so an index here is its specification
 * (as `listIndexes` shows it), the key rules mongod applies to every document written (one key
 * per array element, no two array fields in one compound key, no arrays in hashed fields), the
 * order it gives a hinted scan, and — for unique indexes — a map from canonical key to document
 * that enforces uniqueness the way mongod does (E11000 with `keyPattern` and `keyValue`).
 */
import { Query } from '../mingo.js';
import { ServerError } from '../errors.js';
import { Collation, comparatorOf } from '../collation/collation.js';
import { canonicalKey, describeKey } from './keys.js';
import type { DocEntry } from './collection.js';
import { pathMeetsArray } from '../raw.js';
import { RecordTree } from './record-tree.js';
import { hashValue } from '../sharding/hash.js';

/** An index specification as stored and listed (`v`, `key`, `name`, then options). */
export interface IndexSpec {
  v: number;
  key: Record<string, unknown>;
  name: string;
  unique?: boolean;
  sparse?: boolean;
  partialFilterExpression?: Record<string, unknown>;
  expireAfterSeconds?: number;
  hidden?: boolean;
  prepareUnique?: boolean;
  collation?: Record<string, unknown>;
  [option: string]: unknown;
}

/** How one key field is indexed. */
export type KeyKind = 'ascending' | 'descending' | 'hashed' | 'text' | '2dsphere' | '2d' | 'wildcard';

export interface KeyField {
  path: string;
  kind: KeyKind;
}

/** The kinds of a key pattern's fields (`{a: 1, b: 'hashed'}` → ascending, hashed). */
export function keyFields(key: Record<string, unknown>): KeyField[] {
  return Object.entries(key).map(([path, value]) => {
    let kind: KeyKind;
    if (typeof value === 'string') kind = value as KeyKind;
    else kind = Number(value) < 0 ? 'descending' : 'ascending';
    if (path === '$**' || path.endsWith('.$**')) kind = 'wildcard';
    return { path, kind };
  });
}

/** One key a document contributes to an index. */
export interface IndexKey {
  /** Equal exactly when mongod's comparison says the keys are equal (for unique maps). */
  canonical: string;
  /** `{field: value}` as duplicate-key errors report it. */
  value: Record<string, unknown>;
  /** Values in key-pattern order. */
  tuple: unknown[];
}

function isDocument(v: unknown): v is Record<string, unknown> {
  return (
    typeof v === 'object' &&
    v !== null &&
    !Array.isArray(v) &&
    !(v instanceof Date) &&
    (v as { _bsontype?: string })._bsontype === undefined
  );
}

/**
 * Values at a dotted path with arrays expanded (one key per element; an empty array indexes as
 * undefined, a missing field as null) and the top-level name of the first array met, if any.
 */
function keyValues(doc: unknown, path: string): { values: unknown[]; array: string | undefined; missing: boolean } {
  const parts = path.split('.');
  let current: unknown[] = [doc];
  let array: string | undefined;
  for (let p = 0; p < parts.length; p++) {
    const part = parts[p];
    const next: unknown[] = [];
    for (const value of current) {
      if (Array.isArray(value)) {
        array ??= parts.slice(0, p).join('.');
        const index = /^\d+$/.test(part) ? Number(part) : undefined;
        if (index !== undefined && index < value.length) next.push(value[index]);
        else for (const item of value) if (isDocument(item) && part in item) next.push(item[part]);
      } else if (isDocument(value) && part in value) {
        next.push(value[part]);
      }
    }
    current = next;
    if (current.length === 0) return { values: [null], array, missing: true };
  }
  const values: unknown[] = [];
  for (const v of current) {
    if (Array.isArray(v)) {
      array ??= path;
      if (v.length === 0) values.push(undefined);
      else values.push(...v);
    } else values.push(v);
  }
  return { values, array, missing: false };
}

/**
 * The document holding each key of a unique index. Under the simple collation keys are their
 * canonical strings in a Map; under a collation, equal keys need not be equal strings, so they
 * are tuples in a B+tree ordered by the collation.
 */
interface KeyOwners {
  get(key: IndexKey): DocEntry | undefined;
  set(key: IndexKey, entry: DocEntry): void;
  delete(key: IndexKey): void;
  /** A copy whose changes stay private (a transaction's fork). */
  fork(): KeyOwners;
}

class CanonicalOwners implements KeyOwners {
  constructor(private readonly map = new Map<string, DocEntry>()) {}
  get(key: IndexKey): DocEntry | undefined {
    return this.map.get(key.canonical);
  }
  set(key: IndexKey, entry: DocEntry): void {
    this.map.set(key.canonical, entry);
  }
  delete(key: IndexKey): void {
    this.map.delete(key.canonical);
  }
  fork(): KeyOwners {
    return new CanonicalOwners(new Map(this.map));
  }
}

class CollatedOwners implements KeyOwners {
  constructor(private readonly tree: RecordTree<unknown[], DocEntry>) {}
  static create(compare: (a: unknown, b: unknown) => number): CollatedOwners {
    return new CollatedOwners(
      new RecordTree<unknown[], DocEntry>((x, y) => {
        for (let i = 0; i < x.length; i++) {
          const c = compare(x[i], y[i]);
          if (c !== 0) return c;
        }
        return 0;
      }),
    );
  }
  get(key: IndexKey): DocEntry | undefined {
    return this.tree.get(key.tuple);
  }
  set(key: IndexKey, entry: DocEntry): void {
    this.tree.set(key.tuple, entry);
  }
  delete(key: IndexKey): void {
    this.tree.delete(key.tuple);
  }
  fork(): KeyOwners {
    return new CollatedOwners(this.tree.clone());
  }
}

export class Index {
  /** key → the document holding it; only for unique / prepareUnique indexes. */
  private owners: KeyOwners | undefined;
  /** How key values compare: the simple order, or the index's collation. */
  readonly compareValue: (a: unknown, b: unknown) => number;
  private readonly collated: boolean;
  private partial: Query | undefined;
  /**
   * The key paths that arrays can make refuse a document, as UTF-8 names (see `keyMeetsArray`).
   * TypeScript-private, not `#`: a transaction's snapshot forks an index with `Object.create`.
   */
  private keyPaths: Buffer[][] | undefined;
  readonly fields: KeyField[];

  constructor(
    readonly spec: IndexSpec,
    /** The collection it belongs to (its name can change with a rename). */
    private readonly owner: { readonly ns: string },
  ) {
    this.fields = keyFields(spec.key);
    const collation = Collation.of(spec.collation);
    this.collated = collation !== undefined;
    this.compareValue = comparatorOf(collation);
    this.configure();
  }

  get name(): string {
    return this.spec.name;
  }

  /** Re-reads the options that change behaviour (after collMod). Caller rebuilds if needed. */
  configure(): void {
    this.partial = this.spec.partialFilterExpression ? new Query(this.spec.partialFilterExpression) : undefined;
    if (!this.enforcesUniqueness()) this.owners = undefined;
    else this.owners ??= this.newOwners();
  }

  private newOwners(): KeyOwners {
    return this.collated ? CollatedOwners.create(this.compareValue) : new CanonicalOwners();
  }

  /** This index's unique-key map for a transaction's fork (its writes stay private). */
  forkOwners(): KeyOwners | undefined {
    return this.owners?.fork();
  }

  enforcesUniqueness(): boolean {
    return this.spec.unique === true || this.spec.prepareUnique === true;
  }

  /** Whether writes must show this index each document (uniqueness or key rules can refuse it). */
  checksDocuments(): boolean {
    return this.enforcesUniqueness() || this.fields.length > 1 || this.fields.some((f) => f.kind === 'hashed');
  }

  /**
   * The top-level fields its keys read, or undefined when it needs whole documents (a partial
   * filter may read anything; a wildcard key has no fixed fields).
   */
  topLevelFields(): ReadonlySet<string> | undefined {
    if (this.partial !== undefined || this.fields.some((f) => f.kind === 'wildcard')) return undefined;
    return new Set(this.fields.map((f) => f.path.split('.')[0]!));
  }

  /** Indexes that leave out documents without the key (sparse, and text/geo indexes). */
  private isSparse(): boolean {
    return this.spec.sparse === true || this.fields.some((f) => f.kind === 'text' || f.kind === '2dsphere' || f.kind === '2d');
  }

  /** Whether a document is in the index at all (partial filter, sparseness). */
  includes(doc: Record<string, unknown>): boolean {
    if (this.partial && !this.partial.test(doc)) return false;
    if (!this.isSparse()) return true;
    // A sparse index leaves out documents that lack every key field (text: that hold no string).
    return this.fields.some((f) => {
      const found = keyValues(doc, f.path);
      return f.kind === 'text' ? found.values.some((v) => typeof v === 'string') : !found.missing;
    });
  }

  /**
   * The keys a document contributes (none when the index leaves it out). Throws mongod's errors
   * for keys it cannot build: two array fields in one compound key, an array in a hashed field.
   */
  keysOf(doc: Record<string, unknown>): IndexKey[] {
    if (!this.includes(doc)) return [];
    const perField: unknown[][] = [];
    this.forEachKeyField(doc, (field, values) => {
      // A hashed field's key is mongod's hash of the value (sharding/hash.ts), missing as null.
      if (field.kind === 'hashed') perField.push([hashValue(values?.[0] ?? null)]);
      else if (values === undefined) perField.push([null]);
      else perField.push([...new Map(values.map((v) => [canonicalKey(v), v])).values()]);
    });
    let tuples: unknown[][] = [[]];
    for (const values of perField) tuples = tuples.flatMap((t) => values.map((v) => [...t, v]));
    return tuples.map((tuple) => {
      const value: Record<string, unknown> = {};
      this.fields.forEach((f, i) => (value[f.path] = tuple[i] === undefined ? null : tuple[i]));
      return { canonical: tuple.map(canonicalKey).join('|'), value, tuple };
    });
  }

  /**
   * The values of each key field of a document (undefined for text and wildcard fields, whose
   * keys are not modelled), throwing mongod's errors for keys it cannot build: two array fields
   * in one compound key, an array in a hashed field.
   */
  private forEachKeyField(doc: Record<string, unknown>, each: (field: KeyField, values: unknown[] | undefined) => void): void {
    let arrayField: string | undefined;
    for (const field of this.fields) {
      if (field.kind === 'text' || field.kind === 'wildcard') {
        each(field, undefined);
        continue;
      }
      const { values, array } = keyValues(doc, field.path);
      if (array !== undefined) {
        if (field.kind === 'hashed') {
          throw new ServerError(16766, 'Error: hashed indexes do not currently support array values');
        }
        if (arrayField !== undefined && arrayField.split('.')[0] !== array.split('.')[0]) {
          throw new ServerError(
            'CannotIndexParallelArrays',
            `cannot index parallel arrays [${array.split('.')[0]}] [${arrayField.split('.')[0]}]`,
          );
        }
        arrayField ??= array;
      }
      each(field, values);
    }
  }

  /**
   * Whether a stored document could be refused by this index's key rules, which only arrays
   * break (two array fields in one compound key, an array in a hashed field): read from the raw
   * bytes, so that a build of a non-unique index decodes only the documents that hold arrays
   * along its key paths.
   */
  keyMeetsArray(raw: Buffer): boolean {
    this.keyPaths ??= this.fields
      .filter((field) => field.kind !== 'text' && field.kind !== 'wildcard')
      .map((field) => field.path.split('.').map((part) => Buffer.from(part, 'utf8')));
    return this.keyPaths.some((parts) => pathMeetsArray(raw, parts));
  }

  /** Throws what `keysOf` throws for a document, without building its keys (nothing keeps them). */
  checkKeys(doc: Record<string, unknown>): void {
    if (this.includes(doc)) this.forEachKeyField(doc, () => {});
  }

  duplicateKeyError(value: Record<string, unknown>): ServerError {
    return new ServerError(
      'DuplicateKey',
      `E11000 duplicate key error collection: ${this.owner.ns} index: ${this.name} dup key: ${describeKey(value)}`,
      { keyPattern: this.spec.key, keyValue: value },
    );
  }

  /** Throws if `doc` (to be stored as `entry`) cannot be indexed or collides with another document. */
  check(entry: DocEntry, doc: Record<string, unknown>): void {
    if (!this.owners) {
      this.checkKeys(doc);
      return;
    }
    for (const key of this.keysOf(doc)) {
      const owner = this.owners.get(key);
      if (owner && owner.rid !== entry.rid) throw this.duplicateKeyError(key.value);
    }
  }

  add(entry: DocEntry, doc: Record<string, unknown>): void {
    if (!this.owners) return;
    for (const key of this.keysOf(doc)) this.owners.set(key, entry);
  }

  remove(entry: DocEntry, doc: Record<string, unknown>): void {
    if (!this.owners) return;
    for (const key of this.keysOf(doc)) {
      if (this.owners.get(key)?.rid === entry.rid) this.owners.delete(key);
    }
  }

  /**
   * Builds the index over existing documents: throws what indexing a document throws; returns the
   * colliding key values for a unique index (empty when the documents satisfy uniqueness). The map
   * keeps the first owner of each key even on collision: a `prepareUnique` index may hold existing
   * duplicates yet must refuse new ones (a unique build that collides is discarded by its caller).
   */
  rebuild(docs: Iterable<[DocEntry, Record<string, unknown>]>): Record<string, unknown>[] {
    const owners = this.newOwners();
    const collisions: Record<string, unknown>[] = [];
    if (!this.enforcesUniqueness()) {
      for (const [, doc] of docs) this.checkKeys(doc);
      return collisions;
    }
    for (const [entry, doc] of docs) {
      for (const key of this.keysOf(doc)) {
        const owner = owners.get(key);
        if (owner && owner.rid !== entry.rid) collisions.push(key.value);
        else owners.set(key, entry);
      }
    }
    if (this.enforcesUniqueness()) this.owners = owners;
    return collisions;
  }

  /** Compares two key tuples in this index's order (descending fields reversed). */
  compareTuples(a: unknown[], b: unknown[]): number {
    for (let i = 0; i < this.fields.length; i++) {
      const c = this.compareValue(a[i], b[i]);
      if (c !== 0) return this.fields[i].kind === 'descending' ? -c : c;
    }
    return 0;
  }

  /**
   * Documents in this index's key order (ties by record id), each once at its first key, as a
   * hinted index scan returns them; `min` (inclusive) and `max` (exclusive) bound the keys.
   */
  scan(
    docs: Iterable<[DocEntry, Record<string, unknown>]>,
    bounds: { min?: unknown[]; max?: unknown[]; direction?: 1 | -1 } = {},
  ): { entry: DocEntry; doc: Record<string, unknown> }[] {
    const keyed: { entry: DocEntry; doc: Record<string, unknown>; tuple: unknown[] }[] = [];
    for (const [entry, doc] of docs) {
      for (const key of this.keysOf(doc)) {
        if (bounds.min && this.compareTuples(key.tuple, bounds.min) < 0) continue;
        if (bounds.max && this.compareTuples(key.tuple, bounds.max) >= 0) continue;
        keyed.push({ entry, doc, tuple: key.tuple });
      }
    }
    keyed.sort((x, y) => this.compareTuples(x.tuple, y.tuple) || x.entry.rid - y.entry.rid);
    if (bounds.direction === -1) keyed.reverse();
    const seen = new Set<number>();
    const out: { entry: DocEntry; doc: Record<string, unknown> }[] = [];
    for (const k of keyed) {
      if (seen.has(k.entry.rid)) continue;
      seen.add(k.entry.rid);
      out.push({ entry: k.entry, doc: k.doc });
    }
    return out;
  }
}
