/**
 * Filters evaluated under a collation. mingo compares strings in code-unit order and applies a
 * collation only to `$sort`; under a collation mongod compares strings by it in `$eq`, `$ne`,
 * `$gt`, `$gte`, `$lt`, `$lte`, `$in`, `$nin` and `$all` (regular expressions, `$type`,
 * `$exists`... ignore it). So a collated query runs with mingo's own operators for everything
 * but those, which are replaced by versions that compare through the collation. The operators
 * keep mingo's matching rules (arrays match by any element; comparisons only within one type).
 * The simple collation keeps mingo's `Query`, but for comparisons with a Timestamp: mingo orders
 * Timestamps by their decimal strings (so `$lte` the largest Timestamp matched nothing below it),
 * mongod as unsigned (seconds, increment) pairs (its Timestamp's `operator<`, bson-order.ts).
 */
import {
  accumulatorOperators,
  Context,
  expressionOperators,
  pipelineOperators,
  projectionOperators,
  QueryBase,
  queryOperators,
  resolve,
  windowOperators,
} from '../mingo.js';
import { compareValues, typeRank } from '../bson-order.js';
import { canonicalKey } from '../storage/keys.js';
import type { Collation } from './collation.js';

type QueryOperator = (selector: string, value: unknown, options: unknown) => (doc: unknown) => boolean;

function isNil(v: unknown): boolean {
  return v === null || v === undefined;
}

function isRegExp(v: unknown): v is RegExp {
  return v instanceof RegExp;
}

function flatten(values: unknown[], depth: number): unknown[] {
  const out: unknown[] = [];
  const walk = (items: unknown[], n: number) => {
    for (const item of items) {
      if (Array.isArray(item) && n !== 0) walk(item, Math.max(-1, n - 1));
      else out.push(item);
    }
  };
  walk(values, depth);
  return out;
}

/** Builds a query operator from a predicate on the resolved value, as mingo's processQuery does. */
function operator(test: (lhs: unknown, rhs: unknown, depth: number) => boolean): QueryOperator {
  return (selector, value) => {
    const depth = selector.split('.').length - 1;
    return (doc) => test(resolve(doc as never, selector, { unwrapArray: true }), value, depth);
  };
}

/** `$gt`, `$gte`, `$lt`, `$lte` through `cmp`, within one type (arrays match by any element), as mingo's. */
function orderedOperators(cmp: (a: unknown, b: unknown) => number): Record<'$gt' | '$gte' | '$lt' | '$lte', QueryOperator> {
  const ordered = (accept: (c: number) => boolean) =>
    operator((a, b) => {
      const candidates = Array.isArray(a) ? [...a, ...(Array.isArray(b) ? [a] : [])] : [a];
      return candidates.some((v) => !isNil(v) && !isNil(b) && typeRank(v) === typeRank(b) && accept(cmp(v, b)));
    });
  return {
    $gt: ordered((c) => c > 0),
    $gte: ordered((c) => c >= 0),
    $lt: ordered((c) => c < 0),
    $lte: ordered((c) => c <= 0),
  };
}

function isTimestamp(v: unknown): boolean {
  return typeof v === 'object' && v !== null && (v as { _bsontype?: string })._bsontype === 'Timestamp';
}

/**
 * `$in`/`$nin` through a lookup built once per query, as mongod's InMatchExpression keeps its values
 * sorted. mingo's own hashes the whole list again for every document tested (a `deleteMany` of 500
 * `_id`s cost O(n²)) and takes embedded documents with their fields in another order for equal,
 * which mongod's comparison does not. Values are bucketed by their canonical key (equal when
 * mongod's comparison says equal, keys.ts) and a candidate is confirmed by that comparison; a
 * regular expression matches strings. Lists holding `undefined` or an undecoded BSON regular
 * expression keep mingo's operator.
 */
function lookupOperator(negate: boolean, mingo: QueryOperator): QueryOperator {
  return (selector, value, options) => {
    if (!Array.isArray(value) || value.some((v) => v === undefined || (v as { _bsontype?: string })?._bsontype === 'BSONRegExp')) {
      return mingo(selector, value, options);
    }
    const patterns = value.filter(isRegExp);
    const buckets = new Map<string, unknown[]>();
    for (const v of value) {
      if (isRegExp(v)) continue;
      const key = canonicalKey(v);
      const bucket = buckets.get(key);
      if (bucket) bucket.push(v);
      else buckets.set(key, [v]);
    }
    const hasNull = value.some((v) => v === null);
    const matchesOne = (candidate: unknown) =>
      buckets.get(canonicalKey(candidate))?.some((v) => typeRank(v) === typeRank(candidate) && compareValues(v, candidate) === 0) ===
        true ||
      (typeof candidate === 'string' && patterns.some((pattern) => pattern.test(candidate)));
    const among = (a: unknown): boolean => {
      if (isNil(a)) return hasNull;
      // An array matches as a whole or by any element, as in the collated `among` above.
      return matchesOne(a) || (Array.isArray(a) && a.some(matchesOne));
    };
    return operator((a) => among(a) !== negate)(selector, value, options);
  };
}

