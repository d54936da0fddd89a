/**
 * A collation in force: the string comparison of a full specification and the BSON comparison
 * built on it (strings, and strings inside documents and arrays, compare by the collation; every
 * other type, and field names, as in the simple collation: mongod's CollationIndexKey rules).
 * Collations are cached by specification, so comparing two of them is comparing identities.
 * The simple collation is `undefined` everywhere: its code paths stay the binary ones.
 */
import { compareArrays, compareObjects, compareValues, typeRank } from '../bson-order.js';
import { normalizeCollation } from '../storage/collation.js';
import { type CollationSpec, type StringComparison, stringComparison } from './collator.js';

/** mongod's canonical rank of strings (and symbols), objects and arrays. */
const STRING = 15;
const OBJECT = 20;
const ARRAY = 25;

function stringOf(v: unknown): string {
  return typeof v === 'string' ? v : (v as { value: string }).value;
}

export class Collation {
  private static readonly cache = new Map<string, Collation>();

  /** Compares two decoded BSON values under this collation, in mongod's canonical order. */
  readonly compare: (a: unknown, b: unknown) => number;

  private constructor(
    /** The full specification, as listed. */
    readonly spec: Record<string, unknown>,
    readonly compareStrings: StringComparison,
  ) {
    const compare = (a: unknown, b: unknown): number => {
      if (typeof a === 'string' && typeof b === 'string') return compareStrings(a, b);
      const ra = typeRank(a);
      const rb = typeRank(b);
      if (ra !== rb) return ra < rb ? -1 : 1;
      if (ra === STRING) return compareStrings(stringOf(a), stringOf(b));
      if (ra === OBJECT) return compareObjects(a as object, b as object, compare);
      if (ra === ARRAY) return compareArrays(a as unknown[], b as unknown[], compare);
      return compareValues(a, b);
    };
    this.compare = compare;
  }

  /** The collation of a full specification (as stored on a collection or index); undefined for none. */
  static of(spec: Record<string, unknown> | undefined): Collation | undefined {
    if (spec === undefined) return undefined;
    const key = JSON.stringify(spec);
    let collation = Collation.cache.get(key);
    if (!collation) {
      collation = new Collation(spec, stringComparison(spec as unknown as CollationSpec));
      Collation.cache.set(key, collation);
    }
    return collation;
  }

  /**
   * The collation an operation runs under: the one it asks for (checked, `{locale: 'simple'}` being
   * none), else the collection's (or view's) default.
   */
  static effective(requested: unknown, defaultSpec: Record<string, unknown> | undefined): Collation | undefined {
    if (requested === undefined || requested === null) return Collation.of(defaultSpec);
    return Collation.of(normalizeCollation(requested));
  }
}

/** The comparison of BSON values under a collation (undefined: the simple, binary one). */
export function comparatorOf(collation: Collation | undefined): (a: unknown, b: unknown) => number {
  return collation ? collation.compare : compareValues;
}

/** Whether a value's comparison depends on the collation (mongod's CollationIndexKey::isCollatableType). */
export function isCollatable(value: unknown): boolean {
  const rank = typeRank(value);
  return rank === STRING || rank === OBJECT || rank === ARRAY;
}
