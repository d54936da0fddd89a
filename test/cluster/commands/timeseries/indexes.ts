/**
 * Indexes of a time-series collection, kept on its buckets collection in bucket terms and shown
 * in the user's terms (timeseries_index_schema_conversion_functions.cpp, mongod 7.0):
 * - the metaField (or a subfield) maps to `meta` (`meta.<sub>`), any index type;
 * - the timeField maps to `control.min.<t>` and `control.max.<t>` (ascending) or
 *   `control.max.<t>` and `control.min.<t>` (descending);
 * - another (measurement) field maps like the time field, and the buckets index keeps the user's
 *   specification as `originalSpec` (6.0+), which `listIndexes` shows as it was given.
 * Unique indexes are refused. `createIndexes`, `listIndexes` and `dropIndexes` on the view work
 * on the buckets collection through these mappings.
 */
import { ServerError } from '../../errors.js';
import { serialize } from '../../raw.js';
import type { View } from '../../storage/collection.js';
import { type TimeseriesOptions, timeseriesOptionsOf } from '../../storage/timeseries.js';
import { isDocument } from '../../storage/keys.js';
import { listCursor, openCursor } from '../cursors.js';
import { type CommandContext, type CommandReply, lookupCommand } from '../registry.js';

function metaPath(field: string, options: TimeseriesOptions): string | undefined {
  const meta = options.metaField;
  if (meta === undefined) return undefined;
  if (field === meta) return 'meta';
  if (field.startsWith(`${meta}.`)) return `meta${field.slice(meta.length)}`;
  return undefined;
}

function unsupported(key: Record<string, unknown>): ServerError {
  return new ServerError('BadValue', `Invalid index spec for time-series collection: ${JSON.stringify(key)}`);
}

/**
 * A user key pattern in bucket terms; `measurements` says whether it names fields other than the
 * time and meta fields (whose indexes keep their original specification).
 */
export function toBucketsKey(
  key: Record<string, unknown>,
  options: TimeseriesOptions,
): { key: Record<string, unknown>; measurements: boolean } {
  const out: Record<string, unknown> = {};
  let measurements = false;
  for (const [field, value] of Object.entries(key)) {
    const meta = metaPath(field, options);
    if (meta !== undefined) {
      out[meta] = value;
      continue;
    }
    if (typeof value !== 'number' || value === 0) throw unsupported(key);
    if (field !== options.timeField) measurements = true;
    if (value > 0) {
      out[`control.min.${field}`] = value;
      out[`control.max.${field}`] = value;
    } else {
      out[`control.max.${field}`] = value;
      out[`control.min.${field}`] = value;
    }
  }
  return { key: out, measurements };
}

/** A buckets key pattern in the user's terms, or undefined when it is not one a view index maps to. */
function toTimeseriesKey(key: Record<string, unknown>, options: TimeseriesOptions): Record<string, unknown> | undefined {
  const entries = Object.entries(key);
  const out: Record<string, unknown> = {};
  for (let i = 0; i < entries.length; i++) {
    const [field, value] = entries[i];
    if ((field === 'meta' || field.startsWith('meta.')) && options.metaField !== undefined) {
      out[`${options.metaField}${field.slice(4)}`] = value;
    } else if (field.startsWith('control.min.') || field.startsWith('control.max.')) {
      const name = field.slice('control.min.'.length);
      const partner = entries[i + 1]?.[0];
      if (partner !== `control.${field.startsWith('control.min.') ? 'max' : 'min'}.${name}`) return undefined;
      out[name] = value;
      i++;
    } else return undefined;
  }
  return out;
}

/** A partial filter on the metaField in bucket terms; undefined when it reads other fields too. */
function toBucketsFilter(filter: unknown, options: TimeseriesOptions, toBuckets: boolean): unknown {
  if (Array.isArray(filter)) {
    const clauses = filter.map((clause) => toBucketsFilter(clause, options, toBuckets));
    return clauses.some((c) => c === undefined) ? undefined : clauses;
  }
  if (!isDocument(filter)) return filter;
  const out: Record<string, unknown> = {};
  for (const [field, value] of Object.entries(filter)) {
    if (field.startsWith('$')) {
      const inner = toBucketsFilter(value, options, toBuckets);
      if (inner === undefined) return undefined;
      out[field] = inner;
      continue;
    }
    let path: string | undefined;
    if (toBuckets) path = metaPath(field, options);
    else if ((field === 'meta' || field.startsWith('meta.')) && options.metaField !== undefined)
      path = `${options.metaField}${field.slice(4)}`;
    if (path === undefined) return undefined;
    out[path] = value;
  }
  return out;
}

