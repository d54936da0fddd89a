/**
 * `collMod`: index options (`hidden`, `expireAfterSeconds`, `prepareUnique`, `unique`,
 * `forceNonUnique`, also as a `dryRun` of the unique conversion), capped limits
 * (`cappedSize`, `cappedMax`: excess documents go on the next insert, as in mongod), document
 * validation settings, `changeStreamPreAndPostImages`, and a view's `viewOn`/`pipeline`.
 * The oplog entry is mongod's: `o: {collMod, ...changes, index: {name, ...changed options}}`,
 * `o2: {collectionOptions_old: {uuid, ...}, indexOptions_old: {...}}`, which change streams turn
 * into a `modify` event.
 */
import { BSON } from 'bson';
import { formatDocument } from '../bson-text.js';
import { ServerError } from '../errors.js';
import type { Instance, OpContext } from '../instance.js';
import type { Collection, View } from '../storage/collection.js';
import type { Index } from '../storage/indexes.js';
import { validateCollectionName } from '../storage/catalog.js';
import { parseCollModTtl } from '../storage/clustered.js';
import { isTimeseriesView } from '../storage/timeseries.js';
import { collModTimeseries } from './timeseries/catalog.js';
import { checkValidator } from '../validation.js';
import { promoted } from '../raw.js';
import { Args, bsonTypeName } from './args.js';
import { checkCappedMax, checkCappedSize, checkViewGraph, validationSettings, viewPipeline } from './catalog.js';
import { defineCommand } from './registry.js';

/** mongod's limit on a TTL index's expireAfterSeconds (max int32). */
export const MAX_EXPIRE_AFTER_SECONDS = 2147483647;

const INDEX_FIELDS = new Set(['name', 'keyPattern', 'expireAfterSeconds', 'hidden', 'prepareUnique', 'unique', 'forceNonUnique']);

/** A "safeBool" option: booleans and numbers (non-zero is true), as mongod's IDL accepts. */
function safeBool(field: string, v: unknown): boolean | undefined {
  if (v === undefined || v === null) return undefined;
  if (typeof v === 'boolean') return v;
  if (typeof v === 'number') return v !== 0;
  const t = (v as { _bsontype?: string })._bsontype;
  if (t === 'Long' || t === 'Decimal128' || t === 'Double' || t === 'Int32') return Number(String(v)) !== 0;
  throw new ServerError(
    'TypeMismatch',
    `BSON field '${field}' is the wrong type '${bsonTypeName(v)}', expected types '[bool, long, int, decimal, double]'`,
  );
}

function sameKey(a: Record<string, unknown>, b: Record<string, unknown>): boolean {
  const ka = Object.keys(a);
  const kb = Object.keys(b);
  return ka.length === kb.length && ka.every((k, i) => k === kb[i] && String(a[k]) === String(b[k]));
}

function findIndex(collection: Collection, request: Record<string, unknown>): Index {
  if (request.name !== undefined) {
    if (typeof request.name !== 'string')
      throw new ServerError(
        'TypeMismatch',
        `BSON field 'collMod.index.name' is the wrong type '${bsonTypeName(request.name)}', expected type 'string'`,
      );
    const index = collection.indexes.find((i) => i.name === request.name);
    if (!index) throw new ServerError('IndexNotFound', `cannot find index ${request.name} for ns ${collection.ns}`);
    return index;
  }
  const keyPattern = request.keyPattern as Record<string, unknown>;
  if (typeof keyPattern !== 'object' || keyPattern === null || Array.isArray(keyPattern)) {
    throw new ServerError(
      'TypeMismatch',
      `BSON field 'collMod.index.keyPattern' is the wrong type '${bsonTypeName(keyPattern)}', expected type 'object'`,
    );
  }
  const matches = collection.indexes.filter((i) => sameKey(i.spec.key, keyPattern));
  if (matches.length > 1) {
    throw new ServerError(
      'AmbiguousIndexKeyPattern',
      `index keyPattern ${formatDocument(keyPattern)} matches ${matches.length} indexes, must use index name. Conflicting indexes:${formatDocument(matches[0].spec)}, ${formatDocument(matches[1].spec)}`,
    );
  }
  if (matches.length === 0)
    throw new ServerError('IndexNotFound', `cannot find index ${formatDocument(keyPattern)} for ns ${collection.ns}`);
  return matches[0];
}

