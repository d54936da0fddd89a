/**
 * mongod's `$jsonSchema` query operator: JSON Schema draft 4 with MongoDB's `bsonType` keyword
 * and its restrictions (no `$ref`, `$schema`, `default`, `definitions`, `format`, `id`; no
 * `type: 'integer'`). Documents are evaluated decoded *typed* (`promoteValues: false`), so
 * `bsonType: 'int'` and `'double'` are told apart as mongod does.
 *
 * Written here rather than with a JSON-schema library: libraries such as Ajv implement draft 6+
 * (where `exclusiveMinimum` is a number), have no notion of BSON types, and cannot produce the
 * `schemaRulesNotSatisfied` explanation mongod puts in a validation error's `errInfo`.
 */
import { ServerError } from './errors.js';
import { compareValues, typeRank } from './bson-order.js';
import { bsonTypeName } from './commands/args.js';

const SUPPORTED = new Set([
  'additionalItems',
  'additionalProperties',
  'allOf',
  'anyOf',
  'bsonType',
  'dependencies',
  'description',
  'enum',
  'exclusiveMaximum',
  'exclusiveMinimum',
  'items',
  'maximum',
  'maxItems',
  'maxLength',
  'maxProperties',
  'minimum',
  'minItems',
  'minLength',
  'minProperties',
  'multipleOf',
  'not',
  'oneOf',
  'pattern',
  'patternProperties',
  'properties',
  'required',
  'title',
  'type',
  'uniqueItems',
  'encrypt',
  'encryptMetadata',
]);
const UNSUPPORTED = new Set(['$ref', '$schema', 'default', 'definitions', 'format', 'id']);

const JSON_TYPES = new Set(['object', 'array', 'number', 'boolean', 'string', 'null']);
const BSON_TYPES = new Set([
  'double',
  'string',
  'object',
  'array',
  'binData',
  'undefined',
  'objectId',
  'bool',
  'date',
  'null',
  'regex',
  'dbPointer',
  'javascript',
  'symbol',
  'javascriptWithScope',
  'int',
  'timestamp',
  'long',
  'decimal',
  'minKey',
  'maxKey',
  'number',
]);

type Schema = Record<string, unknown>;

function parseError(message: string): ServerError {
  return new ServerError('FailedToParse', message);
}

function isDocument(v: unknown): v is Record<string, unknown> {
  return (
    typeof v === 'object' &&
    v !== null &&
    !Array.isArray(v) &&
    !(v instanceof Date) &&
    (!('_bsontype' in v) || (v as { _bsontype: string })._bsontype === 'DBRef')
  );
}

function asNumber(v: unknown): number | undefined {
  if (typeof v === 'number') return v;
  const t = (v as { _bsontype?: string } | null)?._bsontype;
  if (t === 'Int32' || t === 'Double') return (v as { value: number }).value;
  if (t === 'Long') return (v as { toNumber(): number }).toNumber();
  if (t === 'Decimal128') return Number.parseFloat(String(v));
  return undefined;
}

