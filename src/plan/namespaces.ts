/**
 * Which namespaces a sync selects: `includeNamespaces` / `excludeNamespaces` of the start request
 * (mongosync's filtered sync), minus what is never synced.
 *
 * Rules (spec §4.1 rule 2; reference.md; mongosync's "Filtered Sync" documentation):
 * - Never selected: the databases `admin`, `local`, `config`, Ferry's metadata database, and any
 *   collection named `system.*`.
 * - No include filters: every other namespace is included. With include filters, a namespace is
 *   included when at least one entry matches it; databases not named by any entry are left out.
 * - An entry matches a database by `database` (exact name) and/or `databaseRegex`; when both are
 *   given, both must match. An entry with neither is invalid.
 * - An entry with no `collections` and no `collectionsRegex` matches every collection of its
 *   databases; otherwise a collection matches when it is listed in `collections` or matches
 *   `collectionsRegex`.
 * - Exclusion wins: a namespace matched by any exclude entry is not selected.
 * - Regular expressions behave as in MongoDB's `$regex` (which mongosync uses): unanchored, with
 *   options `i`, `m`, `s`, `x` (extended: whitespace and `#` comments ignored) and `u` (accepted;
 *   JavaScript strings are already Unicode). Patterns are run by JavaScript's engine, so PCRE-only
 *   syntax (possessive quantifiers, `\A`, inline `(?i)`) is rejected as invalid.
 *
 * Validation of the request's shape is the API's; this module only compiles and matches, throwing
 * `InvalidNamespaceFilter` for what it cannot match on.
 */
import { isReservedCollection, isReservedDatabase } from '../domain/namespaces.js';
import type { NamespaceFilter, RegexFilter, StartRequest } from '../domain/start-request.js';
import { InvalidNamespaceFilter } from '../errors/errors.js';

/** Answers which namespaces a sync covers. */
export interface NamespaceSelector {
  /**
   * Whether any collection of `db` could be selected: false for reserved databases, databases no
   * include entry names, and databases an exclude entry removes whole. (True does not promise that
   * some collection is selected, only that the database must be looked at.)
   */
  selectsDatabase(db: string): boolean;
  /** Whether the collection (or view) `db.coll` is synced. */
  selects(db: string, coll: string): boolean;
}

/** Removes whitespace and `#` comments outside character classes (the `x` option of PCRE). */
function stripExtended(pattern: string): string {
  let out = '';
  let inClass = false;
  for (let i = 0; i < pattern.length; i++) {
    const ch = pattern[i]!;
    if (ch === '\\') {
      out += ch + (pattern[i + 1] ?? '');
      i++;
    } else if (inClass) {
      if (ch === ']') inClass = false;
      out += ch;
    } else if (ch === '[') {
      inClass = true;
      out += ch;
    } else if (ch === '#') {
      while (i + 1 < pattern.length && pattern[i + 1] !== '\n') i++;
    } else if (!/\s/.test(ch)) {
      out += ch;
    }
  }
  return out;
}

/** Compiles a filter's regular expression with MongoDB `$regex` option semantics. */
export function compileRegexFilter(regex: RegexFilter, field: string): RegExp {
  if (typeof regex?.pattern !== 'string') {
    throw new InvalidNamespaceFilter(`${field}.pattern must be a string`);
  }
  let flags = '';
  let extended = false;
  for (const option of regex.options ?? '') {
    if (option === 'i' || option === 'm' || option === 's') {
      if (!flags.includes(option)) flags += option;
    } else if (option === 'x') extended = true;
    else if (option !== 'u') {
      throw new InvalidNamespaceFilter(`${field}.options has "${option}"; allowed options are i, m, s, x and u`);
    }
  }
  try {
    return new RegExp(extended ? stripExtended(regex.pattern) : regex.pattern, flags);
  } catch (error) {
    throw new InvalidNamespaceFilter(
      `${field}.pattern ${JSON.stringify(regex.pattern)} is not a valid regular expression: ${(error as Error).message}`,
    );
  }
}

/** A filter entry, compiled once. */
interface CompiledFilter {
  database?: string;
  databaseRegex?: RegExp;
  collections?: ReadonlySet<string>;
  collectionsRegex?: RegExp;
  /** True when the entry names no collections: it covers its databases whole. */
  wholeDatabase: boolean;
}

function compileFilter(entry: NamespaceFilter, field: string): CompiledFilter {
  if (entry.database === undefined && entry.databaseRegex === undefined) {
    throw new InvalidNamespaceFilter(`${field} needs "database" or "databaseRegex"`);
  }
  // mongosync takes one or the other; both would silently select their intersection.
  if (entry.database !== undefined && entry.databaseRegex !== undefined) {
    throw new InvalidNamespaceFilter(`${field} takes "database" or "databaseRegex", not both`);
  }
  return {
    database: entry.database,
    databaseRegex: entry.databaseRegex && compileRegexFilter(entry.databaseRegex, `${field}.databaseRegex`),
    collections: entry.collections && new Set(entry.collections),
    collectionsRegex: entry.collectionsRegex && compileRegexFilter(entry.collectionsRegex, `${field}.collectionsRegex`),
    wholeDatabase: entry.collections === undefined && entry.collectionsRegex === undefined,
  };
}

function matchesDatabase(filter: CompiledFilter, db: string): boolean {
  return (filter.database === undefined || filter.database === db) && (filter.databaseRegex === undefined || filter.databaseRegex.test(db));
}

function matchesCollection(filter: CompiledFilter, coll: string): boolean {
  return filter.wholeDatabase || filter.collections?.has(coll) === true || filter.collectionsRegex?.test(coll) === true;
}

/**
 * Builds the selector for a start request's filters. `include` absent (or empty) selects
 * everything that is not reserved. Throws `InvalidNamespaceFilter` for an entry without a
 * database or with a regular expression that does not compile.
 */
export function createNamespaceSelector(include?: readonly NamespaceFilter[], exclude?: readonly NamespaceFilter[]): NamespaceSelector {
  const included = (include ?? []).map((entry, i) => compileFilter(entry, `includeNamespaces[${i}]`));
  const excluded = (exclude ?? []).map((entry, i) => compileFilter(entry, `excludeNamespaces[${i}]`));
  const includesAll = included.length === 0;

  return {
    selectsDatabase(db) {
      if (isReservedDatabase(db)) return false;
      if (!includesAll && !included.some((f) => matchesDatabase(f, db))) return false;
      return !excluded.some((f) => f.wholeDatabase && matchesDatabase(f, db));
    },
    selects(db, coll) {
      if (isReservedDatabase(db) || isReservedCollection(coll)) return false;
      const matches = (f: CompiledFilter) => matchesDatabase(f, db) && matchesCollection(f, coll);
      if (!includesAll && !included.some(matches)) return false;
      return !excluded.some(matches);
    },
  };
}

/** The selector of a start request's filters. */
export function selectorFor(request: Pick<StartRequest, 'includeNamespaces' | 'excludeNamespaces'>): NamespaceSelector {
  return createNamespaceSelector(request.includeNamespaces, request.excludeNamespaces);
}
