/**
 * Index specifications as `createIndexes` checks and stores them (mongod's index_key_validate):
 * the key pattern rules, the allowed options, the stored shape (`v`, `key`, `name`, then the
 * options; text and 2dsphere indexes get the fields mongod adds), and the comparisons that decide
 * whether a requested index already exists or conflicts with one.
 */
import { ServerError } from '../errors.js';
import { bsonTypeName } from '../commands/args.js';
import { describeValue } from './keys.js';
import type { IndexSpec } from './indexes.js';

/** Index types mongod knows (key pattern string values). */
const PLUGINS = new Set(['2d', '2dsphere', 'text', 'hashed', 'wildcard', 'columnstore', 'geoHaystack']);

/** Options an index specification may carry. */
const ALLOWED_FIELDS = new Set([
  'v',
  'key',
  'name',
  'unique',
  'sparse',
  'partialFilterExpression',
  'expireAfterSeconds',
  'hidden',
  'prepareUnique',
  'collation',
  'background',
  'dropDups',
  'ns',
  'storageEngine',
  'weights',
  'default_language',
  'language_override',
  'textIndexVersion',
  '2dsphereIndexVersion',
  'bits',
  'min',
  'max',
  'coarsestIndexedLevel',
  'finestIndexedLevel',
  'wildcardProjection',
  'bucketSize',
  'clustered',
  // A time-series buckets index keeps the user's specification (6.0+).
  'originalSpec',
]);

/** Options the `_id` index may carry. */
const ID_INDEX_FIELDS = new Set(['v', 'key', 'name', 'ns', 'collation']);

/** Operators a partialFilterExpression may use. */
const PARTIAL_OPERATORS = new Set(['$eq', '$exists', '$gt', '$gte', '$lt', '$lte', '$type', '$and', '$or', '$in']);

/** mongod's largest expireAfterSeconds (and the value that means "never"). */
export const MAX_EXPIRE_AFTER_SECONDS = 2147483647;

function cannot(message: string): ServerError {
  return new ServerError('CannotCreateIndex', message);
}

function isObject(v: unknown): v is Record<string, unknown> {
  return (
    typeof v === 'object' &&
    v !== null &&
    !Array.isArray(v) &&
    (v as { _bsontype?: string })._bsontype === undefined &&
    !(v instanceof Date)
  );
}

/** validateKeyPattern: non-empty, numbers non-zero, one known plugin, legal field names. */
export function validateKeyPattern(key: Record<string, unknown>): void {
  const entries = Object.entries(key);
  if (entries.length === 0) throw cannot('Index keys cannot be empty.');
  const plugins = new Set(entries.map(([, v]) => v).filter((v): v is string => typeof v === 'string'));
  for (const plugin of plugins) if (!PLUGINS.has(plugin)) throw cannot(`Unknown index plugin '${plugin}'`);
  for (const [field, value] of entries) {
    if (typeof value === 'number' || (value as { _bsontype?: string })?._bsontype === 'Long') {
      const n = Number(value);
      if (Number.isNaN(n)) throw cannot('Values in the index key pattern cannot be NaN.');
      if (n === 0) throw cannot('Values in the index key pattern cannot be 0.');
    } else if (typeof value !== 'string') {
      throw cannot(
        `Values in v:2 index key pattern cannot be of type ${bsonTypeName(value)}. Only numbers > 0, numbers < 0, and strings are allowed.`,
      );
    }
    if (typeof value === 'string' && plugins.size > 1) throw cannot("Can't use more than one index plugin for a single index.");
    if (field.length === 0) throw cannot('Index keys cannot be an empty field.');
    if (field === '$**' || field.endsWith('.$**')) continue;
    const parts = field.split('.');
    parts.forEach((part, i) => {
      if (part.length === 0) throw cannot('Index keys cannot contain an empty field.');
      const dbRef = i > 0 && (part === '$db' || part === '$id' || part === '$ref');
      if (part.startsWith('$') && !dbRef) throw cannot("Index key contains an illegal field name: field name starts with '$'.");
    });
  }
}

function validatePartialFilter(filter: Record<string, unknown>): void {
  for (const [key, value] of Object.entries(filter)) {
    if (key.startsWith('$')) {
      if (!PARTIAL_OPERATORS.has(key)) throw cannot(`Expression not supported in partial index: ${key}`);
      if (Array.isArray(value)) for (const clause of value) if (isObject(clause)) validatePartialFilter(clause);
      continue;
    }
    if (isObject(value) && Object.keys(value).some((k) => k.startsWith('$'))) {
      for (const op of Object.keys(value)) {
        if (!PARTIAL_OPERATORS.has(op)) throw cannot(`Expression not supported in partial index: ${op}`);
      }
    }
  }
}

