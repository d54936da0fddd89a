/**
 * The array position a query matched, for the positional `$` of updates and projections: mongod
 * records the index of the first element of the first array on a predicate's path that lets the
 * predicate match (the last such predicate of an implicit AND wins). Found here by testing each
 * predicate against the document with that array narrowed to one element at a time.
 */
import { Query } from '../mingo.js';

type Predicate = { path: string; condition: unknown };

function predicates(filter: Record<string, unknown>, out: Predicate[]): void {
  for (const [key, value] of Object.entries(filter)) {
    if (key === '$and' && Array.isArray(value)) {
      for (const clause of value) if (clause && typeof clause === 'object') predicates(clause as Record<string, unknown>, out);
    } else if (!key.startsWith('$')) {
      out.push({ path: key, condition: value });
    }
  }
}

/** The first array on `path` in `doc`: the parts leading to it and the array. */
function firstArray(doc: Record<string, unknown>, parts: string[]): { prefix: string[]; array: unknown[] } | undefined {
  let current: unknown = doc;
  for (let i = 0; i < parts.length; i++) {
    if (current === null || typeof current !== 'object' || Array.isArray(current)) return undefined;
    current = (current as Record<string, unknown>)[parts[i]];
    if (Array.isArray(current)) return { prefix: parts.slice(0, i + 1), array: current };
  }
  return undefined;
}

/** A shallow copy of `doc` with the array at `prefix` replaced by `[element]`. */
function narrowed(doc: Record<string, unknown>, prefix: string[], element: unknown): Record<string, unknown> {
  const root: Record<string, unknown> = { ...doc };
  let node = root;
  for (let i = 0; i < prefix.length - 1; i++) {
    const child = { ...(node[prefix[i]] as Record<string, unknown>) };
    node[prefix[i]] = child;
    node = child;
  }
  node[prefix[prefix.length - 1]] = [element];
  return root;
}

/**
 * The matched array index for `$` at `arrayPath` (dotted) given the query and the document
 * (promoted values), or undefined when the query matched no array element.
 */
export function matchedArrayIndex(
  filter: Record<string, unknown> | undefined,
  doc: Record<string, unknown>,
  arrayPath: string,
): number | undefined {
  if (!filter) return undefined;
  const all: Predicate[] = [];
  predicates(filter, all);
  let fallback: number | undefined;
  for (const { path, condition } of all) {
    const found = firstArray(doc, path.split('.'));
    if (!found) continue;
    const query = new Query({ [path]: condition });
    const index = found.array.findIndex((element) => query.test(narrowed(doc, found.prefix, element)));
    if (index < 0) continue;
    if (found.prefix.join('.') === arrayPath) return index;
    fallback = index;
  }
  return fallback;
}