/** A requested index on the view as its buckets index. */
function toBucketsSpec(spec: Record<string, unknown>, options: TimeseriesOptions): Record<string, unknown> {
  if (!isDocument(spec) || !isDocument(spec.key)) return spec; // createIndexes reports the malformed request
  if (spec.unique === true) throw new ServerError('InvalidOptions', 'Unique indexes are not supported on time-series collections');
  const { key, measurements } = toBucketsKey(spec.key, options);
  const out: Record<string, unknown> = {};
  for (const [field, value] of Object.entries(spec)) {
    if (field === 'key') out.key = key;
    else if (field === 'partialFilterExpression') {
      const filter = toBucketsFilter(value, options, true);
      if (filter !== undefined) out.partialFilterExpression = filter;
    } else out[field] = value;
  }
  const partialOnMeasurements = spec.partialFilterExpression !== undefined && out.partialFilterExpression === undefined;
  if (measurements || partialOnMeasurements) out.originalSpec = spec;
  return out;
}

/** A buckets index as `listIndexes` on the view shows it, or undefined for one the view does not show. */
function toTimeseriesSpec(spec: Record<string, unknown>, options: TimeseriesOptions): Record<string, unknown> | undefined {
  if (spec.name === '_id_') return undefined;
  if (isDocument(spec.originalSpec)) return spec.originalSpec;
  const key = toTimeseriesKey(spec.key as Record<string, unknown>, options);
  if (!key) return undefined;
  const out: Record<string, unknown> = {};
  for (const [field, value] of Object.entries(spec)) {
    if (field === 'key') out.key = key;
    else if (field === 'partialFilterExpression') out.partialFilterExpression = toBucketsFilter(value, options, false) ?? value;
    else out[field] = value;
  }
  return out;
}

function bucketsOf(ctx: CommandContext, view: View): { name: string; options: TimeseriesOptions } {
  const buckets = ctx.instance.catalog.collection(ctx.db, view.viewOn);
  const options = timeseriesOptionsOf(buckets);
  if (!buckets || !options) throw new ServerError('NamespaceNotFound', `ns does not exist: ${view.ns}`);
  return { name: buckets.name, options };
}

/** `createIndexes` on a time-series view: the same request on its buckets, in bucket terms. */
export function createIndexesTimeseries(ctx: CommandContext, view: View): Promise<CommandReply> | CommandReply {
  const { name, options } = bucketsOf(ctx, view);
  const indexes = Array.isArray(ctx.body.indexes)
    ? ctx.body.indexes.map((spec) => toBucketsSpec(spec as Record<string, unknown>, options))
    : ctx.body.indexes;
  return lookupCommand('createIndexes')!.handler({ ...ctx, body: { ...ctx.body, createIndexes: name, indexes } });
}

/** `listIndexes` on a time-series view: the buckets indexes in the user's terms. */
export async function listIndexesTimeseries(ctx: CommandContext, view: View): Promise<CommandReply> {
  const { options } = bucketsOf(ctx, view);
  const buckets = ctx.instance.catalog.collection(ctx.db, view.viewOn)!;
  const docs = buckets.indexes
    .map((index) => toTimeseriesSpec({ ...index.spec }, options))
    .filter((spec): spec is Record<string, unknown> => spec !== undefined)
    .map((spec) => serialize(spec));
  const cursor = (ctx.body.cursor ?? {}) as { batchSize?: unknown };
  const batchSize = cursor.batchSize === undefined ? undefined : Number(cursor.batchSize);
  return openCursor(ctx.instance, listCursor(`${ctx.db}.$cmd.listIndexes.${view.name}`, docs), { batchSize });
}

/** `dropIndexes` on a time-series view: by name, or by the user's key pattern in bucket terms. */
export function dropIndexesTimeseries(ctx: CommandContext, view: View, command: string): Promise<CommandReply> | CommandReply {
  const { name, options } = bucketsOf(ctx, view);
  const index = isDocument(ctx.body.index) ? toBucketsKey(ctx.body.index, options).key : ctx.body.index;
  return lookupCommand(command)!.handler({ ...ctx, body: { ...ctx.body, [command]: name, index } });
}
