/**
 * Time-series collections as mongod 7.0 keeps them (src/mongo/db/timeseries/README.md): a view
 * `<name>` on the clustered collection `system.buckets.<name>`, whose pipeline
 * `[{$_internalUnpackBucket: {timeField, metaField, bucketMaxSpanSeconds}}]` turns buckets back into
 * measurements. Buckets are mongod's uncompressed ones (`control.version: 1`, columns keyed
 * '0', '1', ...); mongod 7.0 writes those for open buckets (and compresses closed ones, which the
 * test cluster never does).
 *
 * This module holds the options (checks, defaults, stored shape), the buckets collection's
 * validator and view pipeline, and the bucket format: packing measurements into buckets and
 * unpacking them again.
 */
import { BSON, ObjectId } from 'bson';
import { ServerError } from '../errors.js';
import { bsonTypeName } from '../commands/args.js';
import { compareValues } from '../bson-order.js';
import { serialize, typed } from '../raw.js';
import { BUCKETS_PREFIX } from './clustered.js';
import { isDocument } from './keys.js';
import type { Catalog } from './catalog.js';
import type { Collection, Namespace, View } from './collection.js';

export type Granularity = 'seconds' | 'minutes' | 'hours';

/** The `timeseries` option as stored (mongod's TimeseriesOptions, in its field order). */
export interface TimeseriesOptions {
  timeField: string;
  metaField?: string;
  granularity?: Granularity;
  bucketMaxSpanSeconds: number;
  bucketRoundingSeconds?: number;
}

/** getMaxSpanSecondsFromGranularity. */
export const MAX_SPAN_SECONDS: Record<Granularity, number> = { seconds: 3600, minutes: 86400, hours: 2592000 };
/** getBucketRoundingSecondsFromGranularity. */
export const ROUNDING_SECONDS: Record<Granularity, number> = { seconds: 60, minutes: 3600, hours: 86400 };
/** mongod's timeseriesBucketMaxCount and timeseriesBucketMaxSize defaults. */
export const BUCKET_MAX_COUNT = 1000;
export const BUCKET_MAX_SIZE = 125 * 1024;
/** The IDL bounds of bucketMaxSpanSeconds / bucketRoundingSeconds (one year). */
const MAX_BUCKETING_SECONDS = 31536000;

const GRANULARITIES = ['seconds', 'minutes', 'hours'];

function seconds(context: string, field: string, value: unknown): number | undefined {
  if (value === undefined) return undefined;
  const n = typeof value === 'number' ? value : Number((value as { _bsontype?: string })?._bsontype ? String(value) : Number.NaN);
  if (Number.isNaN(n) || typeof value === 'string' || typeof value === 'boolean') {
    throw new ServerError(
      'TypeMismatch',
      `BSON field '${context}.${field}' is the wrong type '${bsonTypeName(value)}', expected type 'int'`,
    );
  }
  if (n < 1) throw new ServerError('BadValue', `BSON field '${context}.${field}' value must be >= 1, actual value '${n}'`);
  if (n > MAX_BUCKETING_SECONDS) {
    throw new ServerError('BadValue', `BSON field '${context}.${field}' value must be <= ${MAX_BUCKETING_SECONDS}, actual value '${n}'`);
  }
  return Math.trunc(n);
}

/**
 * Checks a `create` command's `timeseries` option and returns it as mongod stores it
 * (validateAndSetBucketingParameters): a granularity fills in its bucketMaxSpanSeconds and drops
 * bucketRoundingSeconds; custom bucketing needs both seconds, equal; neither means 'seconds'.
 */