/**
 * mingo's comparison operators, but those against a Timestamp, which compare in mongod's order,
 * and `$in`/`$nin`, which look their values up.
 */
function simpleOperators(): Record<string, QueryOperator> {
  const canonical = orderedOperators(compareValues);
  const mingo = queryOperators as unknown as Record<string, QueryOperator>;
  const operators: Record<string, QueryOperator> = {};
  for (const name of Object.keys(canonical) as (keyof typeof canonical)[]) {
    operators[name] = (selector, value, options) => (isTimestamp(value) ? canonical[name] : mingo[name]!)(selector, value, options);
  }
  operators.$in = lookupOperator(false, mingo.$in!);
  operators.$nin = lookupOperator(true, mingo.$nin!);
  return operators;
}

/** The collated versions of the comparison operators. */
function collatedOperators(collation: Collation): Record<string, QueryOperator> {
  const cmp = collation.compare;
  const equal = (a: unknown, b: unknown) =>
    (isNil(a) && isNil(b)) || (!isNil(a) && !isNil(b) && typeRank(a) === typeRank(b) && cmp(a, b) === 0);
  const eq = (a: unknown, b: unknown, depth: number): boolean => {
    if (equal(a, b)) return true;
    if (!Array.isArray(a)) return false;
    return a.some((v) => equal(v, b)) || flatten(a, depth).some((v) => equal(v, b));
  };
  const among = (a: unknown, values: unknown[]): boolean => {
    if (isNil(a)) return values.some((v) => v === null);
    const candidates = Array.isArray(a) ? [a, ...a] : [a];
    return values.some((v) =>
      isRegExp(v) ? candidates.some((c) => typeof c === 'string' && v.test(c)) : candidates.some((c) => equal(c, v)),
    );
  };
  const asArray = (v: unknown): unknown[] => (Array.isArray(v) ? v : [v]);
  return {
    $eq: operator(eq),
    $ne: operator((a, b, depth) => !eq(a, b, depth)),
    ...orderedOperators(cmp),
    $in: operator((a, b) => among(a, asArray(b))),
    $nin: operator((a, b) => !among(a, asArray(b))),
    $all: operator((a, b) => {
      const values = asArray(b);
      if (!Array.isArray(a) || a.length === 0 || values.length === 0) return false;
      return values.every((v) => (isRegExp(v) ? a.some((x) => typeof x === 'string' && v.test(x)) : a.some((x) => equal(x, v))));
    }),
  };
}

const contexts = new WeakMap<Collation, Context>();

function contextWith(comparisons: Record<string, QueryOperator>): Context {
  return Context.init({
    accumulator: accumulatorOperators,
    expression: expressionOperators,
    pipeline: pipelineOperators,
    projection: projectionOperators,
    query: { ...queryOperators, ...comparisons } as never,
    window: windowOperators,
  } as never);
}

/** mingo's operators with the comparisons of `collation` in place of its own. */
function contextOf(collation: Collation): Context {
  let context = contexts.get(collation);
  if (!context) {
    context = contextWith(collatedOperators(collation));
    contexts.set(collation, context);
  }
  return context;
}

/** The simple collation's operators (built on first use). */
let simpleContext: Context | undefined;

/** Options of mingo queries (variables for `$expr`, scripts off). */
export interface QueryOptions {
  variables?: Record<string, unknown>;
  scriptEnabled?: boolean;
  collectionResolver?: (name: string) => Record<string, unknown>[];
}

/** A compiled filter: mingo's own under the simple collation, the collated operators otherwise. */
export function compileFilter(
  filter: Record<string, unknown>,
  collation: Collation | undefined,
  options: QueryOptions = {},
): { test(doc: unknown): boolean } {
  if (!collation) return new QueryBase(filter, { ...options, context: (simpleContext ??= contextWith(simpleOperators())) } as never);
  return new QueryBase(filter, { ...options, collation: collation.spec as never, context: contextOf(collation) } as never);
}
