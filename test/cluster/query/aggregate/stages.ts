/**
 * Aggregation stages the test cluster runs itself, on rows that stay raw as long as possible:
 * `$match`, `$sort`, `$skip`, `$limit`, `$sample`, `$count`, `$unwind`, `$bucketAuto`, and
 * `$project`/`$unset` when they only include or exclude fields. Everything else is mingo's
 * (`perDocument` for stages that map one document to at most one, `blocking` for the rest).
 */
import { Aggregator, type CollationSpec } from '../../mingo.js';
import { type Collation, comparatorOf } from '../../collation/collation.js';
import { compileFilter } from '../../collation/query.js';
import { Long } from 'bson';
import { ServerError } from '../../errors.js';
import { bsonTypeName } from '../../commands/args.js';
import { Projection } from '../projection.js';
import { parseSort, sortByKeys } from '../sort.js';
import { DocNode, Leaf, type Slot, BsonType, slotType } from '../update/tree.js';
import { drain, type Pull, pullFrom, Row } from './row.js';

/** mingo options shared by every stage of one pipeline. */
export interface MingoOptions {
  variables?: Record<string, unknown>;
  collectionResolver?: (name: string) => Record<string, unknown>[];
  /** The pipeline's collation (undefined: simple): `$match` and `$sort` compare strings by it. */
  collation?: Collation;
}

function mingoOptions(options: MingoOptions) {
  return {
    variables: options.variables,
    collectionResolver: options.collectionResolver,
    scriptEnabled: false,
    ...(options.collation ? { collation: options.collation.spec as unknown as CollationSpec } : {}),
  };
}

export function match(input: Pull, filter: unknown, options: MingoOptions): Pull {
  if (filter === null || typeof filter !== 'object' || Array.isArray(filter)) {
    throw new ServerError(15959, 'the match filter must be an expression in an object');
  }
  const query = compileFilter(filter as Record<string, unknown>, options.collation, mingoOptions(options));
  return () => {
    for (let row = input(); row; row = input()) if (query.test(row.doc)) return row;
    return undefined;
  };
}

export function sort(input: Pull, spec: unknown, options: MingoOptions = {}): Pull {
  if (spec === null || typeof spec !== 'object' || Array.isArray(spec)) {
    throw new ServerError(15973, 'the $sort key specification must be an object');
  }
  const fields = parseSort(spec as Record<string, unknown>);
  if (Object.keys(spec).length === 0) throw new ServerError(15976, '$sort stage must have at least one sort key');
  let sorted: Pull | undefined;
  return () => (sorted ??= pullFrom(sortByKeys(drain(input), (r) => r.doc, fields, comparatorOf(options.collation))))();
}

function count(name: string, arg: unknown, code: number, message: string): number {
  if (typeof arg !== 'number' || !Number.isFinite(arg) || !Number.isInteger(arg)) {
    throw new ServerError(code, `${name} ${message}, got: ${bsonTypeName(arg)}`);
  }
  return arg;
}

export function limit(input: Pull, arg: unknown): Pull {
  const n = count('$limit', arg, 15957, 'the limit must be specified as a number');
  if (n <= 0) throw new ServerError(15958, 'the limit must be positive');
  let left = n;
  return () => (left-- > 0 ? input() : undefined);
}

export function skip(input: Pull, arg: unknown): Pull {
  const n = count('$skip', arg, 15972, 'argument to $skip must be a number');
  if (n < 0) throw new ServerError(15956, `Argument to $skip cannot be negative`);
  let left = n;
  return () => {
    while (left > 0) {
      left--;
      if (!input()) return undefined;
    }
    return input();
  };
}

/** The requested sample size (mongod's checks). */
export function sampleSize(arg: unknown): number {
  if (arg === null || typeof arg !== 'object' || Array.isArray(arg)) {
    throw new ServerError(28745, 'the $sample stage specification must be an object');
  }
  const spec = arg as Record<string, unknown>;
  for (const key of Object.keys(spec)) if (key !== 'size') throw new ServerError(28748, `unrecognized option to $sample: ${key}`);
  if (spec.size === undefined) throw new ServerError(28749, '$sample stage must specify a size');
  if (typeof spec.size !== 'number') throw new ServerError(28746, 'size argument to $sample must be a number');
  if (spec.size < 0) throw new ServerError(28747, 'size argument to $sample must not be negative');
  return Math.trunc(spec.size);
}

