/**
 * Query execution for `find` and the read side of writes: chooses a scan from the hint, sort and
 * filter (`_id` point lookups, one or a `$in` set of them, `_id` range scans, natural order, or a hinted secondary index's
 * key order with `min`/`max`), evaluates the filter with mingo on the decoded document, sorts in
 * canonical BSON order when the scan order is not the requested one, then skip. Documents stay
 * raw unless a filter, sort or projection needs their values.
 */
import { BSON } from 'bson';
import { ServerError } from '../errors.js';
import type { Collection, DocEntry } from '../storage/collection.js';
import type { Index } from '../storage/indexes.js';
import { Collation, comparatorOf, isCollatable } from '../collation/collation.js';
import { compileFilter } from '../collation/query.js';
import { promoted } from '../raw.js';
import { parseProjection } from './projection.js';
import { parseSort, sortByKeys } from './sort.js';
import { scanCollection, type ScanOptions } from './scan.js';
import type { BatchDocument } from '../storage/memory.js';

export interface MatchSpec {
  /** The query (promoted values). */
  filter?: Record<string, unknown>;
  sort?: Record<string, unknown>;
  /** Index name or key pattern, or `{$natural: ±1}`. */
  hint?: string | Record<string, unknown>;
  skip?: number;
  /** Inclusive lower index bound (needs `hint`). */
  min?: Record<string, unknown>;
  /** Exclusive upper index bound (needs `hint`). */
  max?: Record<string, unknown>;
  /** Variables for `$expr` (`let`). */
  variables?: Record<string, unknown>;
  /**
   * The collation the operation runs under (its own or the collection's default; undefined for the
   * simple one): filters, sorts and `_id` lookups follow it.
   */
  collation?: Collation;
}

export interface FindSpec extends MatchSpec {
  projection?: Record<string, unknown>;
}

/** A matching document; `doc` is its promoted form when matching needed it. */
export interface Match {
  entry: DocEntry;
  doc: Record<string, unknown> | undefined;
}

function isOperatorObject(v: unknown): boolean {
  return (
    typeof v === 'object' &&
    v !== null &&
    !Array.isArray(v) &&
    !('_bsontype' in v) &&
    !(v instanceof Date) &&
    Object.keys(v).some((k) => k.startsWith('$'))
  );
}

export function sameKeyPattern(a: Record<string, unknown>, b: Record<string, unknown>): boolean {
  const ka = Object.keys(a);
  const kb = Object.keys(b);
  return ka.length === kb.length && ka.every((k, i) => k === kb[i] && String(a[k]) === String(b[k]));
}

function badHint(): ServerError {
  return new ServerError(
    'BadValue',
    'error processing query: planner returned error :: caused by :: hint provided does not correspond to an existing index',
  );
}

/** The index a hint names (hidden indexes cannot be hinted), or `$natural`. */
export function resolveHint(collection: Collection, hint: string | Record<string, unknown>): Index | { natural: 1 | -1 } {
  if (typeof hint === 'object' && hint !== null && '$natural' in hint) {
    return { natural: Number(hint.$natural) < 0 ? -1 : 1 };
  }
  const index = collection.indexes.find((i) => (typeof hint === 'string' ? i.name === hint : sameKeyPattern(i.spec.key, hint)));
  if (!index || index.spec.hidden) throw badHint();
  return index;
}

/** The single `_id` value an equality filter names, if that is all it says about `_id`. */
function idEquality(filter: Record<string, unknown> | undefined): { value: unknown } | undefined {
  if (!filter || !('_id' in filter)) return undefined;
  const v = filter._id;
  if (isOperatorObject(v) || v instanceof RegExp || (v as { _bsontype?: string })?._bsontype === 'BSONRegExp') return undefined;
  if (Array.isArray(v)) return undefined; // {_id: [..]} matches nothing stored but is not a point
  return { value: v };
}