/** Checks a schema the way mongod does when a validator or query is parsed. */
export function checkSchema(schema: unknown, path = '$jsonSchema'): void {
  if (!isDocument(schema)) throw new ServerError('TypeMismatch', `${path} must be an object`);
  for (const [keyword, value] of Object.entries(schema)) {
    if (UNSUPPORTED.has(keyword)) throw parseError(`$jsonSchema keyword '${keyword}' is not currently supported`);
    if (!SUPPORTED.has(keyword)) throw parseError(`Unknown $jsonSchema keyword: ${keyword}`);
    switch (keyword) {
      case 'type':
      case 'bsonType': {
        const names = Array.isArray(value) ? value : [value];
        for (const name of names) {
          if (typeof name !== 'string')
            throw new ServerError('TypeMismatch', `$jsonSchema keyword '${keyword}' must be either a string or an array of strings`);
          if (keyword === 'type' && name === 'integer') throw parseError("$jsonSchema type 'integer' is not currently supported");
          if (!(keyword === 'type' ? JSON_TYPES : BSON_TYPES).has(name))
            throw new ServerError('BadValue', `Unknown type name alias: ${name}`);
        }
        break;
      }
      case 'properties':
      case 'patternProperties':
        if (!isDocument(value)) throw new ServerError('TypeMismatch', `$jsonSchema keyword '${keyword}' must be an object`);
        for (const sub of Object.values(value)) checkSchema(sub, `${path}.${keyword}`);
        break;
      case 'items':
        if (Array.isArray(value)) value.forEach((s) => checkSchema(s, `${path}.items`));
        else checkSchema(value, `${path}.items`);
        break;
      case 'additionalProperties':
      case 'additionalItems':
        if (typeof value !== 'boolean') checkSchema(value, `${path}.${keyword}`);
        break;
      case 'not':
        checkSchema(value, `${path}.not`);
        break;
      case 'allOf':
      case 'anyOf':
      case 'oneOf':
        if (!Array.isArray(value) || value.length === 0)
          throw new ServerError('BadValue', `$jsonSchema keyword '${keyword}' must be a non-empty array`);
        value.forEach((s) => checkSchema(s, `${path}.${keyword}`));
        break;
      case 'required':
        if (!Array.isArray(value) || value.length === 0 || value.some((v) => typeof v !== 'string')) {
          throw new ServerError('BadValue', "$jsonSchema keyword 'required' must be a non-empty array of strings");
        }
        break;
      case 'enum':
        if (!Array.isArray(value) || value.length === 0)
          throw new ServerError('BadValue', "$jsonSchema keyword 'enum' cannot be an empty array");
        break;
      case 'minimum':
      case 'maximum':
      case 'multipleOf':
        if (asNumber(value) === undefined) throw new ServerError('TypeMismatch', `$jsonSchema keyword '${keyword}' must be a number`);
        break;
      case 'pattern':
        if (typeof value !== 'string') throw new ServerError('TypeMismatch', "$jsonSchema keyword 'pattern' must be a string");
        break;
      case 'dependencies':
        if (!isDocument(value)) throw new ServerError('TypeMismatch', "$jsonSchema keyword 'dependencies' must be an object");
        for (const dep of Object.values(value)) if (!Array.isArray(dep)) checkSchema(dep, `${path}.dependencies`);
        break;
    }
  }
  if (
    (schema.exclusiveMinimum !== undefined && schema.minimum === undefined) ||
    (schema.exclusiveMaximum !== undefined && schema.maximum === undefined)
  ) {
    const [bound, exclusive] =
      schema.exclusiveMinimum !== undefined && schema.minimum === undefined
        ? ['minimum', 'exclusiveMinimum']
        : ['maximum', 'exclusiveMaximum'];
    throw parseError(`$jsonSchema keyword '${bound}' must be present if ${exclusive} is present`);
  }
}

/** mongod's name for the BSON type of a typed-decoded value. */
export function bsonTypeOf(v: unknown): string {
  if (v === undefined) return 'undefined';
  if (typeof v === 'number') return Number.isInteger(v) && Math.abs(v) < 2 ** 31 ? 'int' : 'double';
  switch ((v as { _bsontype?: string } | null)?._bsontype) {
    case 'BSONSymbol':
      return 'symbol';
    case 'Code':
      return (v as { scope?: unknown }).scope ? 'javascriptWithScope' : 'javascript';
    case 'DBPointer':
      return 'dbPointer';
    case 'DBRef':
      return 'object';
    default:
      return bsonTypeName(v);
  }
}

function matchesTypeName(v: unknown, name: string, json: boolean): boolean {
  const actual = bsonTypeOf(v);
  if (name === 'number') return typeRank(v) === 10;
  if (json && name === 'boolean') return actual === 'bool';
  return actual === name;
}

/** One unsatisfied rule, in the shape of mongod's `schemaRulesNotSatisfied` entries. */
export type RuleFailure = Record<string, unknown>;

function typeFailure(keyword: string, spec: unknown, v: unknown): RuleFailure {
  return {
    operatorName: keyword,
    specifiedAs: { [keyword]: spec },
    reason: 'type did not match',
    consideredValue: v,
    consideredType: bsonTypeOf(v),
  };
}

/**
 * Evaluates `schema` against a value (the document at the top level). Returns the rules it
 * does not satisfy; empty means the value is valid.
 */
