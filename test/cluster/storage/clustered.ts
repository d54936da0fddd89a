/**
 * Clustered collections (mongod 5.3+; shapes as 7.0): documents are stored in `_id` order, with
 * no separate `_id` index, optionally with a collection-level TTL (`expireAfterSeconds`) that
 * deletes documents whose `_id` is a date older than it. Time-series buckets collections are
 * clustered too, in the legacy form `clusteredIndex: true` (clustered_util.cpp).
 *
 * Here a clustered collection is an ordinary `Collection` (its `_id` B+tree already is the
 * clustered order) whose collection scans walk `_id` order, whose `listIndexes` shows the
 * clustered index (`clustered: true`) and whose `listCollections` entry has no `idIndex`.
 */
import { Long } from 'bson';
import { ServerError } from '../errors.js';
import { bsonTypeName } from '../commands/args.js';
import type { Collection, CollectionOptions, DocEntry } from './collection.js';
import { isDocument } from './keys.js';

/** The clustered index as `listCollections` shows it (ClusteredIndexSpec: v, key, name, unique). */
export interface ClusteredIndexSpec {
  v: number;
  key: { _id: number };
  name: string;
  unique: true;
}

/** Prefix of the buckets collection behind a time-series collection. */
export const BUCKETS_PREFIX = 'system.buckets.';

/**
 * Checks a `create` command's `clusteredIndex` and returns it as stored: the canonical spec
 * (name defaulting to `_id_`, `v: 2`), or `true` for a buckets collection's legacy form. Errors are
 * clustered_util's / create_collection.cpp's (checkClusteredIndexSpec).
 */
export function parseClusteredIndex(value: unknown, collectionName: string): ClusteredIndexSpec | true | undefined {
  if (typeof value === 'boolean') {
    if (!value) return undefined;
    if (!collectionName.startsWith(BUCKETS_PREFIX)) {
      throw new ServerError(
        'InvalidOptions',
        "The 'clusteredIndex' legacy format {clusteredIndex: <bool>} is only supported for specific internal collections.",
      );
    }
    return true;
  }
  if (!isDocument(value)) {
    throw new ServerError(
      'TypeMismatch',
      `BSON field 'create.clusteredIndex' is the wrong type '${bsonTypeName(value)}', expected types '[bool, object]'`,
    );
  }
  for (const field of Object.keys(value)) {
    if (!['v', 'key', 'name', 'unique'].includes(field)) {
      throw new ServerError('IDLUnknownField', `BSON field 'ClusteredIndexSpec.${field}' is an unknown field.`);
    }
  }
  if (value.key === undefined)
    throw new ServerError('IDLFailedToParse', "BSON field 'ClusteredIndexSpec.key' is missing but a required field");
  if (value.unique === undefined) {
    throw new ServerError('IDLFailedToParse', "BSON field 'ClusteredIndexSpec.unique' is missing but a required field");
  }
  if (value.unique !== true) throw new ServerError(5979700, 'The clusteredIndex option requires unique: true to be specified');
  const key = isDocument(value.key) ? value.key : {};
  const keys = Object.keys(key);
  if (keys.length !== 1 || keys[0] !== '_id' || Number(key._id) !== 1) {
    throw new ServerError('InvalidIndexSpecificationOption', 'The clusteredIndex option is only supported for key: {_id: 1}');
  }
  const v = value.v ?? 2;
  if (v !== 2) {
    throw new ServerError(5979704, `Invalid clusteredIndex specification; cannot create a clusteredIndex with v=${String(v)}`);
  }
  if (value.name !== undefined && typeof value.name !== 'string') {
    throw new ServerError(
      'TypeMismatch',
      `BSON field 'ClusteredIndexSpec.name' is the wrong type '${bsonTypeName(value.name)}', expected type 'string'`,
    );
  }
  return { v: 2, key: { _id: 1 }, name: (value.name as string | undefined) ?? '_id_', unique: true };
}

/**
 * Checks a collection-level `expireAfterSeconds` (index_key_validate's kClusteredTTLIndex mode:
 * not negative, and no more seconds than have passed since the epoch, since time-series buckets
 * are clustered by ObjectIds whose time is 32-bit seconds) and returns it as mongod stores it,
 * an int64.
 */
