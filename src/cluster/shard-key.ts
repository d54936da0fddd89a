/**
 * Shard keys: a sharded collection's key pattern and the rules mongod applies to it (which index
 * supports a key, which unique index a key allows), and a document's shard-key values read from
 * its raw BSON bytes, without deserializing it (change-event application writes through mongos
 * with the key in every statement's filter; the initial copy and issue 13's per-shard instances
 * route by it).
 *
 * A key pattern is an ordered document of fields, each `1` (ranged) or `"hashed"`: `{a: 1}`,
 * `{a: "hashed"}`, `{region: 1, _id: "hashed"}`. mongod allows at most one hashed field.
 */
import type { Document } from 'bson';
import { BsonType, encodeFieldName, findElement, type RawElement } from '../bson/index.js';

/** A key pattern: field paths in order, each `1` or `'hashed'`. */
export type ShardKeyPattern = Readonly<Record<string, 1 | 'hashed'>>;

/** One field of a key pattern. */
export interface ShardKeyField {
  /** The dotted path (`a`, `customer.region`). */
  path: string;
  hashed: boolean;
}

/**
 * A key pattern in normal form: fields in order, `'hashed'` or `1` (`config.collections` and
 * `listIndexes` may give the direction as any number type: Int32, Double, Long).
 */
export function normalizeKeyPattern(key: Document): ShardKeyPattern {
  const pattern: Record<string, 1 | 'hashed'> = {};
  for (const [path, direction] of Object.entries(key)) pattern[path] = direction === 'hashed' ? 'hashed' : 1;
  return pattern;
}

/** The pattern a start request's `shardCollection.key` (an array of one-field objects) describes. */
export function keyPatternOf(parts: readonly Record<string, 1 | 'hashed'>[]): ShardKeyPattern {
  const pattern: Record<string, 1 | 'hashed'> = {};
  for (const part of parts) for (const [path, direction] of Object.entries(part)) pattern[path] = direction;
  return pattern;
}

export function shardKeyFields(pattern: ShardKeyPattern | Document): ShardKeyField[] {
  return Object.entries(pattern).map(([path, direction]) => ({ path, hashed: direction === 'hashed' }));
}

/** Whether the key's first field is hashed (its chunks are ranges of hash values). */
export function hasLeadingHashedField(pattern: ShardKeyPattern | Document): boolean {
  return Object.values(pattern)[0] === 'hashed';
}

/** `{a: 1, b: "hashed"}` as people read it. */
export function describeKeyPattern(pattern: ShardKeyPattern | Document): string {
  return `{${Object.entries(pattern)
    .map(([path, direction]) => `${path}: ${direction === 'hashed' ? '"hashed"' : 1}`)
    .join(', ')}}`;
}

function sameDirection(a: unknown, b: unknown): boolean {
  if (a === 'hashed' || b === 'hashed') return a === b;
  return Number(a) === Number(b);
}

/**
 * Whether an index (a `listIndexes` specification) can support the shard key as mongod requires:
 * its key starts with the shard key's fields, each the same way (`1`, or `"hashed"` for a hashed
 * one), and it is neither sparse nor partial. Collation is checked apart (`hasSimpleCollation`):
 * what counts as simple depends on the collection's default.
 */
export function supportsShardKey(index: Document, pattern: ShardKeyPattern | Document): boolean {
  if (index.sparse === true || index.partialFilterExpression !== undefined) return false;
  const indexFields = Object.entries((index.key ?? {}) as Document);
  const keyFields = Object.entries(pattern);
  if (indexFields.length < keyFields.length) return false;
  return keyFields.every(([path, direction], i) => indexFields[i]![0] === path && sameDirection(indexFields[i]![1], direction));
}

/**
 * Whether an index compares strings by the simple collation: `listIndexes` shows a `collation`
 * only for an index whose collation is not the simple one (an index built without one on a
 * collection with a default collation takes, and lists, that default).
 */
export function hasSimpleCollation(index: Document): boolean {
  const collation = index.collation as Document | undefined;
  return collation === undefined || collation.locale === 'simple';
}

/**
 * mongod's rule for unique indexes of a sharded collection (`isUniqueIndexCompatible`): the
 * shard key's field names are the first fields of the index key. The `_id` index is exempt (it is
 * unique per shard).
 */
export function isUniqueIndexCompatible(pattern: ShardKeyPattern | Document, indexKey: Document): boolean {
  const indexPaths = Object.keys(indexKey);
  const keyPaths = Object.keys(pattern);
  return keyPaths.length <= indexPaths.length && keyPaths.every((path, i) => indexPaths[i] === path);
}

/** Whether a `listIndexes` specification is unique, or on its way to being (`prepareUnique`). */
export function isUniqueIndex(index: Document): boolean {
  return index.unique === true || index.prepareUnique === true;
}

/** One shard-key field of a document, as raw BSON: its type byte and value bytes. */
export interface RawKeyValue {
  path: string;
  /** The BSON type; `BsonType.null` (with no bytes) where the document lacks the field (mongod keys a missing field as null). */
  type: number;
  /** A view of the value's bytes in the document (empty for null). */
  value: Uint8Array;
}

const NO_BYTES = new Uint8Array(0);

/** The element at a dotted path of the document at `offset`, through embedded documents only. */
function elementAtPath(doc: Uint8Array, path: string, offset: number): RawElement | undefined {
  let start = offset;
  const parts = path.split('.');
  for (let i = 0; ; i++) {
    const element = findElement(doc, encodeFieldName(parts[i]!), start);
    if (element === undefined || i === parts.length - 1) return element;
    // mongod refuses a shard key through an array; anything but a document ends the path here.
    if (element.type !== BsonType.document) return undefined;
    start = element.valueOffset;
  }
}

/**
 * The shard-key values of the raw document at `offset`, field by field in the pattern's order
 * (the values themselves, never their hashes: a query on a hashed key gives the value).
 */
export function shardKeyValues(doc: Uint8Array, pattern: ShardKeyPattern | Document, offset = 0): RawKeyValue[] {
  return Object.keys(pattern).map((path) => {
    const element = elementAtPath(doc, path, offset);
    if (element === undefined) return { path, type: BsonType.null, value: NO_BYTES };
    return { path, type: element.type, value: doc.subarray(element.valueOffset, element.valueEnd) };
  });
}

/** A value at a dotted path of a decoded document, through embedded documents only (undefined when absent). */
export function valueAtPath(doc: Document, path: string): unknown {
  let value: unknown = doc;
  for (const part of path.split('.')) {
    if (value === null || typeof value !== 'object' || Array.isArray(value)) return undefined;
    value = value instanceof Map ? value.get(part) : (value as Document)[part];
  }
  return value;
}

/** A decoded document's shard key, as a key document (a missing field is null, as mongod keys it). */
export function shardKeyOf(doc: Document, pattern: ShardKeyPattern | Document): Document {
  return Object.fromEntries(Object.keys(pattern).map((path) => [path, valueAtPath(doc, path) ?? null]));
}
