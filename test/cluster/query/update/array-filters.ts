/**
 * `arrayFilters` of an update: one filter per identifier, each deciding which array elements a
 * `$[<identifier>]` path component selects. Parsed and checked as mongod does.
 */
import { Query } from '../../mingo.js';
import { ServerError } from '../../errors.js';
import { type Slot, promotedOf } from './tree.js';

const IDENTIFIER = /^[a-z][a-zA-Z0-9]*$/;

/** Top-level field names of a filter, looking through $and/$or/$nor. */
function topLevelNames(filter: Record<string, unknown>, out: string[]): void {
  for (const [key, value] of Object.entries(filter)) {
    if ((key === '$and' || key === '$or' || key === '$nor') && Array.isArray(value)) {
      for (const sub of value) if (sub && typeof sub === 'object') topLevelNames(sub as Record<string, unknown>, out);
    } else if (!key.startsWith('$')) {
      out.push(key.split('.')[0]);
    }
  }
}

export class ArrayFilters {
  private readonly filters = new Map<string, Query>();

  /** Parses the (promoted) `arrayFilters` argument; undefined means none. */
  constructor(specs: unknown[] | undefined) {
    for (const spec of specs ?? []) {
      if (spec === null || typeof spec !== 'object' || Array.isArray(spec)) {
        throw new ServerError('TypeMismatch', 'Each array filter must be an object');
      }
      const names: string[] = [];
      topLevelNames(spec as Record<string, unknown>, names);
      if (names.length === 0) {
        throw new ServerError('FailedToParse', 'Cannot use an expression without a top-level field name in arrayFilters');
      }
      const id = names[0];
      const other = names.find((n) => n !== id);
      if (other !== undefined) {
        throw new ServerError(
          'FailedToParse',
          `Error parsing array filter :: caused by :: Expected a single top-level field name, found '${id}' and '${other}'`,
        );
      }
      if (!IDENTIFIER.test(id)) {
        throw new ServerError(
          'BadValue',
          `Error parsing array filter :: caused by :: The top-level field name must be an alphanumeric string beginning with a lowercase letter, found '${id}'`,
        );
      }
      if (this.filters.has(id)) {
        throw new ServerError('FailedToParse', `Found multiple array filters with the same top-level field name ${id}`);
      }
      this.filters.set(id, new Query(spec as Record<string, unknown>));
    }
  }

  has(id: string): boolean {
    return this.filters.has(id);
  }

  identifiers(): string[] {
    return [...this.filters.keys()];
  }

  /** Whether the filter for `id` selects an array element. */
  matches(id: string, element: Slot): boolean {
    return this.filters.get(id)!.test({ [id]: promotedOf(element) });
  }
}