/** Text index key fields are stored as `_fts`/`_ftsx` with their weights alongside. */
function normalizeText(spec: Record<string, unknown>): void {
  const key = spec.key as Record<string, unknown>;
  if (!Object.values(key).includes('text') || '_fts' in key) return;
  const normalized: Record<string, unknown> = {};
  const weights: Record<string, unknown> = { ...(isObject(spec.weights) ? spec.weights : {}) };
  let placed = false;
  for (const [field, value] of Object.entries(key)) {
    if (value === 'text') {
      weights[field] ??= 1;
      if (!placed) {
        normalized._fts = 'text';
        normalized._ftsx = 1;
        placed = true;
      }
    } else normalized[field] = value;
  }
  spec.key = normalized;
  spec.weights = weights;
  spec.default_language ??= 'english';
  spec.language_override ??= 'language';
  spec.textIndexVersion ??= 3;
}

/**
 * Checks a requested index specification and returns it as mongod stores it. `collectionCollation`
 * is the collection's default collation, which an index without its own inherits.
 */
export function normalizeIndexSpec(
  requested: Record<string, unknown>,
  collectionCollation: Record<string, unknown> | undefined,
  fillCollation: (spec: Record<string, unknown>) => Record<string, unknown> | undefined,
): IndexSpec {
  if (!isObject(requested)) throw new ServerError('TypeMismatch', 'Each index specification must be an object');
  for (const field of Object.keys(requested)) {
    if (!ALLOWED_FIELDS.has(field)) {
      throw new ServerError(
        'InvalidIndexSpecificationOption',
        `The field '${field}' is not valid for an index specification. Specification: ${describeValue(requested)}`,
      );
    }
  }
  const { key, name } = requested;
  if (key === undefined) throw new ServerError('FailedToParse', "The 'key' field is a required property of an index specification");
  if (!isObject(key)) throw new ServerError('TypeMismatch', `The field 'key' must be an object, but got ${bsonTypeName(key)}`);
  validateKeyPattern(key);
  if (name === undefined) throw new ServerError('FailedToParse', "The 'name' field is a required property of an index specification");
  if (typeof name !== 'string') throw new ServerError('TypeMismatch', `The field 'name' must be a string, but got ${bsonTypeName(name)}`);
  if (name.length === 0) throw cannot('The index name cannot be empty');
  const v = requested.v ?? 2;
  if (typeof v !== 'number' || (v !== 1 && v !== 2)) {
    throw cannot(`Invalid index specification ${describeValue(requested)}; cannot create an index with v=${String(v)}`);
  }
  const isIdIndex = Object.keys(key).length === 1 && '_id' in key && !(typeof key._id === 'string');
  if (isIdIndex && name === '_id_') {
    for (const field of Object.keys(requested)) {
      if (!ID_INDEX_FIELDS.has(field)) {
        throw new ServerError(
          'InvalidIndexSpecificationOption',
          `The field '${field}' is not valid for an _id index specification. Specification: ${describeValue(requested)}`,
        );
      }
    }
  }
  if (requested.partialFilterExpression !== undefined) {
    if (!isObject(requested.partialFilterExpression)) {
      throw new ServerError(
        'TypeMismatch',
        `The field 'partialFilterExpression' must be an object, but got ${bsonTypeName(requested.partialFilterExpression)}`,
      );
    }
    if (requested.sparse === true) throw cannot('cannot mix "partialFilterExpression" and "sparse" options');
    validatePartialFilter(requested.partialFilterExpression);
  }
  if (requested.expireAfterSeconds !== undefined) {
    const seconds = requested.expireAfterSeconds;
    if (typeof seconds !== 'number' || Number.isNaN(seconds)) {
      throw cannot(
        `TTL index 'expireAfterSeconds' option must be numeric, but received a type of '${bsonTypeName(seconds)}'. Index spec: ${describeValue(requested)}`,
      );
    }
    if (seconds < 0 || seconds > MAX_EXPIRE_AFTER_SECONDS) {
      throw cannot(
        `TTL index 'expireAfterSeconds' option must be within an acceptable range, try a lower number. Index spec: ${describeValue(requested)}`,
      );
    }
    if (Object.keys(key).length > 1)
      throw cannot(`TTL indexes are single-field indexes, compound indexes do not support TTL. Index spec: ${describeValue(requested)}`);
  }
  const plugin = Object.values(key).find((value) => typeof value === 'string');
  if (requested.unique === true && (plugin === 'hashed' || plugin === 'text' || plugin === '2dsphere' || plugin === '2d')) {
    throw new ServerError(
      plugin === 'hashed' ? 16764 : 'CannotCreateIndex',
      plugin === 'hashed'
        ? 'Currently hashed indexes cannot guarantee uniqueness. Use a regular index.'
        : `Index type '${plugin}' does not support the unique option`,
    );
  }
  if (requested.hidden === true && name === '_id_') throw new ServerError('BadValue', "can't hide _id index");

  // Stored shape: v, key, name, then the other options as given; collation (filled in) last.
  const spec: Record<string, unknown> = { v, key, name };
  for (const [field, value] of Object.entries(requested)) {
    if (field === 'v' || field === 'key' || field === 'name' || field === 'ns' || field === 'collation') continue;
    spec[field] = value;
  }
  if (plugin === 'text') normalizeText(spec);
  if (plugin === '2dsphere') spec['2dsphereIndexVersion'] ??= 3;
  const collation = requested.collation !== undefined ? requested.collation : collectionCollation;
  if (collation !== undefined) {
    if (!isObject(collation))
      throw new ServerError('TypeMismatch', `The field 'collation' must be an object, but got ${bsonTypeName(collation)}`);
    const full = fillCollation(collation);
    if (full) spec.collation = full;
  }
  return spec as IndexSpec;
}

