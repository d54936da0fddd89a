/**
 * Writes to a time-series collection (its view), as mongod 7.0 runs them on the buckets:
 * - insert: each measurement joins the open bucket of its (normalized) meta value when it fits
 *   (within bucketMaxSpanSeconds of the bucket's rounded start, under 1000 measurements and
 *   125 KiB), else starts a bucket; written as a bucket insert or a bucket update.
 * - update (5.1–7.0 rules, docs "Time Series Collection Limitations"): `multi: true`, no upsert,
 *   a query and update operators on the metaField only; applied to whole buckets, counted in
 *   measurements.
 * - delete (7.0: any filter, `limit` 0 or 1): matching measurements leave their bucket, which is
 *   deleted when emptied or rewritten otherwise.
 * None of them runs in a multi-document transaction.
 */
import { BSON, ObjectId } from 'bson';
import { Query } from '../../mingo.js';
import { ServerError } from '../../errors.js';
import type { Instance, OpContext } from '../../instance.js';
import type { Collection, View } from '../../storage/collection.js';
import {
  type TimeseriesOptions,
  appendMeasurement,
  bucketRows,
  decodeBucket,
  encodeBucket,
  fits,
  measurementCount,
  normalizeMeta,
  packBucket,
  timeseriesOptionsOf,
  unpackBucket,
} from '../../storage/timeseries.js';
import { promoted, serialize, typed } from '../../raw.js';
import { matchDocuments } from '../../query/find.js';
import type { CompiledUpdate } from '../../query/update/compile.js';
import { updateEntry, writeClock } from '../write-ops.js';

/** The buckets collection and options behind a time-series view. */
function bucketsOf(instance: Instance, view: View): { buckets: Collection; options: TimeseriesOptions } {
  const buckets = instance.catalog.collection(view.db, view.viewOn);
  const options = timeseriesOptionsOf(buckets);
  if (!buckets || !options)
    throw new ServerError('NamespaceNotFound', `Time-series buckets collection ${view.db}.${view.viewOn} does not exist`);
  return { buckets, options };
}

function refuseInTransaction(op: OpContext, what: string, view: View): void {
  if (op.stage) {
    throw new ServerError(
      'OperationNotSupportedInTransaction',
      `Cannot ${what} a time-series collection in a multi-document transaction: ${view.ns}`,
    );
  }
}

/** The open bucket of each meta value, per buckets collection (mongod's BucketCatalog, in memory). */
const openBuckets = new WeakMap<Collection, Map<string, ObjectId>>();

function metaKey(meta: unknown): string {
  return meta === undefined ? '' : serialize({ m: meta }).toString('latin1');
}

/** Inserts one measurement (raw BSON, already validated) into a time-series view. */
export function insertMeasurement(instance: Instance, op: OpContext, view: View, raw: Buffer): void {
  refuseInTransaction(op, 'insert into', view);
  const { buckets, options } = bucketsOf(instance, view);
  const doc = BSON.deserialize(raw, typed) as Record<string, unknown>;
  const time = doc[options.timeField];
  if (!(time instanceof Date)) {
    throw new ServerError('BadValue', `'${options.timeField}' must be present and contain a valid BSON UTC datetime value`);
  }
  // A measurement without _id gets one, first (fixDocumentForInsert); the meta field goes to the bucket.
  const measurement: Record<string, unknown> = '_id' in doc ? { ...doc } : { _id: new ObjectId(), ...doc };
  let meta: unknown;
  if (options.metaField !== undefined && options.metaField in measurement) {
    meta = normalizeMeta(measurement[options.metaField]);
    delete measurement[options.metaField];
  }
  instance.assertWritable(op, view.db);
  let open = openBuckets.get(buckets);
  if (!open) openBuckets.set(buckets, (open = new Map()));
  const key = metaKey(meta);
  const openId = open.get(key);
  const entry = openId === undefined ? undefined : buckets.get(openId);
  if (entry) {
    const bucket = decodeBucket(entry.raw);
    // A user write to the bucket (a meta update) may have changed it: it must still hold this meta.
    if (metaKey(bucket.meta) === key && fits(bucket, entry.raw.length + raw.length, time, options)) {
      const description = appendMeasurement(bucket, measurement, options);
      instance.updateDocument(op, buckets, entry, encodeBucket(bucket), description);
      return;
    }
  }
  const bucket = packBucket([measurement], meta, options);
  instance.insertDocument(op, buckets, encodeBucket(bucket), bucket._id);
  open.set(key, bucket._id);
}

function invalid(message: string): ServerError {
  return new ServerError('InvalidOptions', message);
}

/** A path on the metaField as the buckets store it (`meta`, `meta.x`), or undefined for another field. */
function metaPath(path: string, metaField: string): string | undefined {
  if (path === metaField) return 'meta';
  if (path.startsWith(`${metaField}.`)) return `meta${path.slice(metaField.length)}`;
  return undefined;
}

