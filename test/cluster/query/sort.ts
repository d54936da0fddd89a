/**
 * Sorting documents as mongod does: canonical BSON order field by field; for an array field the
 * ascending key is its smallest element and the descending key its largest; a missing field
 * sorts as null and an empty array below null.
 */
import { ServerError } from '../errors.js';
import { compareValues } from '../bson-order.js';

export interface SortField {
  path: string;
  /** 1 ascending, -1 descending. */
  direction: 1 | -1;
}

/** Parses a sort specification; `{$natural: ±1}` is the caller's business and is excluded. */
export function parseSort(spec: Record<string, unknown>): SortField[] {
  const fields: SortField[] = [];
  for (const [path, value] of Object.entries(spec)) {
    if (value !== null && typeof value === 'object' && !Array.isArray(value) && '$meta' in value) {
      continue; // {$meta: ...} keys (text score, random) impose no order here
    }
    const n = typeof value === 'number' ? value : Number.NaN;
    if (n !== 1 && n !== -1) {
      throw new ServerError(15975, '$sort key ordering must be 1 (for ascending) or -1 (for descending)');
    }
    if (path.length === 0) throw new ServerError(40352, 'FieldPath cannot be constructed with empty string');
    fields.push({ path, direction: n });
  }
  return fields;
}

const EMPTY_ARRAY = Symbol('empty array');

/** Every value a (promoted) document has at a dotted path, arrays along the way and at the end expanded. */
function sortValues(value: unknown, parts: string[], at: number, out: unknown[]): void {
  if (at === parts.length) {
    if (Array.isArray(value)) {
      if (value.length === 0) out.push(EMPTY_ARRAY);
      for (const v of value) out.push(v);
    } else out.push(value === undefined ? null : value);
    return;
  }
  if (Array.isArray(value)) {
    for (const element of value) {
      if (element !== null && typeof element === 'object' && !Array.isArray(element)) sortValues(element, parts, at, out);
    }
    const index = Number(parts[at]);
    if (Number.isInteger(index) && index >= 0 && index < value.length) sortValues(value[index], parts, at + 1, out);
    return;
  }
  if (value === null || typeof value !== 'object' || (value as { _bsontype?: string })._bsontype !== undefined || value instanceof Date) {
    out.push(null);
    return;
  }
  sortValues((value as Record<string, unknown>)[parts[at]], parts, at + 1, out);
}

/** Value comparison (the simple order, or a collation's). */
type Compare = (a: unknown, b: unknown) => number;

function compareKeys(a: unknown, b: unknown, compare: Compare): number {
  if (a === EMPTY_ARRAY || b === EMPTY_ARRAY) return a === b ? 0 : a === EMPTY_ARRAY ? -1 : 1;
  return compare(a, b);
}

/** The key a document sorts by on one field (smallest value ascending, largest descending). */
export function sortKey(doc: Record<string, unknown>, field: SortField, compare: Compare = compareValues): unknown {
  const values: unknown[] = [];
  sortValues(doc, field.path.split('.'), 0, values);
  if (values.length === 0) return null;
  let best = values[0];
  for (let i = 1; i < values.length; i++) {
    if (compareKeys(values[i], best, compare) * field.direction < 0) best = values[i];
  }
  return best;
}

/** A comparator over promoted documents for a parsed sort. */
export function documentComparator(
  fields: SortField[],
  compare: Compare = compareValues,
): (a: Record<string, unknown>, b: Record<string, unknown>) => number {
  return (a, b) => {
    for (const field of fields) {
      const c = compareKeys(sortKey(a, field, compare), sortKey(b, field, compare), compare);
      if (c !== 0) return c * field.direction;
    }
    return 0;
  };
}

/** Sorts items by precomputed keys (documents decoded once, keys extracted once). */
export function sortByKeys<T>(
  items: T[],
  docOf: (item: T) => Record<string, unknown>,
  fields: SortField[],
  compare: Compare = compareValues,
): T[] {
  const keyed = items.map((item, i) => ({ item, i, keys: fields.map((f) => sortKey(docOf(item), f, compare)) }));
  keyed.sort((x, y) => {
    for (let k = 0; k < fields.length; k++) {
      const c = compareKeys(x.keys[k], y.keys[k], compare);
      if (c !== 0) return c * fields[k].direction;
    }
    return x.i - y.i;
  });
  return keyed.map((k) => k.item);
}
