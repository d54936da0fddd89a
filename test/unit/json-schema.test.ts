/** The test cluster's $jsonSchema evaluator: keyword semantics (draft 4 + bsonType) and mongod's refusals. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { BSON, Decimal128, Double, Int32, Long } from 'bson';
import { checkSchema, evaluateSchema } from '../cluster/json-schema.js';
import { typed } from '../cluster/raw.js';

/** A document as the server sees it: serialized, then decoded keeping BSON number types. */
function stored(doc: Record<string, unknown>): Record<string, unknown> {
  return BSON.deserialize(BSON.serialize(doc), typed);
}

function valid(schema: Record<string, unknown>, doc: Record<string, unknown>): boolean {
  checkSchema(schema);
  return evaluateSchema(schema, stored(doc)).length === 0;
}

test('bsonType names BSON types exactly; number and type: number cover every numeric type', () => {
  const schema = { properties: { n: { bsonType: 'int' } } };
  assert.equal(valid(schema, { n: new Int32(1) }), true);
  assert.equal(valid(schema, { n: new Double(1) }), false);
  assert.equal(valid(schema, { n: Long.fromNumber(1) }), false);
  for (const n of [new Int32(1), new Double(1.5), Long.fromNumber(2), Decimal128.fromString('3')]) {
    assert.equal(valid({ properties: { n: { bsonType: 'number' } } }, { n }), true);
    assert.equal(valid({ properties: { n: { type: 'number' } } }, { n }), true);
  }
  assert.equal(valid({ properties: { n: { bsonType: ['string', 'null'] } } }, { n: null }), true);
});

test('draft 4 keywords: boolean exclusive bounds, lengths, patterns, enum, items, uniqueItems', () => {
  const bounded = { properties: { n: { minimum: 1, exclusiveMinimum: true, maximum: 5 } } };
  assert.equal(valid(bounded, { n: new Int32(1) }), false);
  assert.equal(valid(bounded, { n: new Int32(5) }), true);
  assert.equal(valid({ properties: { s: { minLength: 2, maxLength: 3, pattern: '^a' } } }, { s: 'ab' }), true);
  assert.equal(valid({ properties: { s: { minLength: 2, maxLength: 3, pattern: '^a' } } }, { s: 'ba' }), false);
  assert.equal(valid({ properties: { c: { enum: ['red', 1] } } }, { c: new Double(1) }), true, 'enum compares numbers by value');
  assert.equal(valid({ properties: { c: { enum: ['red', 1] } } }, { c: 'blue' }), false);
  assert.equal(valid({ properties: { a: { items: { bsonType: 'string' } } } }, { a: ['x', 'y'] }), true);
  assert.equal(valid({ properties: { a: { items: { bsonType: 'string' } } } }, { a: ['x', 2] }), false);
  assert.equal(valid({ properties: { a: { uniqueItems: true } } }, { a: [1, 1.0] }), false);
  assert.equal(
    valid({ properties: { a: { items: [{ bsonType: 'int' }], additionalItems: false } } }, { a: [new Int32(1), 'extra'] }),
    false,
  );
});

test('object keywords: required, additionalProperties, patternProperties, dependencies', () => {
  assert.equal(valid({ required: ['a', 'b'] }, { a: 1 }), false);
  const closed = { properties: { _id: {}, a: {} }, additionalProperties: false };
  assert.equal(valid(closed, { _id: 1, a: 1 }), true);
  assert.equal(valid(closed, { _id: 1, a: 1, b: 2 }), false);
  assert.equal(valid({ properties: { _id: {} }, patternProperties: { '^x': {} }, additionalProperties: false }, { _id: 1, x1: 2 }), true);
  assert.equal(valid({ dependencies: { card: ['billing'] } }, { card: 1 }), false);
  assert.equal(valid({ dependencies: { card: ['billing'] } }, { other: 1 }), true);
});

test('combinators: allOf, anyOf, oneOf (exactly one), not', () => {
  const one = { properties: { n: { oneOf: [{ minimum: 0 }, { maximum: 10 }] } } };
  assert.equal(valid(one, { n: new Int32(-5) }), true);
  assert.equal(valid(one, { n: new Int32(5) }), false, 'both match');
  assert.equal(valid({ properties: { n: { not: { bsonType: 'string' } } } }, { n: 'x' }), false);
  assert.equal(valid({ properties: { n: { anyOf: [{ bsonType: 'string' }, { bsonType: 'int' }] } } }, { n: new Double(1) }), false);
});

test("failures are explained in mongod's schemaRulesNotSatisfied shape", () => {
  const rules = evaluateSchema(
    { required: ['name'], properties: { n: { bsonType: 'int', description: 'a count' } } },
    stored({ n: new Double(2) }),
  );
  assert.deepEqual(rules[0], { operatorName: 'required', specifiedAs: { required: ['name'] }, missingProperties: ['name'] });
  const properties = rules[1] as {
    operatorName: string;
    propertiesNotSatisfied: { propertyName: string; description: string; details: { consideredType: string }[] }[];
  };
  assert.equal(properties.operatorName, 'properties');
  assert.equal(properties.propertiesNotSatisfied[0].propertyName, 'n');
  assert.equal(properties.propertiesNotSatisfied[0].description, 'a count');
  assert.equal(properties.propertiesNotSatisfied[0].details[0].consideredType, 'double');
});

test('schemas mongod refuses are refused with its messages', () => {
  assert.throws(() => checkSchema({ format: 'email' }), /\$jsonSchema keyword 'format' is not currently supported/);
  assert.throws(() => checkSchema({ $ref: '#/a' }), /keyword '\$ref' is not currently supported/);
  assert.throws(() => checkSchema({ properties: { a: { type: 'integer' } } }), /type 'integer' is not currently supported/);
  assert.throws(() => checkSchema({ exclusiveMinimum: true }), /keyword 'minimum' must be present if exclusiveMinimum is present/);
  assert.throws(() => checkSchema({ frobnicate: 1 }), /Unknown \$jsonSchema keyword: frobnicate/);
  assert.throws(() => checkSchema({ bsonType: 'float' }), /Unknown type name alias: float/);
});