/**
 * The values of a `{_id: {$in: [...]}}` filter (no other operator on `_id`), deduplicated, in
 * ascending `_id` order: mongod answers it from the `_id` index, one point per value, in index
 * order. Undefined when it is not that shape, or a value is a regex or an array (those match by
 * more than equality: scanned instead).
 */
function idSet(filter: Record<string, unknown> | undefined, compare: (a: unknown, b: unknown) => number): unknown[] | undefined {
  const v = filter?._id;
  if (!isOperatorObject(v)) return undefined;
  const operators = Object.keys(v as object);
  const values = (v as { $in?: unknown }).$in;
  if (operators.length !== 1 || operators[0] !== '$in' || !Array.isArray(values)) return undefined;
  if (values.some((x) => Array.isArray(x) || x instanceof RegExp || (x as { _bsontype?: string })?._bsontype === 'BSONRegExp'))
    return undefined;
  const sorted = [...values].sort(compare);
  return sorted.filter((x, i) => i === 0 || compare(sorted[i - 1], x) !== 0);
}

/**
 * min/max values in the hinted index's key order; mongod requires the same fields in order, and,
 * when the index's collation is not the query's, no value a collation compares
 * (query_planner.cpp, indexCompatibleMaxMin).
 */
function boundTuple(index: Index, bound: Record<string, unknown> | undefined, collation: Collation | undefined): unknown[] | undefined {
  if (!bound) return undefined;
  const names = Object.keys(bound);
  const incompatible = () => new ServerError(51174, 'The index chosen is not compatible with min/max');
  if (names.length !== index.fields.length || names.some((n, i) => n !== index.fields[i].path)) throw incompatible();
  const values = names.map((n) => bound[n]);
  if (Collation.of(index.spec.collation) !== collation && values.some(isCollatable)) throw incompatible();
  return values;
}

function* decoded(collection: Collection): Iterable<[DocEntry, Record<string, unknown>]> {
  for (const entry of collection.byRid.values()) yield [entry, BSON.deserialize(entry.raw, promoted)];
}

/**
 * Plans and starts a query; returns a pull function yielding the matching documents (after sort
 * and skip). A missing collection yields nothing.
 */
