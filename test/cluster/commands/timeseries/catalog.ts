/**
 * Time-series collections in the catalog, as mongod 7.0 makes and lists them:
 * - `create` with `timeseries` makes `system.buckets.<name>` (clustered, with mongod's bucket
 *   validator, the options and TTL), its default `<meta>_1_<time>_1` index when there is a
 *   metaField (6.3+), then the view `<name>` (create_collection.cpp, _createTimeseries), each
 *   recorded in the oplog in that order; `create` of `system.buckets.<name>` itself with
 *   `timeseries` (a restore) makes only the buckets collection;
 * - `listCollections` lists the view as `type: 'timeseries'` with the user-facing options of the
 *   buckets collection (list_collections.cpp, buildTimeseriesBson);
 * - `collMod` of `timeseries` (granularity or custom bucketing) changes the buckets options and
 *   the view's pipeline; everything else (`expireAfterSeconds`, `index`) goes to the buckets.
 */
import { ServerError } from '../../errors.js';
import type { Instance, OpContext } from '../../instance.js';
import { View, type Collection, type CollectionOptions } from '../../storage/collection.js';
import { BUCKETS_PREFIX, checkCollectionTtl } from '../../storage/clustered.js';
import type { IndexSpec } from '../../storage/indexes.js';
import { normalizeCollation } from '../../storage/collation.js';
import {
  type Granularity,
  type TimeseriesOptions,
  MAX_SPAN_SECONDS,
  ROUNDING_SECONDS,
  bucketsNameOf,
  bucketsValidator,
  parseTimeseriesOptions,
  roundingSeconds,
  timeseriesOptionsOf,
  unpackPipeline,
} from '../../storage/timeseries.js';
import { bsonTypeName } from '../args.js';
import { GENERIC_ARGUMENTS } from '../dispatch.js';
import { type CommandContext, type CommandReply, lookupCommand } from '../registry.js';

/** The options a time-series `create` may carry (timeseries::kAllowedCollectionCreationOptions). */
const ALLOWED_WITH_TIMESERIES = new Set(['storageEngine', 'indexOptionDefaults', 'collation', 'timeseries', 'expireAfterSeconds', 'temp']);

/** The buckets collection's options in mongod's CollectionOptions order. */
function bucketsOptions(body: Record<string, unknown>, timeseries: TimeseriesOptions): CollectionOptions {
  const options: CollectionOptions = {};
  if (body.storageEngine !== undefined && Object.keys(body.storageEngine as object).length > 0) options.storageEngine = body.storageEngine;
  const defaults = body.indexOptionDefaults as { storageEngine?: unknown } | undefined;
  if (defaults?.storageEngine !== undefined) options.indexOptionDefaults = defaults;
  options.validator = (body.validator as Record<string, unknown> | undefined) ?? bucketsValidator(timeseries.timeField);
  if (body.collation !== undefined) {
    const collation = normalizeCollation(body.collation);
    if (collation) options.collation = collation;
  }
  options.clusteredIndex = true;
  if (body.expireAfterSeconds !== undefined) options.expireAfterSeconds = checkCollectionTtl(body.expireAfterSeconds, 'create');
  options.timeseries = timeseries;
  return options;
}

/** Options of two time-series creations compared as mongod does (the user-facing ones). */
function sameTimeseries(a: CollectionOptions, b: CollectionOptions): boolean {
  const shown = (o: CollectionOptions) => JSON.stringify(timeseriesListing(o));
  return shown(a) === shown(b);
}

/**
 * `create` with a `timeseries` option: a time-series collection, or (named `system.buckets.*`) just
 * its buckets collection.
 */
