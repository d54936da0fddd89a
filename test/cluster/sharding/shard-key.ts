/**
 * Shard keys: a key pattern (`{a: 1}`, `{a: 1, b: 1}`, `{_id: 'hashed'}`), the key of a stored
 * document read from its raw bytes (only the shard-key paths are looked at), the key a query
 * fixes by equality, and the document key (`{<shard key fields>, _id}`) a shard records in its
 * oplog. Follows MongoDB 8.0: a missing shard-key field counts as null (4.4+), arrays are refused.
 */
import { Long, MaxKey, MinKey } from 'bson';
import { compareValues } from '../bson-order.js';
import { ServerError } from '../errors.js';
import { decodeElement, typed, valueSize } from '../raw.js';
import { hashRawValue, hashValue } from './hash.js';

/** One field of a shard key pattern. */
export interface ShardKeyField {
  path: string;
  /** The path's names as UTF-8, for raw lookups. */
  parts: Buffer[];
  hashed: boolean;
}

/** Values of a shard key, one per pattern field (hashed fields hold their int64 hash). */
export type KeyTuple = unknown[];

export const MIN_KEY = new MinKey();
export const MAX_KEY = new MaxKey();

/** Orders two key values in BSON order; hashed keys (int64s) by their words, without conversions. */
export function compareKeyValues(x: unknown, y: unknown): number {
  return x instanceof Long && y instanceof Long ? compareLongs(x, y) : compareValues(x, y);
}

/** Orders two key tuples field by field in BSON order (MinKey and MaxKey included). */
export function compareTuples(a: KeyTuple, b: KeyTuple): number {
  for (let i = 0; i < a.length; i++) {
    const c = compareKeyValues(a[i], b[i]);
    if (c !== 0) return c;
  }
  return 0;
}

function compareLongs(x: Long, y: Long): number {
  if (x.high !== y.high) return x.high < y.high ? -1 : 1;
  const a = x.low >>> 0;
  const b = y.low >>> 0;
  return a < b ? -1 : a > b ? 1 : 0;
}

/** mongod's error for a document whose shard key holds an array (ShardKeyNotFound is not it). */
function arrayInShardKey(path: string): ServerError {
  return new ServerError('BadValue', `Shard key cannot contain array values or array descendants. Field: ${path}`);
}

export class ShardKeyPattern {
  readonly fields: ShardKeyField[];
  /** The pattern includes `_id` (then a document key needs no separate `_id`). */
  readonly includesId: boolean;

  constructor(readonly pattern: Record<string, unknown>) {
    this.fields = Object.entries(pattern).map(([path, kind]) => ({
      path,
      parts: path.split('.').map((p) => Buffer.from(p, 'utf8')),
      hashed: kind === 'hashed',
    }));
    this.includesId = this.fields.some((f) => f.path === '_id');
  }

  /** Checks a pattern given to shardCollection: fields 1 or 'hashed', at most one hashed. */
  static parse(pattern: unknown): ShardKeyPattern {
    if (typeof pattern !== 'object' || pattern === null || Array.isArray(pattern) || Object.keys(pattern).length === 0) {
      throw new ServerError('BadValue', 'Shard key pattern must be a non-empty document');
    }
    let hashed = 0;
    for (const [path, kind] of Object.entries(pattern as Record<string, unknown>)) {
      if (kind === 'hashed') hashed++;
      else if (Number(kind) !== 1) {
        throw new ServerError(
          'BadValue',
          `Unsupported shard key pattern ${JSON.stringify(pattern)}. Pattern must either be a single hashed field, or a list of ascending fields`,
        );
      }
      if (path.length === 0 || path.startsWith('$') || path.split('.').some((p) => p.length === 0)) {
        throw new ServerError('BadValue', `Unsupported shard key pattern field: ${path}`);
      }
    }
    if (hashed > 1) throw new ServerError('BadValue', 'Shard key pattern may have at most one hashed field');
    return new ShardKeyPattern(pattern as Record<string, unknown>);
  }

  /** The pattern has a hashed field. */
  get hashed(): boolean {
    return this.fields.some((f) => f.hashed);
  }

  /** The tuple of a key document (`{a: 5}` → `[5]`), as chunk bounds are written. */
  tupleOf(key: Record<string, unknown>): KeyTuple {
    return this.fields.map((f) => (f.path in key ? key[f.path] : null));
  }

  /** The key document of a tuple (chunk bounds). */
  documentOf(tuple: KeyTuple): Record<string, unknown> {
    const doc: Record<string, unknown> = {};
    this.fields.forEach((f, i) => (doc[f.path] = tuple[i]));
    return doc;
  }

  /** The bound below every key (`{a: MinKey}`) and above every key. */
  minTuple(): KeyTuple {
    return this.fields.map(() => MIN_KEY);
  }

  maxTuple(): KeyTuple {
    return this.fields.map(() => MAX_KEY);
  }

  /**
   * The shard key of a raw document: each field's value (hashed fields hashed), a missing field
   * as null. Reads only the shard-key paths; throws for arrays on a path.
   */
  keyOfRaw(doc: Buffer): KeyTuple {
    const tuple: KeyTuple = new Array(this.fields.length);
    for (let i = 0; i < this.fields.length; i++) tuple[i] = this.valueOfRaw(doc, this.fields[i]!);
    return tuple;
  }

  /** The value of one pattern field in a raw document, as `keyOfRaw` gives it. */
  valueOfRaw(doc: Buffer, field: ShardKeyField): unknown {
    const found = locate(doc, field.parts, 0, 0);
    if (found === undefined) return field.hashed ? hashValue(null) : null;
    if (found.type === 0x04) throw arrayInShardKey(field.path);
    if (field.hashed) return hashRawValue(doc, found.type, found.valueAt, found.end);
    return decodeElement(doc, { type: found.type, start: found.start, end: found.end }, typed);
  }