/** Groups of `_id`s sharing one key of `index`: what keeps it from becoming unique. */
function uniqueViolations(collection: Collection, index: Index): { ids: unknown[] }[] {
  const owners = new Map<string, unknown[]>();
  for (const entry of collection.byRid.values()) {
    const doc = BSON.deserialize(entry.raw, promoted);
    for (const key of index.keysOf(doc)) {
      const ids = owners.get(key.canonical);
      if (ids) ids.push(entry.id);
      else owners.set(key.canonical, [entry.id]);
    }
  }
  return [...owners.values()].filter((ids) => ids.length > 1).map((ids) => ({ ids }));
}

function convertToUniqueError(violations: { ids: unknown[] }[]): ServerError {
  return new ServerError(
    'CannotConvertIndexToUnique',
    'Cannot convert the index to unique. Please resolve conflicting documents before running collMod again.',
    { violations },
  );
}

interface IndexChange {
  index: Index;
  expireAfterSeconds?: number;
  hidden?: boolean;
  prepareUnique?: boolean;
  unique?: boolean;
  forceNonUnique?: boolean;
}

/** Parses and checks the `index` option; returns the changes that are not no-ops. */
function parseIndexChange(collection: Collection, request: Record<string, unknown>): { change: IndexChange; modifications: number } {
  for (const key of Object.keys(request)) {
    if (!INDEX_FIELDS.has(key)) throw new ServerError('IDLUnknownField', `BSON field 'collMod.index.${key}' is an unknown field.`);
  }
  if (request.name !== undefined && request.keyPattern !== undefined)
    throw new ServerError('InvalidOptions', 'Cannot specify both key pattern and name.');
  if (request.name === undefined && request.keyPattern === undefined)
    throw new ServerError('InvalidOptions', 'Must specify either index name or key pattern.');
  const expireAfterSeconds = request.expireAfterSeconds;
  const hidden = safeBool('collMod.index.hidden', request.hidden);
  const prepareUnique = safeBool('collMod.index.prepareUnique', request.prepareUnique);
  const unique = safeBool('collMod.index.unique', request.unique);
  const forceNonUnique = safeBool('collMod.index.forceNonUnique', request.forceNonUnique);
  if (
    expireAfterSeconds === undefined &&
    hidden === undefined &&
    prepareUnique === undefined &&
    unique === undefined &&
    forceNonUnique === undefined
  ) {
    throw new ServerError('InvalidOptions', 'no expireAfterSeconds, hidden, unique, or prepareUnique field');
  }
  if (unique !== undefined && forceNonUnique !== undefined) {
    throw new ServerError('InvalidOptions', "collMod does not support 'unique' and 'forceNonUnique' options at the same time");
  }
  let ttl: number | undefined;
  if (expireAfterSeconds !== undefined) {
    const n = typeof expireAfterSeconds === 'number' ? expireAfterSeconds : Number(String(expireAfterSeconds));
    if (Number.isNaN(n) || typeof expireAfterSeconds === 'string' || typeof expireAfterSeconds === 'boolean') {
      throw new ServerError(
        'TypeMismatch',
        `BSON field 'collMod.index.expireAfterSeconds' is the wrong type '${bsonTypeName(expireAfterSeconds)}', expected type 'long'`,
      );
    }
    if (collection.capped) throw new ServerError('InvalidOptions', 'TTL indexes are not supported for capped collections.');
    if (n < 0)
      throw new ServerError('InvalidOptions', `TTL index 'expireAfterSeconds' option cannot be less than 0. expireAfterSeconds: ${n}`);
    if (n > MAX_EXPIRE_AFTER_SECONDS) {
      throw new ServerError(
        'InvalidOptions',
        `TTL index 'expireAfterSeconds' option must be within an acceptable range, try a lower number. expireAfterSeconds: ${n}`,
      );
    }
    ttl = Math.trunc(n);
  }
  const index = findIndex(collection, request);
  const change: IndexChange = { index };
  let modifications = 0;
  if (ttl !== undefined) {
    modifications++;
    if (index.spec.expireAfterSeconds === undefined) {
      if (index.name === '_id_') throw new ServerError('InvalidOptions', 'the _id field does not support TTL indexes');
      if (Object.keys(index.spec.key).length !== 1)
        throw new ServerError('InvalidOptions', 'TTL indexes are single-field indexes, compound indexes do not support TTL');
    }
    change.expireAfterSeconds = ttl;
  }
  if (unique !== undefined) {
    modifications++;
    if (!unique) throw new ServerError('BadValue', 'Cannot make index non-unique');
    if (!index.spec.unique) {
      if (!index.spec.prepareUnique) {
        throw new ServerError('InvalidOptions', "Cannot make index unique with 'prepareUnique=false'. Run collMod to set it first.");
      }
      change.unique = true;
    }
  }
  if (hidden !== undefined) {
    modifications++;
    if (collection.name.startsWith('system.')) throw new ServerError('BadValue', "Can't hide index on system collection");
    if (index.name === '_id_') throw new ServerError('BadValue', "can't hide _id index");
    if ((index.spec.hidden ?? false) !== hidden) change.hidden = hidden;
  }
  if (prepareUnique !== undefined) {
    modifications++;
    if ((index.spec.prepareUnique ?? false) !== prepareUnique && !index.spec.unique) change.prepareUnique = prepareUnique;
  }
  if (forceNonUnique !== undefined) {
    modifications++;
    if (!forceNonUnique) throw new ServerError('BadValue', "'forceNonUnique: false' is not supported");
    if (index.spec.unique) change.forceNonUnique = true;
  }
  return { change, modifications };
}