export function parseTimeseriesOptions(value: unknown, collectionName: string): TimeseriesOptions {
  if (!isDocument(value)) {
    throw new ServerError(
      'TypeMismatch',
      `BSON field 'create.timeseries' is the wrong type '${bsonTypeName(value)}', expected type 'object'`,
    );
  }
  for (const field of Object.keys(value)) {
    if (!['timeField', 'metaField', 'granularity', 'bucketMaxSpanSeconds', 'bucketRoundingSeconds'].includes(field)) {
      throw new ServerError('IDLUnknownField', `BSON field 'TimeseriesOptions.${field}' is an unknown field.`);
    }
  }
  const { timeField, metaField, granularity } = value;
  if (timeField === undefined)
    throw new ServerError('IDLFailedToParse', "BSON field 'TimeseriesOptions.timeField' is missing but a required field");
  if (typeof timeField !== 'string') {
    throw new ServerError(
      'TypeMismatch',
      `BSON field 'TimeseriesOptions.timeField' is the wrong type '${bsonTypeName(timeField)}', expected type 'string'`,
    );
  }
  if (metaField !== undefined && typeof metaField !== 'string') {
    throw new ServerError(
      'TypeMismatch',
      `BSON field 'TimeseriesOptions.metaField' is the wrong type '${bsonTypeName(metaField)}', expected type 'string'`,
    );
  }
  const topLevel = (field: string) => `${collectionName}: '${field}' must be a top-level field and not contain a '.'`;
  if (timeField.includes('.')) throw new ServerError('InvalidOptions', topLevel('timeField'));
  if (metaField !== undefined) {
    if (metaField === '_id') throw new ServerError('InvalidOptions', '\'metaField\' cannot be "_id"');
    if (metaField === timeField) throw new ServerError('InvalidOptions', "'metaField' cannot be the same as 'timeField'");
    if (metaField.includes('.')) throw new ServerError('InvalidOptions', topLevel('metaField'));
  }
  if (granularity !== undefined && (typeof granularity !== 'string' || !GRANULARITIES.includes(granularity))) {
    throw new ServerError(
      'BadValue',
      `Enumeration value '${String(granularity)}' for field 'TimeseriesOptions.granularity' is not a valid value.`,
    );
  }
  const maxSpan = seconds('TimeseriesOptions', 'bucketMaxSpanSeconds', value.bucketMaxSpanSeconds);
  const rounding = seconds('TimeseriesOptions', 'bucketRoundingSeconds', value.bucketRoundingSeconds);
  const options: TimeseriesOptions = { timeField, ...(metaField !== undefined ? { metaField } : {}) } as TimeseriesOptions;
  if (granularity !== undefined) {
    const g = granularity as Granularity;
    if (maxSpan !== undefined && maxSpan !== MAX_SPAN_SECONDS[g]) {
      throw new ServerError(
        'InvalidOptions',
        `Timeseries 'bucketMaxSpanSeconds' is not configurable to a value other than the default of ${MAX_SPAN_SECONDS[g]} for the provided granularity`,
      );
    }
    if (rounding !== undefined && rounding !== ROUNDING_SECONDS[g]) {
      throw new ServerError(
        'InvalidOptions',
        `Timeseries 'bucketRoundingSeconds' is not configurable to a value other than the default of ${ROUNDING_SECONDS[g]} for the provided granularity`,
      );
    }
    return { ...options, granularity: g, bucketMaxSpanSeconds: MAX_SPAN_SECONDS[g] };
  }
  if (maxSpan !== undefined || rounding !== undefined) {
    if (maxSpan === undefined || rounding === undefined) {
      throw new ServerError(
        'InvalidOptions',
        "Timeseries 'bucketMaxSpanSeconds' and 'bucketRoundingSeconds' need to be set alongside each other",
      );
    }
    if (maxSpan !== rounding) {
      throw new ServerError('InvalidOptions', "Timeseries 'bucketRoundingSeconds' needs to be equal to 'bucketMaxSpanSeconds'");
    }
    return { ...options, bucketMaxSpanSeconds: maxSpan, bucketRoundingSeconds: rounding };
  }
  return { ...options, granularity: 'seconds', bucketMaxSpanSeconds: MAX_SPAN_SECONDS.seconds };
}

/** The seconds a bucket's start time is rounded down to. */
export function roundingSeconds(options: TimeseriesOptions): number {
  return options.granularity ? ROUNDING_SECONDS[options.granularity] : (options.bucketRoundingSeconds ?? ROUNDING_SECONDS.seconds);
}

/** The JSON schema mongod puts on a buckets collection (create_collection.cpp, _createTimeseries). */
export function bucketsValidator(timeField: string): Record<string, unknown> {
  const bound = { bsonType: 'object', required: [timeField], properties: { [timeField]: { bsonType: 'date' } } };
  return {
    $jsonSchema: {
      bsonType: 'object',
      required: ['_id', 'control', 'data'],
      properties: {
        _id: { bsonType: 'objectId' },
        control: {
          bsonType: 'object',
          required: ['version', 'min', 'max'],
          properties: {
            version: { bsonType: 'number' },
            min: bound,
            max: structuredClone(bound),
            closed: { bsonType: 'bool' },
            count: { bsonType: 'number', minimum: 1 },
          },
          additionalProperties: false,
        },
        data: { bsonType: 'object' },
        meta: {},
      },
      additionalProperties: false,
    },
  };
}