  /** The values a document key records: the shard key fields (unhashed) then `_id`, as mongod. */
  documentKeyOfRaw(doc: Buffer, id: unknown): Record<string, unknown> {
    const key: Record<string, unknown> = {};
    for (const field of this.fields) {
      const found = locate(doc, field.parts, 0, 0);
      if (found === undefined || found.type === 0x04) continue;
      key[field.path] = decodeElement(doc, { type: found.type, start: found.start, end: found.end }, typed);
    }
    if (!this.includesId) key._id = id;
    return key;
  }

  /**
   * The keys a query fixes: every shard-key field has an equality (`v`, `{$eq: v}`, or `$in` of
   * a few values, also inside a top-level `$and`). Undefined when it does not (the query is
   * broadcast). Values are as decoded from the command; hashed fields are hashed.
   */
  keysOfQuery(filter: Record<string, unknown> | undefined): KeyTuple[] | undefined {
    if (!filter) return undefined;
    const perField: unknown[][] = [];
    for (const field of this.fields) {
      const values = equalityValues(filter, field.path);
      if (values === undefined) return undefined;
      perField.push(field.hashed ? values.map((v) => hashValue(v)) : values);
    }
    let tuples: KeyTuple[] = [[]];
    for (const values of perField) {
      tuples = tuples.flatMap((t) => values.map((v) => [...t, v]));
      if (tuples.length > 1000) return undefined;
    }
    return tuples;
  }

  /** A document key (from a change event, `{sk..., _id}`) has every shard-key field. */
  hasFullKey(doc: Record<string, unknown>): boolean {
    return this.fields.every((f) => valueAtPath(doc, f.path) !== undefined);
  }

  /** The key tuple of a decoded document (values promoted or typed), missing fields as null. */
  keyOfDocument(doc: Record<string, unknown>): KeyTuple {
    return this.fields.map((f) => {
      const v = valueAtPath(doc, f.path);
      if (Array.isArray(v)) throw arrayInShardKey(f.path);
      return f.hashed ? hashValue(v ?? null) : (v ?? null);
    });
  }
}

/** A value at a dotted path of a decoded document (no array traversal). */
function valueAtPath(doc: Record<string, unknown>, path: string): unknown {
  let at: unknown = doc;
  for (const part of path.split('.')) {
    if (at === null || typeof at !== 'object' || Array.isArray(at)) return undefined;
    at = (at as Record<string, unknown>)[part];
  }
  return at;
}

function isOperatorObject(v: unknown): v is Record<string, unknown> {
  if (
    v === null ||
    typeof v !== 'object' ||
    Array.isArray(v) ||
    (v as { _bsontype?: string })._bsontype !== undefined ||
    v instanceof Date
  ) {
    return false;
  }
  const keys = Object.keys(v);
  return keys.length > 0 && keys.every((k) => k.startsWith('$'));
}

/** The values a filter fixes `path` to by equality (a list for `$in`), or undefined. */
function equalityValues(filter: Record<string, unknown>, path: string): unknown[] | undefined {
  if (path in filter) {
    const condition = filter[path];
    if (!isOperatorObject(condition)) return isTargetable(condition) ? [condition] : undefined;
    if ('$eq' in condition && isTargetable(condition.$eq)) return [condition.$eq];
    if (Array.isArray(condition.$in) && condition.$in.length > 0 && condition.$in.every(isTargetable)) return condition.$in;
  }
  if (Array.isArray(filter.$and)) {
    for (const clause of filter.$and) {
      if (clause && typeof clause === 'object') {
        const found = equalityValues(clause as Record<string, unknown>, path);
        if (found) return found;
      }
    }
  }
  return undefined;
}

/** Values an equality can target by: not arrays, regexes or documents with operators. */
function isTargetable(v: unknown): boolean {
  if (Array.isArray(v) || v instanceof RegExp) return false;
  const type = (v as { _bsontype?: string } | null)?._bsontype;
  return type !== 'BSONRegExp' && type !== 'MinKey' && type !== 'MaxKey';
}

interface Located {
  type: number;
  start: number;
  valueAt: number;
  end: number;
}

/** Finds a dotted path in a raw document (stopping at arrays, which it returns as found). */
function locate(doc: Buffer, parts: readonly Buffer[], start: number, depth: number): Located | undefined {
  const name = parts[depth]!;
  const end = start + doc.readInt32LE(start) - 1;
  for (let at = start + 4; at < end;) {
    const type = doc[at]!;
    // Field names are short: byte loops beat native calls (this runs for every routed document).
    let nameEnd = at + 1;
    while (doc[nameEnd] !== 0) nameEnd++;
    const valueAt = nameEnd + 1;
    const next = valueAt + valueSize(doc, type, valueAt);
    if (nameEnd - at - 1 === name.length && sameBytes(doc, at + 1, name)) {
      if (depth + 1 === parts.length || type === 0x04) return { type, start: at, valueAt, end: next };
      if (type === 0x03) return locate(doc, parts, valueAt, depth + 1);
      return undefined;
    }
    at = next;
  }
  return undefined;
}

function sameBytes(doc: Buffer, at: number, name: Buffer): boolean {
  for (let i = 0; i < name.length; i++) if (doc[at + i] !== name[i]) return false;
  return true;
}

/** Whether a tuple lies in [min, max). */
export function inRange(tuple: KeyTuple, min: KeyTuple, max: KeyTuple): boolean {
  return compareTuples(tuple, min) >= 0 && compareTuples(tuple, max) < 0;
}