/** Applies an index change; returns the reply fields and the old options for the oplog. */
function applyIndexChange(
  collection: Collection,
  change: IndexChange,
): { reply: Record<string, unknown>; old: Record<string, unknown>; changed: Record<string, unknown> } {
  const spec = change.index.spec;
  const reply: Record<string, unknown> = {};
  const old: Record<string, unknown> = {};
  const changed: Record<string, unknown> = {};
  if (change.expireAfterSeconds !== undefined) {
    if (spec.expireAfterSeconds !== undefined) {
      reply.expireAfterSeconds_old = spec.expireAfterSeconds;
      old.expireAfterSeconds = spec.expireAfterSeconds;
    }
    reply.expireAfterSeconds_new = change.expireAfterSeconds;
    if (spec.expireAfterSeconds !== change.expireAfterSeconds) changed.expireAfterSeconds = change.expireAfterSeconds;
    spec.expireAfterSeconds = change.expireAfterSeconds;
  }
  if (change.hidden !== undefined) {
    reply.hidden_old = spec.hidden ?? false;
    reply.hidden_new = change.hidden;
    old.hidden = spec.hidden ?? false;
    changed.hidden = change.hidden;
    if (change.hidden) spec.hidden = true;
    else delete spec.hidden;
  }
  if (change.unique) {
    reply.unique_new = true;
    changed.unique = true;
    delete spec.prepareUnique;
    spec.unique = true;
  }
  if (change.prepareUnique !== undefined) {
    reply.prepareUnique_old = spec.prepareUnique ?? false;
    reply.prepareUnique_new = change.prepareUnique;
    old.prepareUnique = spec.prepareUnique ?? false;
    changed.prepareUnique = change.prepareUnique;
    if (change.prepareUnique) spec.prepareUnique = true;
    else delete spec.prepareUnique;
  }
  if (change.forceNonUnique) {
    reply.forceNonUnique_new = true;
    changed.forceNonUnique = true;
    delete spec.unique;
  }
  if (change.unique || change.prepareUnique !== undefined || change.forceNonUnique) {
    // A unique conversion was checked for violations before; prepareUnique keeps existing
    // duplicates and refuses new ones from now on.
    change.index.configure();
    change.index.rebuild(collection.decodedEntries());
  }
  return { reply, old, changed };
}