/** `size` distinct items chosen uniformly at random, in random order. */
export function sampleOf<T>(items: T[], size: number): T[] {
  const n = Math.min(size, items.length);
  const pool = items.slice();
  for (let i = 0; i < n; i++) {
    const j = i + Math.floor(Math.random() * (pool.length - i));
    [pool[i], pool[j]] = [pool[j], pool[i]];
  }
  return pool.slice(0, n);
}

export function sample(input: Pull, arg: unknown): Pull {
  const size = sampleSize(arg);
  let out: Pull | undefined;
  return () => (out ??= pullFrom(sampleOf(drain(input), size)))();
}

export function countStage(input: Pull, arg: unknown): Pull {
  if (typeof arg !== 'string' || arg.length === 0) throw new ServerError(40156, 'the count field must be a non-empty string');
  if (arg.startsWith('$')) throw new ServerError(40158, 'the count field cannot be a $-prefixed path');
  if (arg.includes('.')) throw new ServerError(40160, "the count field cannot contain '.'");
  let done = false;
  return () => {
    if (done) return undefined;
    done = true;
    const n = drain(input).length;
    // Like mongod's {$group: {_id: null, n: {$sum: 1}}}: no documents, no result.
    return n === 0 ? undefined : Row.fromDoc({ [arg]: n });
  };
}

/** Whether a `$project` only includes or excludes fields (values 0/1/true/false). */
export function isPlainProjection(spec: unknown): spec is Record<string, number | boolean> {
  return (
    typeof spec === 'object' &&
    spec !== null &&
    !Array.isArray(spec) &&
    Object.keys(spec).length > 0 &&
    Object.values(spec).every((v) => typeof v === 'boolean' || typeof v === 'number')
  );
}

export function project(input: Pull, spec: Record<string, number | boolean>): Pull {
  const projection = new Projection(spec, undefined);
  return () => {
    const row = input();
    return row && Row.fromRaw(projection.apply(row.raw));
  };
}

export function unsetFields(spec: unknown): Record<string, number> {
  const fields = typeof spec === 'string' ? [spec] : spec;
  if (!Array.isArray(fields) || fields.length === 0) {
    throw new ServerError(31119, '$unset specification must be a string or an array with at least one field');
  }
  if (fields.some((f) => typeof f !== 'string')) {
    throw new ServerError(31120, '$unset specification must be a string or an array containing only string values');
  }
  return Object.fromEntries((fields as string[]).map((f) => [f, 0]));
}

const UNWIND_OPTIONS = new Set(['path', 'includeArrayIndex', 'preserveNullAndEmptyArrays']);