export function createTimeseries(ctx: CommandContext, name: string): CommandReply {
  const { instance, body, db, op } = ctx;
  const restoringBuckets = name.startsWith(BUCKETS_PREFIX);
  for (const [field, value] of Object.entries(body)) {
    if (field === 'create' || GENERIC_ARGUMENTS.has(field) || field.startsWith('$') || ALLOWED_WITH_TIMESERIES.has(field)) continue;
    if (field === 'capped' && value === false) continue;
    // A restore of a buckets collection passes its validator and clustered index along.
    if (restoringBuckets && (field === 'validator' || field === 'clusteredIndex')) continue;
    throw new ServerError('InvalidOptions', `${db}.${name}: 'timeseries' is not allowed with '${field}'`);
  }
  const timeseries = parseTimeseriesOptions(body.timeseries, `${db}.${name}`);
  const options = bucketsOptions(body, timeseries);
  const bucketsName = restoringBuckets ? name : bucketsNameOf(name);
  const existing = instance.catalog.get(db, name);
  const existingBuckets = instance.catalog.get(db, bucketsName);
  if (existing || (!restoringBuckets && existingBuckets)) {
    const current = existingBuckets?.kind === 'collection' ? existingBuckets : undefined;
    // Since 7.0 an identical create succeeds.
    if (current && (restoringBuckets || existing?.kind === 'view') && sameTimeseries(current.options, options)) return {};
    throw new ServerError('NamespaceExists', `namespace ${db}.${name} already exists, but with different options`);
  }
  instance.assertWritable(op, db);
  const buckets = instance.createCollection(op, db, bucketsName, options);
  if (restoringBuckets) return {};
  if (timeseries.metaField !== undefined) createDefaultIndex(instance, op, buckets, timeseries);
  const pipeline = unpackPipeline(timeseries);
  instance.catalog.addView(new View(db, name, bucketsName, pipeline, options.collation as Record<string, unknown> | undefined));
  instance.record(op, { op: 'c', ns: `${db}.$cmd`, o: { create: name, viewOn: bucketsName, pipeline }, size: 128 });
  return {};
}

/** The `{meta: 1, control.min.<time>: 1, control.max.<time>: 1}` index mongod 6.3+ adds. */
function createDefaultIndex(instance: Instance, op: OpContext, buckets: Collection, timeseries: TimeseriesOptions): void {
  const time = timeseries.timeField;
  const spec: IndexSpec = {
    v: 2,
    key: { meta: 1, [`control.min.${time}`]: 1, [`control.max.${time}`]: 1 },
    name: `${timeseries.metaField}_1_${time}_1`,
  };
  if (buckets.options.collation) spec.collation = buckets.options.collation as Record<string, unknown>;
  buckets.addIndex(spec);
  instance.record(op, { op: 'c', ns: `${buckets.db}.$cmd`, ui: buckets.uuid, o: { createIndexes: buckets.name, ...spec }, size: 128 });
}

/** The user-facing options of a buckets collection, as the time-series listing shows them. */
function timeseriesListing(options: CollectionOptions): Record<string, unknown> {
  const shown: Record<string, unknown> = {};
  for (const field of ['storageEngine', 'indexOptionDefaults', 'collation', 'expireAfterSeconds', 'timeseries']) {
    if (options[field] !== undefined) shown[field] = options[field];
  }
  return shown;
}

/** The `listCollections` entry of a time-series view (`nameOnly` is applied by the caller). */
export function describeTimeseries(instance: Instance, view: View): Record<string, unknown> {
  const buckets = instance.catalog.get(view.db, view.viewOn);
  const options = buckets?.kind === 'collection' ? timeseriesListing(buckets.options) : {};
  return { name: view.name, type: 'timeseries', options, info: { readOnly: false } };
}