export function evaluateSchema(schema: Schema, value: unknown): RuleFailure[] {
  const failures: RuleFailure[] = [];
  const isObject = isDocument(value);
  const isArray = Array.isArray(value);
  const n = asNumber(value);
  const isNumeric = typeRank(value) === 10;
  for (const [keyword, spec] of Object.entries(schema)) {
    switch (keyword) {
      case 'type':
      case 'bsonType': {
        const names = Array.isArray(spec) ? (spec as string[]) : [spec as string];
        if (!names.some((name) => matchesTypeName(value, name, keyword === 'type'))) failures.push(typeFailure(keyword, spec, value));
        break;
      }
      case 'required': {
        if (!isObject) break;
        const missing = (spec as string[]).filter((p) => !(p in value));
        if (missing.length > 0) failures.push({ operatorName: 'required', specifiedAs: { required: spec }, missingProperties: missing });
        break;
      }
      case 'properties': {
        if (!isObject) break;
        const notSatisfied: RuleFailure[] = [];
        for (const [property, sub] of Object.entries(spec as Record<string, Schema>)) {
          if (!(property in value)) continue;
          const details = evaluateSchema(sub, value[property]);
          if (details.length > 0)
            notSatisfied.push({ propertyName: property, ...(sub.description ? { description: sub.description } : {}), details });
        }
        if (notSatisfied.length > 0) failures.push({ operatorName: 'properties', propertiesNotSatisfied: notSatisfied });
        break;
      }
      case 'additionalProperties': {
        if (!isObject) break;
        const declared = new Set(Object.keys((schema.properties as object | undefined) ?? {}));
        const patterns = Object.keys((schema.patternProperties as object | undefined) ?? {}).map((p) => new RegExp(p, 'u'));
        const extra = Object.keys(value).filter((k) => !declared.has(k) && !patterns.some((re) => re.test(k)));
        if (spec === false) {
          if (extra.length > 0)
            failures.push({
              operatorName: 'additionalProperties',
              specifiedAs: { additionalProperties: false },
              additionalProperties: extra,
            });
        } else if (typeof spec === 'object') {
          const bad = extra.filter((k) => evaluateSchema(spec as Schema, value[k]).length > 0);
          if (bad.length > 0)
            failures.push({ operatorName: 'additionalProperties', specifiedAs: { additionalProperties: spec }, additionalProperties: bad });
        }
        break;
      }
      case 'patternProperties': {
        if (!isObject) break;
        for (const [pattern, sub] of Object.entries(spec as Record<string, Schema>)) {
          const re = new RegExp(pattern, 'u');
          for (const [k, v] of Object.entries(value)) {
            if (re.test(k) && evaluateSchema(sub, v).length > 0) {
              failures.push({
                operatorName: 'patternProperties',
                details: [{ propertyName: k, regexMatched: pattern, details: evaluateSchema(sub, v) }],
              });
            }
          }
        }
        break;
      }
      case 'minProperties':
      case 'maxProperties': {
        if (!isObject) break;
        const count = Object.keys(value).length;
        const limit = asNumber(spec)!;
        if (keyword === 'minProperties' ? count < limit : count > limit) {
          failures.push({
            operatorName: keyword,
            specifiedAs: { [keyword]: spec },
            reason: `specified number of properties was not satisfied`,
            numberOfProperties: count,
          });
        }
        break;
      }
      case 'minimum':
      case 'maximum': {
        if (!isNumeric || n === undefined) break;
        const limit = asNumber(spec)!;
        const exclusive = schema[keyword === 'minimum' ? 'exclusiveMinimum' : 'exclusiveMaximum'] === true;
        const ok = keyword === 'minimum' ? (exclusive ? n > limit : n >= limit) : exclusive ? n < limit : n <= limit;
        if (!ok)
          failures.push({ operatorName: keyword, specifiedAs: { [keyword]: spec }, reason: 'comparison failed', consideredValue: value });
        break;
      }
      case 'multipleOf': {
        if (!isNumeric || n === undefined) break;
        const divisor = asNumber(spec)!;
        if (n % divisor !== 0)
          failures.push({
            operatorName: 'multipleOf',
            specifiedAs: { multipleOf: spec },
            reason: 'considered value is not a multiple of the specified value',
            consideredValue: value,
          });
        break;
      }
      case 'minLength':
      case 'maxLength': {
        if (typeof value !== 'string') break;
        const length = [...value].length;
        const limit = asNumber(spec)!;
        if (keyword === 'minLength' ? length < limit : length > limit) {
          failures.push({
            operatorName: keyword,
            specifiedAs: { [keyword]: spec },
            reason: 'specified string length was not satisfied',
            consideredValue: value,
          });
        }
        break;
      }
      case 'pattern': {
        if (typeof value !== 'string') break;
        if (!new RegExp(spec as string, 'u').test(value)) {
          failures.push({
            operatorName: 'pattern',
            specifiedAs: { pattern: spec },
            reason: 'regular expression did not match',
            consideredValue: value,
          });
        }
        break;
      }
      case 'enum': {
        if (!(spec as unknown[]).some((candidate) => typeRank(candidate) === typeRank(value) && compareValues(candidate, value) === 0)) {
          failures.push({
            operatorName: 'enum',
            specifiedAs: { enum: spec },
            reason: 'value was not found in enum',
            consideredValue: value,
          });
        }
        break;
      }
      case 'minItems':
      case 'maxItems': {
        if (!isArray) break;
        const limit = asNumber(spec)!;
        if (keyword === 'minItems' ? value.length < limit : value.length > limit) {
          failures.push({
            operatorName: keyword,
            specifiedAs: { [keyword]: spec },
            reason: 'array did not match specified length',
            consideredValue: value,
          });
        }
        break;
      }
      case 'uniqueItems': {
        if (!isArray || spec !== true) break;
        const duplicate = value.find((v, i) => value.some((w, j) => j < i && compareValues(v, w) === 0));
        if (duplicate !== undefined)
          failures.push({
            operatorName: 'uniqueItems',
            specifiedAs: { uniqueItems: true },
            reason: 'found a duplicate item',
            consideredValue: value,
            duplicatedValue: duplicate,
          });
        break;
      }
      case 'items': {
        if (!isArray) break;
        if (Array.isArray(spec)) {
          const bad = (spec as Schema[])
            .map((s, i) => (i < value.length ? evaluateSchema(s, value[i]) : []))
            .findIndex((d) => d.length > 0);
          if (bad >= 0)
            failures.push({
              operatorName: 'items',
              details: [{ index: bad, details: evaluateSchema((spec as Schema[])[bad], value[bad]) }],
            });
        } else {
          const bad = value.findIndex((v) => evaluateSchema(spec as Schema, v).length > 0);
          if (bad >= 0)
            failures.push({
              operatorName: 'items',
              reason: 'At least one item did not match the sub-schema',
              itemIndex: bad,
              details: evaluateSchema(spec as Schema, value[bad]),
            });
        }
        break;
      }
      case 'additionalItems': {
        if (!isArray || !Array.isArray(schema.items)) break;
        const extra = value.slice((schema.items as unknown[]).length);
        const bad =
          spec === false ? extra.length > 0 : typeof spec === 'object' && extra.some((v) => evaluateSchema(spec as Schema, v).length > 0);
        if (bad)
          failures.push({
            operatorName: 'additionalItems',
            specifiedAs: { additionalItems: spec },
            reason: 'found additional items',
            additionalItems: extra,
          });
        break;
      }
      case 'dependencies': {
        if (!isObject) break;
        for (const [property, dependency] of Object.entries(spec as Record<string, unknown>)) {
          if (!(property in value)) continue;
          if (Array.isArray(dependency)) {
            const missing = (dependency as string[]).filter((p) => !(p in value));
            if (missing.length > 0)
              failures.push({
                operatorName: 'dependencies',
                failingDependencies: [{ conditionalProperty: property, missingProperties: missing }],
              });
          } else if (evaluateSchema(dependency as Schema, value).length > 0) {
            failures.push({
              operatorName: 'dependencies',
              failingDependencies: [{ conditionalProperty: property, details: evaluateSchema(dependency as Schema, value) }],
            });
          }
        }
        break;
      }
      case 'allOf': {
        const bad = (spec as Schema[]).map((s) => evaluateSchema(s, value)).filter((d) => d.length > 0);
        if (bad.length > 0)
          failures.push({ operatorName: 'allOf', schemasNotSatisfied: bad.map((details, index) => ({ index, details })) });
        break;
      }
      case 'anyOf': {
        const results = (spec as Schema[]).map((s) => evaluateSchema(s, value));
        if (results.every((d) => d.length > 0))
          failures.push({ operatorName: 'anyOf', schemasNotSatisfied: results.map((details, index) => ({ index, details })) });
        break;
      }
      case 'oneOf': {
        const results = (spec as Schema[]).map((s) => evaluateSchema(s, value));
        const passing = results.filter((d) => d.length === 0).length;
        if (passing !== 1) {
          failures.push(
            passing === 0
              ? { operatorName: 'oneOf', schemasNotSatisfied: results.map((details, index) => ({ index, details })) }
              : {
                  operatorName: 'oneOf',
                  reason: 'more than one subschema matched',
                  matchingSchemaIndexes: results.flatMap((d, i) => (d.length === 0 ? [i] : [])),
                },
          );
        }
        break;
      }
      case 'not': {
        if (evaluateSchema(spec as Schema, value).length === 0) failures.push({ operatorName: 'not', reason: 'child expression matched' });
        break;
      }
      default:
        break; // title, description, encrypt...: annotations
    }
  }
  return failures;
}