/** The view's pipeline (timeseries_options.cpp, generateViewPipeline). */
export function unpackPipeline(options: TimeseriesOptions): Record<string, unknown>[] {
  const spec: Record<string, unknown> = { timeField: options.timeField };
  if (options.metaField !== undefined) spec.metaField = options.metaField;
  spec.bucketMaxSpanSeconds = options.bucketMaxSpanSeconds;
  return [{ $_internalUnpackBucket: spec }];
}

export function bucketsNameOf(name: string): string {
  return `${BUCKETS_PREFIX}${name}`;
}

/** The time-series view `db.name`, if that is what the namespace is. */
export function timeseriesView(catalog: Catalog, db: string, name: string): View | undefined {
  const ns = catalog.get(db, name);
  return isTimeseriesView(ns) ? ns : undefined;
}

/** Whether a namespace is the view of a time-series collection (mongod: a view on system.buckets). */
export function isTimeseriesView(ns: Namespace | undefined): ns is View {
  return ns?.kind === 'view' && ns.viewOn.startsWith(BUCKETS_PREFIX);
}

/** The time-series options of a buckets collection. */
export function timeseriesOptionsOf(collection: Collection | undefined): TimeseriesOptions | undefined {
  return collection?.options.timeseries as TimeseriesOptions | undefined;
}

/** A document's fields sorted by name at every level (mongod normalizes metaField objects so). */
export function normalizeMeta(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(normalizeMeta);
  if (!isDocument(value)) return value;
  const out: Record<string, unknown> = {};
  for (const key of Object.keys(value).sort((a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b)))) {
    out[key] = normalizeMeta(value[key]);
  }
  return out;
}

/**
 * Smaller (or larger, `sign` -1) of two values as a bucket's control.min/max keeps them: objects
 * field by field, arrays element by element.
 */
function extreme(a: unknown, b: unknown, sign: 1 | -1): unknown {
  if (a === undefined) return b;
  if (b === undefined) return a;
  if (isDocument(a) && isDocument(b)) {
    const out: Record<string, unknown> = {};
    for (const key of Object.keys(a)) out[key] = extreme(a[key], b[key], sign);
    for (const key of Object.keys(b)) if (!(key in out)) out[key] = b[key];
    return out;
  }
  if (Array.isArray(a) && Array.isArray(b)) {
    return Array.from({ length: Math.max(a.length, b.length) }, (_, i) => extreme(a[i], b[i], sign));
  }
  return compareValues(a, b) * sign <= 0 ? a : b;
}

/** A bucket decoded with exact types (Int32/Double/Long kept apart). */
export interface Bucket {
  _id: ObjectId;
  control: { version: unknown; min: Record<string, unknown>; max: Record<string, unknown>; closed?: boolean; count?: unknown };
  meta?: unknown;
  data: Record<string, Record<string, unknown>>;
}

export function decodeBucket(raw: Buffer): Bucket {
  return BSON.deserialize(raw, typed) as Bucket;
}

/** The number of measurements in a bucket (the entries of its time column). */
export function measurementCount(bucket: Bucket, timeField: string): number {
  const count = bucket.control?.count;
  if (count !== undefined) return Number(count);
  const times = bucket.data?.[timeField];
  return times ? Object.keys(times).length : 0;
}

function uncompressed(bucket: Bucket): void {
  if (Number(bucket.control?.version) !== 1) {
    throw new ServerError('NotImplemented', 'The test cluster reads uncompressed time-series buckets only (control.version 1)');
  }
}

/** A bucket's measurements as stored: each row's fields in column order, without the meta field. */
export function bucketRows(bucket: Bucket, timeField: string): Record<string, unknown>[] {
  uncompressed(bucket);
  const columns = Object.keys(bucket.data);
  return Object.keys(bucket.data[timeField] ?? {}).map((row) => {
    const measurement: Record<string, unknown> = {};
    for (const column of columns) {
      const value = bucket.data[column][row];
      if (value !== undefined) measurement[column] = value;
    }
    return measurement;
  });
}