/** `$unwind` on raw documents: one row per array element, other fields' bytes untouched. */
export function unwind(input: Pull, arg: unknown): Pull {
  let path: unknown;
  let indexField: string | undefined;
  let preserve = false;
  if (typeof arg === 'string') path = arg;
  else if (arg !== null && typeof arg === 'object' && !Array.isArray(arg)) {
    const spec = arg as Record<string, unknown>;
    for (const key of Object.keys(spec))
      if (!UNWIND_OPTIONS.has(key)) throw new ServerError(28811, `unrecognized option to $unwind stage: ${key}`);
    path = spec.path;
    if (spec.includeArrayIndex !== undefined) {
      if (typeof spec.includeArrayIndex !== 'string' || spec.includeArrayIndex.length === 0) {
        throw new ServerError(28810, 'expected a non-empty string for the includeArrayIndex option to $unwind stage');
      }
      if (spec.includeArrayIndex.startsWith('$')) {
        throw new ServerError(
          28822,
          `includeArrayIndex option to $unwind stage should not be prefixed with a '$': ${spec.includeArrayIndex}`,
        );
      }
      indexField = spec.includeArrayIndex;
    }
    if (spec.preserveNullAndEmptyArrays !== undefined) {
      if (typeof spec.preserveNullAndEmptyArrays !== 'boolean') {
        throw new ServerError(28809, 'expected a boolean for the preserveNullAndEmptyArrays option to $unwind stage');
      }
      preserve = spec.preserveNullAndEmptyArrays;
    }
  } else {
    throw new ServerError(15981, `expected either a string or an object as specification for $unwind stage, got ${bsonTypeName(arg)}`);
  }
  if (path === undefined) throw new ServerError(28812, 'no path specified to $unwind stage');
  if (typeof path !== 'string') throw new ServerError(28808, `expected a string as the path for $unwind stage, got ${bsonTypeName(path)}`);
  if (!path.startsWith('$')) throw new ServerError(28818, `path option to $unwind stage should be prefixed with a '$': ${path}`);
  const parts = path.slice(1).split('.');

  const pending: Row[] = [];
  const expand = (row: Row): void => {
    const root = DocNode.parse(row.raw);
    const chain: DocNode[] = [root];
    let value: Slot | undefined;
    for (let i = 0; i < parts.length; i++) {
      const node = chain[i];
      value = node.get(parts[i]);
      if (value === undefined || i === parts.length - 1) break;
      const child = node.child(parts[i]);
      if (!child || child.isArray) {
        value = undefined;
        break;
      }
      chain.push(child);
    }
    const emit = (slot: Slot | undefined, index: number | null): void => {
      if (value === undefined) {
        // Missing (preserved): the document as it is, plus the index field.
        if (indexField !== undefined) root.set(indexField, Leaf.null());
        pending.push(indexField === undefined ? row : Row.fromRaw(root.toBuffer()));
        return;
      }
      // Rebuild the objects along the path with the field set (or removed) in place.
      let replacement = slot;
      for (let i = chain.length - 1; i >= 0; i--) {
        const copy = new DocNode(false, [...chain[i].names], [...chain[i].values]);
        if (i === chain.length - 1) {
          if (replacement === undefined) copy.remove(parts[i]);
          else copy.set(parts[i], replacement);
        } else copy.set(parts[i], replacement!);
        if (i === 0 && indexField !== undefined) copy.set(indexField, index === null ? Leaf.null() : Leaf.of(Long.fromNumber(index)));
        replacement = copy;
      }
      pending.push(Row.fromRaw((replacement as DocNode).toBuffer()));
    };
    const type = value === undefined ? undefined : slotType(value);
    if (type === BsonType.Array) {
      const array = value instanceof DocNode ? value : DocNode.parse((value as Leaf).bytes, true);
      if (array.length === 0) {
        if (preserve) emit(undefined, null);
        return;
      }
      array.values.forEach((element, i) => emit(element, i));
    } else if (value === undefined || type === BsonType.Null) {
      if (preserve) emit(value, null);
    } else {
      emit(value, null);
    }
  };
  return () => {
    while (pending.length === 0) {
      const row = input();
      if (!row) return undefined;
      expand(row);
    }
    return pending.shift();
  };
}

/** A mingo stage that maps each document to at most one ($addFields, $project with expressions, ...). */
export function perDocument(input: Pull, stage: Record<string, unknown>, options: MingoOptions): Pull {
  const aggregator = new Aggregator([stage], mingoOptions(options));
  return () => {
    for (let row = input(); row; row = input()) {
      const [out] = aggregator.run([row.doc]) as Record<string, unknown>[];
      if (out) return Row.fromDoc(out, row);
    }
    return undefined;
  };
}

/** Mingo stages that need the whole input ($group, $facet, $lookup, ...). */
export function blocking(input: Pull, stages: Record<string, unknown>[], options: MingoOptions): Pull {
  let out: Pull | undefined;
  return () => {
    if (!out) {
      const results = new Aggregator(stages, mingoOptions(options)).run(drain(input).map((r) => r.doc)) as Record<string, unknown>[];
      out = pullFrom(results.map((d) => Row.fromDoc(d)));
    }
    return out();
  };
}
