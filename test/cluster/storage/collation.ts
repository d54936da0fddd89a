/**
 * Collation specifications as mongod stores and reports them: a user's `{locale: 'fr'}` becomes
 * the full ICU specification with every attribute filled in (`listCollections`, `listIndexes`
 * and duplicate-key messages show that form). `{locale: 'simple'}` means "no collation".
 * Only the specification is kept; comparisons still use the simple (binary) order (see README).
 */
import { ServerError } from '../errors.js';

/** The ICU version mongod 7.0/8.0 reports in a collation's `version` field. */
export const ICU_COLLATION_VERSION = '57.1';

const FIELDS = new Set([
  'locale',
  'caseLevel',
  'caseFirst',
  'strength',
  'numericOrdering',
  'alternate',
  'maxVariable',
  'normalization',
  'backwards',
  'version',
]);

/** Locales whose ICU tailoring turns on French secondary ordering by default. */
const BACKWARDS_LOCALES = new Set(['fr_CA']);

function describe(spec: Record<string, unknown>): string {
  const parts = Object.entries(spec).map(([k, v]) => `${k}: ${typeof v === 'string' ? JSON.stringify(v) : String(v)}`);
  return `{ ${parts.join(', ')} }`;
}

function invalid(field: string, spec: Record<string, unknown>): ServerError {
  return new ServerError('BadValue', `Field '${field}' is invalid in: ${describe(spec)}`);
}

/** ICU's defaults for a locale, read from the platform's own ICU through Intl. */
function localeDefaults(locale: string): { caseFirst: string; alternate: string } {
  const tag = locale.replace(/@collation=/, '-u-co-').replace(/_/g, '-');
  const resolved = new Intl.Collator(tag).resolvedOptions();
  return {
    caseFirst: resolved.caseFirst === 'upper' || resolved.caseFirst === 'lower' ? resolved.caseFirst : 'off',
    alternate: resolved.ignorePunctuation ? 'shifted' : 'non-ignorable',
  };
}

function isSupportedLocale(locale: string): boolean {
  // ICU ids use underscores (en_US); a hyphenated tag is not one mongod accepts.
  if (locale.includes('-') || locale.length === 0) return false;
  const tag = locale.replace(/@collation=/, '-u-co-').replace(/_/g, '-');
  try {
    return Intl.Collator.supportedLocalesOf([tag]).length > 0;
  } catch {
    return false;
  }
}

/**
 * Validates a collation specification and returns mongod's full form, or undefined for the
 * simple collation. Errors are mongod's: BadValue for bad values, TypeMismatch for bad types,
 * IDL errors for unknown or missing fields.
 */
export function normalizeCollation(spec: unknown, context = 'collation'): Record<string, unknown> | undefined {
  if (typeof spec !== 'object' || spec === null || Array.isArray(spec)) {
    throw new ServerError('TypeMismatch', `BSON field '${context}' is the wrong type, expected type 'object'`);
  }
  const given = spec as Record<string, unknown>;
  for (const key of Object.keys(given)) {
    if (!FIELDS.has(key)) throw new ServerError('IDLUnknownField', `BSON field '${context}.${key}' is an unknown field.`);
  }
  const locale = given.locale;
  if (locale === undefined) throw new ServerError('IDLFailedToParse', `BSON field '${context}.locale' is missing but a required field`);
  if (typeof locale !== 'string')
    throw new ServerError('TypeMismatch', `BSON field '${context}.locale' is the wrong type '${typeof locale}', expected type 'string'`);
  if (locale === 'simple') {
    if (Object.keys(given).some((k) => k !== 'locale')) {
      throw new ServerError('BadValue', `If locale is 'simple', the only permitted field is locale: ${describe(given)}`);
    }
    return undefined;
  }
  if (!isSupportedLocale(locale)) throw invalid('locale', given);
  const defaults = localeDefaults(locale);
  const bool = (field: string, fallback: boolean): boolean => {
    const v = given[field];
    if (v === undefined) return fallback;
    if (typeof v !== 'boolean')
      throw new ServerError('TypeMismatch', `BSON field '${context}.${field}' is the wrong type, expected type 'bool'`);
    return v;
  };
  const choice = (field: string, allowed: string[], fallback: string): string => {
    const v = given[field];
    if (v === undefined) return fallback;
    if (typeof v !== 'string' || !allowed.includes(v)) throw invalid(field, given);
    return v;
  };
  const strengthValue = given.strength ?? 3;
  if (typeof strengthValue !== 'number' || !Number.isInteger(strengthValue) || strengthValue < 1 || strengthValue > 5) {
    throw invalid('strength', given);
  }
  if (given.version !== undefined && given.version !== ICU_COLLATION_VERSION) throw invalid('version', given);
  return {
    locale,
    caseLevel: bool('caseLevel', false),
    caseFirst: choice('caseFirst', ['upper', 'lower', 'off'], defaults.caseFirst),
    strength: strengthValue,
    numericOrdering: bool('numericOrdering', false),
    alternate: choice('alternate', ['non-ignorable', 'shifted'], defaults.alternate),
    maxVariable: choice('maxVariable', ['punct', 'space'], 'punct'),
    normalization: bool('normalization', false),
    backwards: bool('backwards', BACKWARDS_LOCALES.has(locale)),
    version: ICU_COLLATION_VERSION,
  };
}