/**
 * The measurements of a bucket, in order: the time field first, then the meta field, then the other
 * fields in the bucket's column order (bucket_unpacker.cpp).
 */
export function unpackBucket(bucket: Bucket, timeField: string, metaField: string | undefined): Record<string, unknown>[] {
  return bucketRows(bucket, timeField).map((row) => {
    const measurement: Record<string, unknown> = { [timeField]: row[timeField] };
    if (metaField !== undefined && bucket.meta !== undefined) measurement[metaField] = bucket.meta;
    for (const [field, value] of Object.entries(row)) if (field !== timeField) measurement[field] = value;
    return measurement;
  });
}

/**
 * Packs measurements (with `_id`, without the meta field) into a bucket: columns in the order
 * fields first appear, `control.min` of the time field rounded down to the bucketing, the bucket
 * `_id` an ObjectId whose time is that rounded start (a given `id` is kept).
 */
export function packBucket(measurements: Record<string, unknown>[], meta: unknown, options: TimeseriesOptions, id?: ObjectId): Bucket {
  const data: Record<string, Record<string, unknown>> = {};
  let min: Record<string, unknown> = {};
  let max: Record<string, unknown> = {};
  measurements.forEach((m, i) => {
    for (const [field, value] of Object.entries(m)) (data[field] ??= {})[String(i)] = value;
    min = extreme(min, m, 1) as Record<string, unknown>;
    max = extreme(max, m, -1) as Record<string, unknown>;
  });
  const start = roundedStart(min[options.timeField] as Date, options);
  min[options.timeField] = start;
  const bucket: Bucket = {
    _id: id ?? new ObjectId(ObjectId.generate(Math.max(0, Math.floor(start.getTime() / 1000)))),
    control: { version: 1, min, max },
    ...(meta !== undefined ? { meta } : {}),
    data,
  };
  return bucket;
}

/** A bucket's start: the measurement time rounded down to the bucketing (roundTimestampBySeconds). */
export function roundedStart(time: Date, options: TimeseriesOptions): Date {
  const unit = roundingSeconds(options) * 1000;
  const ms = time.getTime();
  return new Date(ms - (((ms % unit) + unit) % unit));
}

/** Whether a measurement at `time` may join a bucket (within its span, the count and size limits). */
export function fits(bucket: Bucket, bytes: number, time: Date, options: TimeseriesOptions): boolean {
  if (Number(bucket.control.version) !== 1 || bucket.control.closed === true) return false;
  const start = (bucket.control.min[options.timeField] as Date).getTime();
  const t = time.getTime();
  return (
    t >= start &&
    t < start + options.bucketMaxSpanSeconds * 1000 &&
    measurementCount(bucket, options.timeField) < BUCKET_MAX_COUNT &&
    bytes < BUCKET_MAX_SIZE
  );
}

/**
 * Adds a measurement to a bucket in place; returns the change as an update description (the paths
 * mongod's delta oplog entry would name: new column cells and changed control.min/max fields).
 */
export function appendMeasurement(
  bucket: Bucket,
  measurement: Record<string, unknown>,
  options: TimeseriesOptions,
): Record<string, unknown> {
  const row = String(measurementCount(bucket, options.timeField));
  const updatedFields: Record<string, unknown> = {};
  for (const [field, value] of Object.entries(measurement)) {
    if (bucket.data[field]) {
      bucket.data[field][row] = value;
      updatedFields[`data.${field}.${row}`] = value;
    } else {
      bucket.data[field] = { [row]: value };
      updatedFields[`data.${field}`] = bucket.data[field];
    }
    for (const [bound, sign] of [
      ['min', 1],
      ['max', -1],
    ] as const) {
      if (bound === 'min' && field === options.timeField) continue;
      const current = bucket.control[bound][field];
      const next = extreme(current, value, sign);
      if (
        current === undefined ||
        compareValues(current, next) !== 0 ||
        BSON.serialize({ v: current }).length !== BSON.serialize({ v: next }).length
      ) {
        bucket.control[bound][field] = next;
        updatedFields[`control.${bound}.${field}`] = next;
      }
    }
  }
  return { updatedFields, removedFields: [], truncatedArrays: [] };
}

export function encodeBucket(bucket: Bucket): Buffer {
  return serialize(bucket as unknown as Record<string, unknown>);
}
