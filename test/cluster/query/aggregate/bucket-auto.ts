/**
 * `$bucketAuto` as mongod computes it (DocumentSourceBucketAuto::populateBuckets): documents
 * sorted by the groupBy value are dealt into buckets of round(n / buckets) documents, a bucket
 * also takes every following document with the same value as its last, and each bucket's `max` is
 * the next bucket's `min` (the last bucket's own maximum). Boundary values keep their exact BSON
 * types (Ferry partitions by `_id` with it). `granularity` is left to mingo.
 */
import { Aggregator } from '../../mingo.js';
import { Int32 } from 'bson';
import { ServerError } from '../../errors.js';
import { compareValues } from '../../bson-order.js';
import { serialize } from '../../raw.js';
import { bsonTypeName } from '../../commands/args.js';
import { DocNode, typedOf } from '../update/tree.js';
import { Row } from './row.js';

export interface BucketAutoSpec {
  groupBy: unknown;
  buckets: number;
  output?: Record<string, unknown>;
  granularity?: string;
}

const OPTIONS = new Set(['groupBy', 'buckets', 'output', 'granularity']);

/** Validates a `$bucketAuto` argument with mongod's errors. */
export function parseBucketAuto(arg: unknown): BucketAutoSpec {
  if (arg === null || typeof arg !== 'object' || Array.isArray(arg)) {
    throw new ServerError(40240, `The argument to $bucketAuto must be an object, but found type: ${bsonTypeName(arg)}.`);
  }
  const spec = arg as Record<string, unknown>;
  for (const key of Object.keys(spec)) {
    if (!OPTIONS.has(key)) throw new ServerError(40245, `Unrecognized option to $bucketAuto: ${key}.`);
  }
  if (spec.groupBy === undefined || spec.buckets === undefined) {
    throw new ServerError(40246, "$bucketAuto requires 'groupBy' and 'buckets' to be specified");
  }
  const groupBy = spec.groupBy;
  const isPath = typeof groupBy === 'string' && groupBy.startsWith('$');
  const isExpression = typeof groupBy === 'object' && groupBy !== null && !Array.isArray(groupBy);
  if (!isPath && !isExpression) {
    throw new ServerError(
      40239,
      `The $bucketAuto 'groupBy' field must be defined as a $-prefixed path or an expression object, but found: ${JSON.stringify(groupBy)}.`,
    );
  }
  if (typeof spec.buckets !== 'number' || !Number.isInteger(spec.buckets)) {
    throw new ServerError(40241, `The $bucketAuto 'buckets' field must be a numeric value, but found type: ${bsonTypeName(spec.buckets)}.`);
  }
  if (spec.buckets <= 0) {
    throw new ServerError(40243, `The $bucketAuto 'buckets' field must be greater than 0, but found: ${spec.buckets}.`);
  }
  if (spec.output !== undefined && (typeof spec.output !== 'object' || spec.output === null || Array.isArray(spec.output))) {
    throw new ServerError(40244, `The $bucketAuto 'output' field must be an object, but found type: ${bsonTypeName(spec.output)}.`);
  }
  return {
    groupBy,
    buckets: spec.buckets,
    output: spec.output as Record<string, unknown> | undefined,
    granularity: spec.granularity as string | undefined,
  };
}

/**
 * The groupBy value of a row: a `$path` is read from the raw document (exact type kept) unless it
 * crosses an array; anything else is evaluated by mingo.
 */
function groupKey(row: Row, spec: BucketAutoSpec, expression: Aggregator | undefined): unknown {
  if (!expression) {
    const parts = (spec.groupBy as string).slice(1).split('.');
    let node: DocNode | undefined = DocNode.parse(row.raw);
    for (let i = 0; i < parts.length; i++) {
      const slot = node.get(parts[i]);
      if (slot === undefined) return null;
      if (i === parts.length - 1) return typedOf(slot);
      node = node.child(parts[i]);
      if (!node || node.isArray) break;
    }
  }
  const evaluator = expression ?? new Aggregator([{ $project: { _id: 0, v: spec.groupBy } }]);
  const [out] = evaluator.run([row.doc]) as { v?: unknown }[];
  return out?.v ?? null;
}

export function bucketAuto(rows: Row[], spec: BucketAutoSpec): Row[] {
  const isPath = typeof spec.groupBy === 'string';
  const expression = isPath ? undefined : new Aggregator([{ $project: { _id: 0, v: spec.groupBy } }]);
  const keyed = rows.map((row) => ({ row, key: groupKey(row, spec, expression) }));
  keyed.sort((a, b) => compareValues(a.key, b.key));

  const approx = Math.max(1, Math.round(keyed.length / spec.buckets));
  const buckets: { min: unknown; max: unknown; rows: Row[] }[] = [];
  let i = 0;
  for (let b = 0; b < spec.buckets && i < keyed.length; b++) {
    const bucket = { min: keyed[i].key, max: keyed[i].key, rows: [keyed[i].row] };
    i++;
    if (b === spec.buckets - 1) {
      for (; i < keyed.length; i++) {
        bucket.rows.push(keyed[i].row);
        bucket.max = keyed[i].key;
      }
    } else {
      for (let j = 0; j < approx - 1 && i < keyed.length; j++, i++) {
        bucket.rows.push(keyed[i].row);
        bucket.max = keyed[i].key;
      }
      // Values equal to the boundary stay in this bucket.
      while (i < keyed.length && compareValues(keyed[i].key, bucket.max) === 0) {
        bucket.rows.push(keyed[i].row);
        i++;
      }
    }
    buckets.push(bucket);
  }

  const accumulate = spec.output ? new Aggregator([{ $group: { _id: null, ...spec.output } }]) : undefined;
  return buckets.map((bucket, k) => {
    const max = k + 1 < buckets.length ? buckets[k + 1].min : bucket.max;
    const doc: Record<string, unknown> = { _id: { min: bucket.min, max } };
    if (accumulate) {
      const [totals] = accumulate.run(bucket.rows.map((r) => r.doc)) as Record<string, unknown>[];
      for (const [name, value] of Object.entries(totals ?? {})) if (name !== '_id') doc[name] = value;
    } else {
      doc.count = new Int32(bucket.rows.length);
    }
    return Row.fromRaw(serialize(doc));
  });
}