export function checkCollectionTtl(value: unknown, command: string): Long {
  if (typeof value !== 'number' && (value as { _bsontype?: string } | null)?._bsontype !== 'Long') {
    throw new ServerError(
      'TypeMismatch',
      `BSON field '${command}.expireAfterSeconds' is the wrong type '${bsonTypeName(value)}', expected types '[string, long]'`,
    );
  }
  const seconds = Math.trunc(Number(value));
  if (seconds < 0) throw new ServerError('InvalidOptions', "TTL index 'expireAfterSeconds' option cannot be less than 0");
  if (seconds * 1000 > Date.now()) {
    throw new ServerError('InvalidOptions', "TTL index 'expireAfterSeconds' option must be within an acceptable range, try a lower number");
  }
  return Long.fromNumber(seconds);
}

/** Whether the collection is clustered (a clustered collection or a time-series buckets collection). */
export function isClustered(options: CollectionOptions): boolean {
  return options.clusteredIndex !== undefined;
}

/**
 * The clustered index as `listIndexes` shows it for a clustered collection
 * (clustered_util::formatClusterKeyForListIndexes: the spec, the collation, the TTL, then
 * `clustered: true`); undefined for buckets collections, whose listing leaves it out.
 */
export function clusteredIndexListing(options: CollectionOptions): Record<string, unknown> | undefined {
  const spec = options.clusteredIndex;
  if (spec === undefined || spec === true) return undefined;
  const listed: Record<string, unknown> = { ...(spec as ClusteredIndexSpec) };
  if (options.collation) listed.collation = options.collation;
  if (options.expireAfterSeconds !== undefined) listed.expireAfterSeconds = options.expireAfterSeconds;
  listed.clustered = true;
  return listed;
}

/** Seconds of an `expireAfterSeconds` option (a Long or a number). */
function ttlSeconds(options: CollectionOptions): number | undefined {
  const value = options.expireAfterSeconds;
  return value === undefined ? undefined : Number(value);
}

/**
 * The documents a clustered collection's TTL expires at `now`. A user collection expires
 * documents whose `_id` is a date older than `expireAfterSeconds` (ttl.cpp scans the cluster keys
 * of dates up to the expiry date); a buckets collection expires buckets whose ObjectId time (their
 * rounded earliest measurement) is older than that by more than `bucketMaxSpanSeconds`, so that
 * every measurement in them has expired. Buckets dated before 1970 or after 2038 never expire.
 */
export function expiredByCollectionTtl(collection: Collection, now: number): DocEntry[] {
  const seconds = ttlSeconds(collection.options);
  if (seconds === undefined || !isClustered(collection.options)) return [];
  const cutoff = now - seconds * 1000;
  const expired: DocEntry[] = [];
  const timeseries = collection.options.timeseries as { bucketMaxSpanSeconds?: number } | undefined;
  if (timeseries) {
    const limit = cutoff - (timeseries.bucketMaxSpanSeconds ?? 3600) * 1000;
    for (const entry of collection.byId.values()) {
      const id = entry.id as { _bsontype?: string; getTimestamp?: () => Date };
      if (id?._bsontype !== 'ObjectId') continue;
      const time = id.getTimestamp!().getTime();
      if (time <= limit) expired.push(entry);
    }
    return expired;
  }
  for (const entry of collection.byId.values()) {
    if (entry.id instanceof Date && entry.id.getTime() <= cutoff) expired.push(entry);
  }
  return expired;
}

/**
 * A `collMod`'s `expireAfterSeconds` for a collection clustered by `_id`: seconds (an int64, as
 * stored) or `'off'` to remove the TTL. Errors as coll_mod.cpp's: InvalidOptions on a collection
 * that is not clustered, for another string or a negative number; TypeMismatch for other types.
 */
export function parseCollModTtl(options: CollectionOptions, value: unknown): Long | 'off' {
  if (!isClustered(options)) {
    throw new ServerError('InvalidOptions', "'expireAfterSeconds' option is only supported on collections clustered by _id");
  }
  if (typeof value === 'string') {
    if (value !== 'off') {
      throw new ServerError(
        'InvalidOptions',
        `Invalid string value for the 'clusteredIndex::expireAfterSeconds' option. Got: '${value}'. Accepted value is 'off'`,
      );
    }
    return 'off';
  }
  return checkCollectionTtl(value, 'collMod');
}
