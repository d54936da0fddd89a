/**
 * Document validation: a collection's `validator` (query operators, evaluated with mingo, and
 * `$jsonSchema`, see json-schema.ts), `validationLevel` (strict | moderate | off) and
 * `validationAction` (error | warn). A failing write gets DocumentValidationFailure (121) with
 * mongod's `errInfo: {failingDocumentId, details: {operatorName, ...}}` explanation.
 * Installed as `instance.validateForWrite`; writers pass the document before the change for
 * updates, so that `moderate` can skip documents that were already invalid.
 */
import { BSON } from 'bson';
import { Query } from './mingo.js';
import { ServerError } from './errors.js';
import type { Instance } from './instance.js';
import type { Collection } from './storage/collection.js';
import { bsonTypeOf, checkSchema, evaluateSchema } from './json-schema.js';
import { promoted, typed } from './raw.js';
import { valuesAtPath } from './storage/keys.js';

type Filter = Record<string, unknown>;

/** Top-level operators a validator may use (mongod refuses $where, $near and $text there). */
const TOP_LEVEL = new Set(['$and', '$or', '$nor', '$expr', '$jsonSchema', '$comment', '$alwaysTrue', '$alwaysFalse']);
const FORBIDDEN = new Map([
  ['$where', '$where is not allowed in collection validators'],
  ['$text', '$text is not allowed in collection validators'],
  ['$near', '$near is not allowed in collection validators'],
  ['$nearSphere', '$nearSphere is not allowed in collection validators'],
  ['$geoNear', '$geoNear is not allowed in collection validators'],
]);

const jsonSchemaValidator = (schema: Record<string, unknown>) => (doc: Record<string, unknown>) => evaluateSchema(schema, doc).length === 0;

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v) && !(v instanceof Date) && !(v instanceof RegExp) && !('_bsontype' in v);
}

function walk(filter: Filter, topLevel: boolean): void {
  for (const [key, value] of Object.entries(filter)) {
    const forbidden = FORBIDDEN.get(key);
    if (forbidden) throw new ServerError('QueryFeatureNotAllowed', forbidden);
    if (key.startsWith('$')) {
      if (topLevel && !TOP_LEVEL.has(key))
        throw new ServerError(
          'BadValue',
          `unknown top level operator: ${key}. If you have a field name that starts with a '$' symbol, consider using $getField or $setField.`,
        );
      if (key === '$jsonSchema') checkSchema(value);
      if (key === '$and' || key === '$or' || key === '$nor') {
        if (!Array.isArray(value) || value.length === 0) throw new ServerError('BadValue', `${key} argument must be a non-empty array`);
        for (const clause of value) {
          if (!isPlainObject(clause)) throw new ServerError('BadValue', `${key} argument's entries must be objects`);
          walk(clause, true);
        }
      }
      continue;
    }
    if (isPlainObject(value)) {
      for (const op of Object.keys(value)) {
        const nested = FORBIDDEN.get(op);
        if (nested) throw new ServerError('QueryFeatureNotAllowed', nested);
      }
    }
  }
}

/** Compiles a validator with mongod's restrictions; throws mongod's parse errors. */
export function checkValidator(validator: Filter): Query {
  walk(validator, true);
  try {
    return new Query(validator, { jsonSchemaValidator });
  } catch (e) {
    throw new ServerError('BadValue', (e as Error).message);
  }
}

const compiled = new WeakMap<Filter, Query>();

function queryFor(validator: Filter): Query {
  let query = compiled.get(validator);
  if (!query) {
    query = checkValidator(validator);
    compiled.set(validator, query);
  }
  return query;
}

/** The value a path names in a typed document, for `consideredValue`. */
function considered(doc: Record<string, unknown>, path: string): { present: boolean; value?: unknown } {
  const values = valuesAtPath(doc, path);
  if (values.length === 1 && values[0] === undefined) return { present: false };
  return { present: true, value: values.length === 1 ? values[0] : values };
}

const REASONS: Record<string, string> = {
  $eq: 'comparison failed',
  $ne: 'comparison succeeded',
  $gt: 'comparison failed',
  $gte: 'comparison failed',
  $lt: 'comparison failed',
  $lte: 'comparison failed',
  $in: 'no matching value found in array',
  $nin: 'matching value found in array',
  $regex: 'regular expression did not match',
  $type: 'type did not match',
  $size: 'array length was not equal to given size',
  $all: 'array did not contain all specified values',
  $mod: 'considered value is not a multiple of the specified value',
};