/** collMod on a view: a new `viewOn` and/or `pipeline`. */
function modifyView(instance: Instance, op: OpContext, view: View, body: Record<string, unknown>): Record<string, unknown> {
  for (const option of [
    'index',
    'validator',
    'validationLevel',
    'validationAction',
    'cappedSize',
    'cappedMax',
    'changeStreamPreAndPostImages',
    'expireAfterSeconds',
    'timeseries',
  ]) {
    if (body[option] !== undefined) throw new ServerError('InvalidOptions', `option not supported on a view: ${option}`);
  }
  const o: Record<string, unknown> = { collMod: view.name };
  if (body.viewOn !== undefined) {
    if (typeof body.viewOn !== 'string' || body.viewOn.length === 0)
      throw new ServerError('InvalidOptions', "'viewOn' option must be a string");
  }
  const pipeline = body.pipeline === undefined ? view.pipeline : viewPipeline('collMod', body.pipeline);
  const viewOn = (body.viewOn as string | undefined) ?? view.viewOn;
  checkViewGraph(instance, view.db, view.name, viewOn);
  view.viewOn = viewOn;
  view.pipeline = pipeline;
  instance.catalog.updateView(view);
  if (body.viewOn !== undefined) o.viewOn = viewOn;
  if (body.pipeline !== undefined) o.pipeline = pipeline;
  instance.record(op, { op: 'c', ns: `${view.db}.$cmd`, o, size: 128 });
  return {};
}