/** A query on the metaField only, rewritten onto the buckets (timeseries::translateQuery). */
function translateQuery(query: Record<string, unknown>, metaField: string): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(query)) {
    if (key === '$and' || key === '$or' || key === '$nor') {
      if (!Array.isArray(value)) throw new ServerError('BadValue', `${key} must be an array`);
      out[key] = value.map((clause) => translateQuery(clause as Record<string, unknown>, metaField));
      continue;
    }
    const path = key.startsWith('$') ? undefined : metaPath(key, metaField);
    if (path === undefined) {
      throw invalid(
        `Cannot perform an update on a time-series collection that queries on a field that is not the metaField '${metaField}'`,
      );
    }
    out[path] = value;
  }
  return out;
}

/** An update of the metaField only, rewritten onto the buckets (timeseries::translateUpdate). */
function translateUpdate(update: unknown, metaField: string): Record<string, unknown> {
  if (Array.isArray(update)) throw invalid('Cannot perform an update on a time-series collection using a pipeline update');
  const operators = update as Record<string, unknown>;
  if (Object.keys(operators).some((k) => !k.startsWith('$'))) {
    throw invalid('Cannot perform an update on a time-series collection using a replacement document');
  }
  const notMeta = () =>
    invalid(`Cannot perform an update on a time-series collection which updates a field that is not the metaField '${metaField}'`);
  const out: Record<string, unknown> = {};
  for (const [operator, fields] of Object.entries(operators)) {
    const translated: Record<string, unknown> = {};
    for (const [path, value] of Object.entries(fields as Record<string, unknown>)) {
      const target = metaPath(path, metaField);
      if (target === undefined) throw notMeta();
      if (operator === '$rename') {
        const to = typeof value === 'string' ? metaPath(value, metaField) : undefined;
        if (to === undefined) throw notMeta();
        translated[target] = to;
      } else translated[target] = value;
    }
    out[operator] = translated;
  }
  return out;
}

/** A parsed update statement (the `update` command's own parser, handed in). */
export interface ParsedUpdate {
  filter: Record<string, unknown>;
  update: CompiledUpdate;
}

/**
 * Runs one `update` statement (raw) on a time-series view; returns the measurements matched and
 * modified (mongod counts measurements, not buckets).
 */
export function updateMeasurements(
  instance: Instance,
  op: OpContext,
  view: View,
  statement: Buffer,
  bypassDocumentValidation: boolean,
  parse: (raw: Buffer) => ParsedUpdate,
): { n: number; nModified: number } {
  refuseInTransaction(op, 'update', view);
  const { buckets, options } = bucketsOf(instance, view);
  const stmt = BSON.deserialize(statement, typed) as Record<string, unknown>;
  const metaField = options.metaField;
  if (metaField === undefined) throw invalid('Cannot perform an update on a time-series collection that does not have a metaField');
  if (stmt.multi !== true) throw invalid('Cannot perform a non-multi update on a time-series collection');
  if (stmt.upsert === true) throw invalid('Cannot perform an upsert on a time-series collection');
  const translated: Record<string, unknown> = {
    q: translateQuery((stmt.q ?? {}) as Record<string, unknown>, metaField),
    u: translateUpdate(stmt.u, metaField),
    multi: true,
  };
  const { filter, update } = parse(serialize(translated));
  const clock = writeClock(instance);
  const target = { instance, op, collection: buckets, bypassDocumentValidation };
  const pull = matchDocuments(buckets, { filter });
  const matched = [];
  for (let m = pull(); m; m = pull()) matched.push(m.entry);
  let n = 0;
  let nModified = 0;
  for (const entry of matched) {
    const count = measurementCount(decodeBucket(entry.raw), options.timeField);
    n += count;
    if (updateEntry(target, entry, update, filter, clock)) nModified += count;
  }
  return { n, nModified };
}

/** Runs one `delete` statement on a time-series view; returns the measurements deleted. */
export function deleteMeasurements(instance: Instance, op: OpContext, view: View, filter: Record<string, unknown>, limit: number): number {
  refuseInTransaction(op, 'delete from', view);
  const { buckets, options } = bucketsOf(instance, view);
  const query = new Query(filter, { scriptEnabled: false });
  let deleted = 0;
  for (const entry of [...buckets.byId.values()]) {
    const bucket = decodeBucket(entry.raw);
    const measurements = unpackBucket(bucket, options.timeField, options.metaField);
    const rows = bucketRows(bucket, options.timeField);
    const keep: Record<string, unknown>[] = [];
    let removed = 0;
    measurements.forEach((m, i) => {
      const doomed = (limit === 0 || deleted + removed === 0) && query.test(BSON.deserialize(serialize(m), promoted));
      if (doomed) removed++;
      else keep.push(rows[i]);
    });
    if (removed === 0) continue;
    deleted += removed;
    if (keep.length === 0) instance.deleteDocument(op, buckets, entry);
    else instance.updateDocument(op, buckets, entry, encodeBucket(packBucket(keep, bucket.meta, options, bucket._id)), undefined);
    if (limit === 1) break;
  }
  return deleted;
}