export function matchDocuments(collection: Collection | undefined, spec: MatchSpec): () => Match | undefined {
  if (!collection) return () => undefined;
  const filter = spec.filter && Object.keys(spec.filter).length > 0 ? spec.filter : undefined;
  const sortSpec = spec.sort && Object.keys(spec.sort).length > 0 ? spec.sort : undefined;
  // An empty hint is no hint, as in mongod.
  const hintGiven =
    spec.hint !== undefined && !(typeof spec.hint === 'object' && spec.hint !== null && Object.keys(spec.hint).length === 0);
  const hinted = hintGiven ? resolveHint(collection, spec.hint!) : undefined;
  if ((spec.min || spec.max) && !hinted) {
    throw new ServerError(51173, 'When using min()/max() a hint of which index to use must be provided');
  }
  if ((spec.min || spec.max) && hinted && 'natural' in hinted) {
    throw new ServerError(51174, 'The index chosen is not compatible with min/max');
  }

  // The _id index (and its lookups) serves the query only under the collection's own collation.
  const idOrderIsQueryOrder = spec.collation === Collation.of(collection.options.collation);
  const compare = comparatorOf(spec.collation);

  // The scan: natural order unless a sort or hint says otherwise.
  let scan: ScanOptions = { order: 'natural', direction: 1 };
  let indexScan: Index | undefined;
  let sortFields = sortSpec ? parseSort(sortSpec) : [];
  const naturalSort = sortSpec && Object.keys(sortSpec).length === 1 && '$natural' in sortSpec;
  if (hinted && 'natural' in hinted) {
    scan = { order: 'natural', direction: hinted.natural };
  } else if (hinted && hinted.name === '_id_') {
    const min = boundTuple(hinted, spec.min, spec.collation);
    const max = boundTuple(hinted, spec.max, spec.collation);
    scan = { order: 'id', direction: 1, min: min?.[0], max: max?.[0] };
  } else if (hinted) {
    indexScan = hinted as Index;
  }
  if (naturalSort) {
    const direction = Number(sortSpec!.$natural) < 0 ? -1 : 1;
    if (!hinted || 'natural' in hinted) scan = { order: 'natural', direction };
    sortFields = [];
  } else if (
    sortFields.length === 1 &&
    sortFields[0].path === '_id' &&
    !indexScan &&
    !(hinted && 'natural' in hinted) &&
    idOrderIsQueryOrder
  ) {
    scan = { ...scan, order: 'id', direction: sortFields[0].direction };
    sortFields = [];
  }

  // Candidate entries: a point lookup for `{_id: v}`, the hinted index's order, or the scan.
  let next: () => Match | undefined;
  const point = !hinted && idOrderIsQueryOrder ? idEquality(filter) : undefined;
  const points = !hinted && !point && !naturalSort && idOrderIsQueryOrder ? idSet(filter, collection.compareIds) : undefined;
  if (point) {
    let entry = collection.get(point.value);
    next = () => {
      const e = entry;
      entry = undefined;
      return e && { entry: e, doc: undefined };
    };
  } else if (points) {
    // A sort on _id descending was folded into the scan order: walk the points backwards then.
    if (scan.order === 'id' && scan.direction < 0) points.reverse();
    let i = 0;
    next = () => {
      while (i < points.length) {
        const entry = collection.get(points[i++]);
        if (entry) return { entry, doc: undefined };
      }
      return undefined;
    };
  } else if (indexScan) {
    const ordered = indexScan.scan(decoded(collection), {
      min: boundTuple(indexScan, spec.min, spec.collation),
      max: boundTuple(indexScan, spec.max, spec.collation),
    });
    let i = 0;
    next = () => ordered[i++];
  } else {
    const entries = scanCollection(collection, scan);
    next = () => {
      const entry = entries();
      return entry && { entry, doc: undefined };
    };
  }

  // A filter on `_id` alone that the `_id` index answers point by point leaves nothing to test (mongod's
  // exact index bounds): compiling it cost more than the lookup (an upsert by `_id`: ~0.5 ms).
  const answeredByIndex = (point !== undefined || points !== undefined) && Object.keys(filter!).length === 1;
  const query =
    filter && !answeredByIndex ? compileFilter(filter, spec.collation, { variables: spec.variables, scriptEnabled: false }) : undefined;
  const matches = (m: Match): boolean => {
    if (!query) return true;
    m.doc ??= BSON.deserialize(m.entry.raw, promoted);
    return query.test(m.doc);
  };

  let skip = spec.skip ?? 0;
  if (sortFields.length > 0) {
    // Blocking sort: collect every match, then order (stable: ties keep scan order).
    const all: Match[] = [];
    for (let m = next(); m; m = next()) if (matches(m)) all.push(m);
    const sorted = sortByKeys(all, (m) => (m.doc ??= BSON.deserialize(m.entry.raw, promoted)), sortFields, compare);
    let i = Math.min(skip, sorted.length);
    return () => sorted[i++];
  }
  return () => {
    for (let m = next(); m; m = next()) {
      if (!matches(m)) continue;
      if (skip > 0) {
        skip--;
        continue;
      }
      return m;
    }
    return undefined;
  };
}

/** A `find`: matching documents, projected (as raw BSON) when asked, else as stored (copied into the reply from where they are). */
export function findDocuments(collection: Collection | undefined, spec: FindSpec): () => BatchDocument | undefined {
  const projection = parseProjection(spec.projection, spec.filter);
  const pull = matchDocuments(collection, spec);
  return () => {
    const m = pull();
    if (!m) return undefined;
    return projection ? projection.apply(m.entry.raw, m.doc) : m.entry;
  };
}