/** mongod's explanation of why one field clause `{path: condition}` failed. */
function explainField(
  path: string,
  condition: unknown,
  doc: Record<string, unknown>,
  promotedDoc: Record<string, unknown>,
): Record<string, unknown> {
  const operators =
    isPlainObject(condition) && Object.keys(condition).some((k) => k.startsWith('$'))
      ? Object.entries(condition)
      : [['$eq', condition] as [string, unknown]];
  const explainOne = (op: string, operand: unknown): Record<string, unknown> => {
    const specifiedAs = { [path]: op === '$eq' && operators.length === 1 && !isPlainObject(condition) ? operand : { [op]: operand } };
    const found = considered(doc, path);
    if (op === '$exists') {
      return { operatorName: '$exists', specifiedAs, reason: operand ? 'path does not exist' : 'path does exist' };
    }
    if (!found.present && op !== '$ne' && op !== '$nin') return { operatorName: op, specifiedAs, reason: 'field was missing' };
    const detail: Record<string, unknown> = {
      operatorName: op,
      specifiedAs,
      reason: REASONS[op] ?? 'expression did not match',
      consideredValue: found.value,
    };
    if (op === '$type') detail.consideredType = bsonTypeOf(found.value);
    return detail;
  };
  if (operators.length === 1) return explainOne(operators[0][0], operators[0][1]);
  const failing = operators
    .map(([op, operand], index) => ({ index, op, operand }))
    .filter(({ op, operand }) => !new Query({ [path]: { [op]: operand } }, { jsonSchemaValidator }).test(promotedDoc));
  return {
    operatorName: '$and',
    clausesNotSatisfied: failing.map(({ index, op, operand }) => ({ index, details: explainOne(op, operand) })),
  };
}

/** mongod's `errInfo.details` for a document that fails `validator`. */
export function explainFailure(
  validator: Filter,
  typedDoc: Record<string, unknown>,
  promotedDoc: Record<string, unknown>,
): Record<string, unknown> {
  const clauses = Object.entries(validator).filter(([key]) => key !== '$comment');
  const passes = (clause: Filter) => new Query(clause, { jsonSchemaValidator }).test(promotedDoc);
  const explainClause = ([key, value]: [string, unknown]): Record<string, unknown> => {
    switch (key) {
      case '$jsonSchema':
        return { operatorName: '$jsonSchema', schemaRulesNotSatisfied: evaluateSchema(value as Filter, typedDoc) };
      case '$expr':
        return { operatorName: '$expr', specifiedAs: { $expr: value }, reason: 'expression did not match', expressionResult: false };
      case '$and':
      case '$or':
      case '$nor': {
        const subs = value as Filter[];
        const failing = subs
          .map((clause, index) => ({ clause, index }))
          .filter(({ clause }) => (key === '$nor' ? passes(clause) : !passes(clause)));
        return {
          operatorName: key,
          clausesNotSatisfied: failing.map(({ clause, index }) => ({
            index,
            details: key === '$nor' ? { operatorName: '$nor', reason: 'child expression matched' } : explainFilter(clause),
          })),
        };
      }
      case '$alwaysFalse':
        return { operatorName: '$alwaysFalse', specifiedAs: { $alwaysFalse: value }, reason: 'expression always evaluates to false' };
      default:
        return explainField(key, value, typedDoc, promotedDoc);
    }
  };
  const explainFilter = (filter: Filter): Record<string, unknown> => {
    const entries = Object.entries(filter).filter(([key]) => key !== '$comment');
    if (entries.length === 1) return explainClause(entries[0]);
    return {
      operatorName: '$and',
      clausesNotSatisfied: entries
        .map((entry, index) => ({ entry, index }))
        .filter(({ entry }) => !passes({ [entry[0]]: entry[1] }))
        .map(({ entry, index }) => ({ index, details: explainClause(entry) })),
    };
  };
  if (clauses.length === 1) return explainClause(clauses[0]);
  return explainFilter(validator);
}

/**
 * Whether a document satisfies a collection's validator. `$jsonSchema` at the top level is
 * evaluated on the typed document (bsonType int ≠ double); everything else with mingo.
 */
function satisfies(
  validator: Filter,
  raw: Buffer,
): { ok: true } | { ok: false; typedDoc: Record<string, unknown>; promotedDoc: Record<string, unknown> } {
  const promotedDoc = BSON.deserialize(raw, promoted);
  const typedDoc = BSON.deserialize(raw, typed);
  const schema = validator.$jsonSchema as Filter | undefined;
  let ok = schema === undefined || evaluateSchema(schema, typedDoc).length === 0;
  if (ok) {
    const rest = schema === undefined ? validator : Object.fromEntries(Object.entries(validator).filter(([k]) => k !== '$jsonSchema'));
    ok = Object.keys(rest).length === 0 || queryFor(rest).test(promotedDoc);
  }
  return ok ? { ok } : { ok, typedDoc, promotedDoc };
}

/**
 * Checks a document about to be stored in `collection`: `previous` is the document it replaces
 * (updates), so that `validationLevel: 'moderate'` leaves already-invalid documents alone.
 */
export function validateDocument(collection: Collection, raw: Buffer, bypass: boolean, previous?: Buffer): void {
  const validator = collection.options.validator;
  if (!validator || bypass || Object.keys(validator).length === 0) return;
  const level = collection.options.validationLevel ?? 'strict';
  if (level === 'off') return;
  if (level === 'moderate' && previous && !satisfies(validator, previous).ok) return;
  const result = satisfies(validator, raw);
  if (result.ok) return;
  if ((collection.options.validationAction ?? 'error') === 'warn') return; // mongod logs and accepts
  throw new ServerError('DocumentValidationFailure', 'Document failed validation', {
    errInfo: { failingDocumentId: result.typedDoc._id, details: explainFailure(validator, result.typedDoc, result.promotedDoc) },
  });
}

/** Installs document validation on a node. */
export function installValidation(instance: Instance): void {
  instance.validateForWrite = validateDocument;
}