/**
 * An index's signature: the options that, with the key pattern, tell two indexes apart, so that
 * mongod (5.0+, SERVER-47657) lets both exist under different names: collation, partial filter,
 * `unique`, `sparse` and a wildcard projection. A missing `unique`/`sparse` is `false`
 * (SERVER-91562).
 */
function signature(spec: IndexSpec): string {
  return JSON.stringify([
    spec.collation ?? null,
    spec.partialFilterExpression ?? null,
    spec.unique === true,
    spec.sparse === true,
    spec.wildcardProjection ?? null,
  ]);
}

/** Options compared to decide whether a requested index is the one that exists. */
function options(spec: IndexSpec): string {
  const rest: Record<string, unknown> = {};
  for (const [field, value] of Object.entries(spec)) {
    if (field === 'name' || field === 'v' || field === 'background' || field === 'hidden' || value === undefined) continue;
    if ((field === 'unique' || field === 'sparse') && value === false) continue;
    rest[field] = value;
  }
  return JSON.stringify(Object.entries(rest).sort(([a], [b]) => (a < b ? -1 : 1)));
}

function sameKey(a: Record<string, unknown>, b: Record<string, unknown>): boolean {
  return (
    JSON.stringify(Object.entries(a).map(([k, v]) => [k, typeof v === 'string' ? v : Number(v)])) ===
    JSON.stringify(Object.entries(b).map(([k, v]) => [k, typeof v === 'string' ? v : Number(v)]))
  );
}

/**
 * Compares a requested index with the existing ones as mongod's IndexCatalog does
 * (`_doesSpecConflictWithExisting`, `IndexDescriptor::compareIndexOptions`): 'exists' when it is
 * already there, 'new' when it may be built, or throws mongod's conflict errors. The same name
 * with another key or signature is IndexKeySpecsConflict (86); the same name and signature with
 * other options, or the same key and signature under another name, IndexOptionsConflict (85).
 */
export function compareWithExisting(requested: IndexSpec, existing: IndexSpec[]): 'exists' | 'new' {
  for (const other of existing) {
    if (other.name === requested.name) {
      if (!sameKey(other.key, requested.key) || signature(other) !== signature(requested)) {
        throw new ServerError(
          'IndexKeySpecsConflict',
          `An existing index has the same name as the requested index. When index names are not specified, they are auto generated and can cause conflicts. Please refer to our documentation. Requested index: ${describeValue(requested)}, existing index: ${describeValue(other)}`,
        );
      }
      if (options(other) !== options(requested)) {
        throw new ServerError(
          'IndexOptionsConflict',
          `An equivalent index already exists with the same name but different options. Requested index: ${describeValue(requested)}, existing index: ${describeValue(other)}`,
        );
      }
      return 'exists';
    }
  }
  for (const other of existing) {
    if (!sameKey(other.key, requested.key) || signature(other) !== signature(requested)) continue;
    if (options(other) === options(requested)) {
      throw new ServerError('IndexOptionsConflict', `Index already exists with a different name: ${other.name}`);
    }
    throw new ServerError(
      'IndexOptionsConflict',
      `An equivalent index already exists with a different name and options. Requested index: ${describeValue(requested)}, existing index: ${describeValue(other)}`,
    );
  }
  return 'new';
}