/** A `collMod` of a time-series collection's bucketing: the new options, or undefined when unchanged. */
function modifiedBucketing(current: TimeseriesOptions, request: unknown): TimeseriesOptions | undefined {
  if (typeof request !== 'object' || request === null || Array.isArray(request)) {
    throw new ServerError(
      'TypeMismatch',
      `BSON field 'collMod.timeseries' is the wrong type '${bsonTypeName(request)}', expected type 'object'`,
    );
  }
  const { granularity, bucketMaxSpanSeconds, bucketRoundingSeconds, ...rest } = request as Record<string, unknown>;
  for (const field of Object.keys(rest))
    throw new ServerError('IDLUnknownField', `BSON field 'collMod.timeseries.${field}' is an unknown field.`);
  const transition = () =>
    new ServerError(
      'InvalidOptions',
      "Invalid transition for timeseries.granularity. Can only transition from 'seconds' to 'minutes' or 'minutes' to 'hours'.",
    );
  if (granularity !== undefined) {
    if (typeof granularity !== 'string' || !(granularity in MAX_SPAN_SECONDS)) {
      throw new ServerError(
        'BadValue',
        `Enumeration value '${String(granularity)}' for field 'collMod.timeseries.granularity' is not a valid value.`,
      );
    }
    if (bucketMaxSpanSeconds !== undefined || bucketRoundingSeconds !== undefined) {
      throw new ServerError(
        'InvalidOptions',
        "Timeseries 'granularity' cannot be changed together with 'bucketMaxSpanSeconds' or 'bucketRoundingSeconds'",
      );
    }
    const target = granularity as Granularity;
    if (current.granularity === target) return undefined;
    const order: Granularity[] = ['seconds', 'minutes', 'hours'];
    if (
      current.granularity !== undefined
        ? order.indexOf(target) < order.indexOf(current.granularity)
        : MAX_SPAN_SECONDS[target] < current.bucketMaxSpanSeconds || ROUNDING_SECONDS[target] < roundingSeconds(current)
    ) {
      throw transition();
    }
    return {
      timeField: current.timeField,
      ...(current.metaField !== undefined ? { metaField: current.metaField } : {}),
      granularity: target,
      bucketMaxSpanSeconds: MAX_SPAN_SECONDS[target],
    };
  }
  if (bucketMaxSpanSeconds === undefined && bucketRoundingSeconds === undefined) return undefined;
  if (bucketMaxSpanSeconds === undefined || bucketRoundingSeconds === undefined) {
    throw new ServerError(
      'InvalidOptions',
      "Timeseries 'bucketMaxSpanSeconds' and 'bucketRoundingSeconds' need to be set alongside each other",
    );
  }
  const span = Number(bucketMaxSpanSeconds);
  if (span !== Number(bucketRoundingSeconds)) {
    throw new ServerError('InvalidOptions', "Timeseries 'bucketRoundingSeconds' needs to be equal to 'bucketMaxSpanSeconds'");
  }
  if (span < current.bucketMaxSpanSeconds || span < roundingSeconds(current)) {
    throw new ServerError(
      'InvalidOptions',
      'Invalid transition for timeseries.bucketMaxSpanSeconds and timeseries.bucketRoundingSeconds: they can only increase',
    );
  }
  if (current.granularity === undefined && span === current.bucketMaxSpanSeconds) return undefined;
  return {
    timeField: current.timeField,
    ...(current.metaField !== undefined ? { metaField: current.metaField } : {}),
    bucketMaxSpanSeconds: span,
    bucketRoundingSeconds: span,
  };
}

/**
 * `collMod` on a time-series view. A bucketing change is recorded as mongod does: the view's new
 * pipeline (a view modify) and then the buckets' new options (a collection modify); other changes
 * are a `collMod` of the buckets collection.
 */
export async function collModTimeseries(ctx: CommandContext, view: View): Promise<CommandReply> {
  const { instance, body, op } = ctx;
  for (const option of [
    'viewOn',
    'pipeline',
    'validator',
    'validationLevel',
    'validationAction',
    'cappedSize',
    'cappedMax',
    'changeStreamPreAndPostImages',
  ]) {
    if (body[option] !== undefined) throw new ServerError('InvalidOptions', `option not supported on a time-series collection: ${option}`);
  }
  const buckets = instance.catalog.collection(view.db, view.viewOn);
  const current = timeseriesOptionsOf(buckets);
  if (!buckets || !current) throw new ServerError('NamespaceNotFound', `ns does not exist: ${view.db}.${view.viewOn}`);
  const bucketing = body.timeseries === undefined ? undefined : modifiedBucketing(current, body.timeseries);
  const rest: Record<string, unknown> = { collMod: buckets.name };
  for (const [field, value] of Object.entries(body)) if (field !== 'collMod' && field !== 'timeseries') rest[field] = value;
  const changesBuckets = Object.keys(rest).some((field) => field !== 'collMod' && field !== '$db' && !GENERIC_ARGUMENTS.has(field));
  if (body.timeseries === undefined && !changesBuckets) throw new ServerError('InvalidOptions', 'no collMod option specified');
  instance.assertWritable(op, view.db);
  if (bucketing) {
    const before = { uuid: buckets.uuid, ...buckets.options };
    buckets.options = { ...buckets.options, timeseries: bucketing };
    view.pipeline = unpackPipeline(bucketing);
    instance.catalog.updateView(view);
    instance.record(op, {
      op: 'c',
      ns: `${view.db}.$cmd`,
      o: { collMod: view.name, viewOn: view.viewOn, pipeline: view.pipeline },
      size: 128,
    });
    instance.record(op, {
      op: 'c',
      ns: `${view.db}.$cmd`,
      ui: buckets.uuid,
      o: { collMod: buckets.name, timeseries: body.timeseries },
      o2: { collectionOptions_old: before },
      size: 256,
    });
  }
  if (!changesBuckets) return {};
  const collMod = lookupCommand('collMod')!;
  return collMod.handler({ ...ctx, body: rest });
}