defineCommand({
  name: 'collMod',
  handler: (ctx) => {
    const { instance, body, db, op } = ctx;
    const args = new Args('collMod', body);
    const name = args.requiredString('collMod');
    validateCollectionName(db, name);
    const ns = instance.catalog.get(db, name);
    if (!ns) throw new ServerError('NamespaceNotFound', 'ns does not exist');
    instance.assertWritable(op, db);
    if (ns.kind === 'view') return isTimeseriesView(ns) ? collModTimeseries(ctx, ns) : modifyView(instance, op, ns, body);
    for (const option of ['viewOn', 'pipeline']) {
      if (body[option] !== undefined) throw new ServerError('InvalidOptions', `option only supported on a view: ${option}`);
    }
    if (body.timeseries !== undefined)
      throw new ServerError('InvalidOptions', 'option only supported on a time-series collection: timeseries');
    const collection = ns;
    // A collection-level TTL (collections clustered by _id, time-series buckets): seconds or 'off'.
    const collectionTtl = body.expireAfterSeconds === undefined ? undefined : parseCollModTtl(collection.options, body.expireAfterSeconds);
    const dryRun = args.boolean('dryRun') ?? false;
    const o: Record<string, unknown> = { collMod: name };
    let modifications = 0;

    // Parse and check everything before changing anything.
    const cappedSize = args.number('cappedSize');
    const cappedMax = args.number('cappedMax');
    if (cappedSize !== undefined || cappedMax !== undefined) {
      if (!collection.capped) throw new ServerError('InvalidOptions', 'Collection must be capped.');
      if (db === 'local' && name === 'oplog.rs') {
        throw new ServerError(
          'InvalidOptions',
          "Cannot resize the oplog using this command. Use the 'replSetResizeOplog' command instead.",
        );
      }
      if (cappedSize !== undefined) {
        if (cappedSize <= 0) throw new ServerError('BadValue', `Invalid cappedSize: ${cappedSize}. Must be greater than 0`);
        checkCappedSize(cappedSize);
        o.cappedSize = cappedSize;
      }
      if (cappedMax !== undefined) {
        checkCappedMax(cappedMax);
        o.cappedMax = cappedMax;
      }
    }
    const indexRequest = body.index === undefined || body.index === null ? undefined : args.object('index');
    const parsedIndex = indexRequest ? parseIndexChange(collection, indexRequest) : undefined;
    modifications += parsedIndex?.modifications ?? 0;
    const validator = args.object('validator');
    if (validator !== undefined) {
      modifications++;
      if (Object.keys(validator).length > 0) checkValidator(validator);
      o.validator = validator;
    }
    const { validationLevel, validationAction } = validationSettings(args);
    if (validationLevel !== undefined) {
      modifications++;
      o.validationLevel = validationLevel;
    }
    if (validationAction !== undefined) {
      modifications++;
      o.validationAction = validationAction;
    }
    const prePost = args.object('changeStreamPreAndPostImages');
    if (prePost) {
      modifications++;
      if (typeof prePost.enabled !== 'boolean') {
        throw new ServerError(
          'IDLFailedToParse',
          "BSON field 'collMod.changeStreamPreAndPostImages.enabled' is missing but a required field",
        );
      }
      o.changeStreamPreAndPostImages = { enabled: prePost.enabled };
    }
    if (cappedSize !== undefined || cappedMax !== undefined) modifications++;
    if (collectionTtl !== undefined) {
      modifications++;
      o.expireAfterSeconds = collectionTtl;
    }
    if (parsedIndex?.change.prepareUnique !== undefined && modifications > 1) {
      throw new ServerError('InvalidOptions', 'prepareUnique cannot be combined with any other modification.');
    }

    if (dryRun) {
      if (!indexRequest) throw new ServerError('InvalidOptions', 'dry run mode requires an valid index modification.');
      if (safeBool('collMod.index.unique', indexRequest.unique) !== true) {
        throw new ServerError('InvalidOptions', 'dry run mode requires an index modification with unique: true.');
      }
      if (modifications > 1)
        throw new ServerError('InvalidOptions', 'unique: true cannot be combined with any other modification in dry run mode.');
      const violations = uniqueViolations(collection, parsedIndex!.change.index);
      if (violations.length > 0) throw convertToUniqueError(violations);
      return {};
    }
    if (parsedIndex?.change.unique) {
      // Scan before changing anything, so a failed conversion leaves the index as it was.
      const violations = uniqueViolations(collection, parsedIndex.change.index);
      if (violations.length > 0) throw convertToUniqueError(violations);
    }

    // Apply.
    const optionsBefore = { uuid: collection.uuid, ...collection.options };
    const reply: Record<string, unknown> = {};
    const o2: Record<string, unknown> = { collectionOptions_old: optionsBefore };
    const options = { ...collection.options };
    if (cappedSize !== undefined) options.size = checkCappedSize(cappedSize);
    if (cappedMax !== undefined) options.max = checkCappedMax(cappedMax);
    if (validator !== undefined) {
      if (Object.keys(validator).length > 0) options.validator = validator;
      else delete options.validator;
      // mongod's setValidator stores the level and action with their defaults filled in
      // (validationLevelOrDefault / validationActionOrDefault in collection_impl.cpp), so they list
      // afterwards even when neither was ever given.
      options.validationLevel ??= 'strict';
      options.validationAction ??= 'error';
    }
    if (validationLevel !== undefined) options.validationLevel = validationLevel;
    if (validationAction !== undefined) options.validationAction = validationAction;
    if (prePost) {
      if (prePost.enabled) options.changeStreamPreAndPostImages = { enabled: true };
      else delete options.changeStreamPreAndPostImages;
    }
    if (collectionTtl === 'off') delete options.expireAfterSeconds;
    else if (collectionTtl !== undefined) options.expireAfterSeconds = collectionTtl;
    collection.options = reorder(options);
    if (parsedIndex) {
      const { reply: indexReply, old, changed } = applyIndexChange(collection, parsedIndex.change);
      Object.assign(reply, indexReply);
      if (Object.keys(changed).length > 0) {
        o.index = { name: parsedIndex.change.index.name, ...changed };
        o2.indexOptions_old = old;
      }
    }
    instance.record(op, { op: 'c', ns: `${db}.$cmd`, ui: collection.uuid, o, o2, size: 256 });
    return reply;
  },
});

/** Collection options in the order mongod stores them (CollectionOptions::toBSON). */
const OPTION_ORDER = [
  'capped',
  'size',
  'max',
  'autoIndexId',
  'temp',
  'changeStreamPreAndPostImages',
  'storageEngine',
  'indexOptionDefaults',
  'validator',
  'validationLevel',
  'validationAction',
  'collation',
  'clusteredIndex',
  'expireAfterSeconds',
  'viewOn',
  'pipeline',
  'timeseries',
];

function reorder(options: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const key of OPTION_ORDER) if (options[key] !== undefined) out[key] = options[key];
  for (const [key, value] of Object.entries(options)) if (!(key in out) && value !== undefined) out[key] = value;
  return out;
}
