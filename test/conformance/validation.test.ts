/**
 * Document validation: query-operator and $jsonSchema validators, DocumentValidationFailure
 * with mongod's errInfo, validationLevel (strict, moderate, off), validationAction (error,
 * warn), bypassDocumentValidation, and validators mongod refuses to store.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Double, Int32 } from 'mongodb';
import { conformance } from './harness.js';

interface ValidationError {
  code: number;
  codeName?: string;
  errInfo?: { failingDocumentId: unknown; details: { operatorName: string; [k: string]: unknown } };
}

conformance('document validation', (target) => {
  test('a failing insert reports DocumentValidationFailure with the document and the operator', async () => {
    const db = target().db;
    await db.createCollection('positive', { validator: { qty: { $gt: 0 } } });
    await db.collection('positive').insertOne({ _id: 1, qty: 5 } as never);
    await assert.rejects(db.collection('positive').insertOne({ _id: 2, qty: 0 } as never), (e: ValidationError) => {
      assert.equal(e.code, 121);
      assert.equal(e.errInfo?.failingDocumentId, 2);
      assert.equal(e.errInfo?.details.operatorName, '$gt');
      assert.deepEqual(e.errInfo?.details.specifiedAs, { qty: { $gt: 0 } });
      assert.equal(e.errInfo?.details.consideredValue, 0);
      return true;
    });
    assert.equal((await db.collection('positive').find().toArray()).length, 1, 'the invalid document was not stored');
  });

  test('several clauses are explained as an $and listing the failing ones', async () => {
    const db = target().db;
    await db.createCollection('both', { validator: { a: { $exists: true }, b: { $type: 'string' } } });
    await assert.rejects(db.collection('both').insertOne({ _id: 1, b: 'ok' } as never), (e: ValidationError) => {
      assert.equal(e.errInfo?.details.operatorName, '$and');
      const clauses = e.errInfo?.details.clausesNotSatisfied as { index: number; details: { operatorName: string } }[];
      assert.deepEqual(
        clauses.map((c) => [c.index, c.details.operatorName]),
        [[0, '$exists']],
      );
      return true;
    });
  });

  test('$jsonSchema tells BSON types apart and explains missing and mistyped properties', async () => {
    const db = target().db;
    await db.createCollection('schema', {
      validator: {
        $jsonSchema: { bsonType: 'object', required: ['name'], properties: { n: { bsonType: 'int' }, name: { bsonType: 'string' } } },
      },
    });
    const coll = db.collection('schema');
    await coll.insertOne({ name: 'int', n: new Int32(1) });
    await assert.rejects(coll.insertOne({ name: 'double', n: new Double(1) }), { code: 121 });
    await assert.rejects(coll.insertOne({ _id: 'bad', n: new Double(2.5) } as never), (e: ValidationError) => {
      assert.equal(e.errInfo?.failingDocumentId, 'bad');
      assert.equal(e.errInfo?.details.operatorName, '$jsonSchema');
      const rules = e.errInfo?.details.schemaRulesNotSatisfied as {
        operatorName: string;
        missingProperties?: string[];
        propertiesNotSatisfied?: { propertyName: string }[];
      }[];
      const required = rules.find((r) => r.operatorName === 'required');
      assert.deepEqual(required?.missingProperties, ['name']);
      const properties = rules.find((r) => r.operatorName === 'properties');
      assert.deepEqual(
        properties?.propertiesNotSatisfied?.map((p) => p.propertyName),
        ['n'],
      );
      return true;
    });
  });

  test('validationAction warn accepts invalid documents; validationLevel off skips validation', async () => {
    const db = target().db;
    await db.createCollection('warned', { validator: { a: { $type: 'string' } }, validationAction: 'warn' });
    await db.collection('warned').insertOne({ a: 1 });
    await db.createCollection('off', { validator: { a: { $type: 'string' } }, validationLevel: 'off' });
    await db.collection('off').insertOne({ a: 1 });
    assert.equal((await db.collection('warned').find().toArray()).length + (await db.collection('off').find().toArray()).length, 2);
  });

  test('moderate validation leaves documents that were already invalid alone', async () => {
    const db = target().db;
    const coll = db.collection('moderate');
    await coll.insertMany([
      { _id: 'old', a: 1 },
      { _id: 'good', a: 'x' },
    ] as never[]);
    await db.command({ collMod: 'moderate', validator: { a: { $type: 'string' } }, validationLevel: 'moderate' });
    await coll.updateOne({ _id: 'old' } as never, { $set: { b: 1 } });
    await assert.rejects(coll.updateOne({ _id: 'good' } as never, { $set: { a: 2 } }), { code: 121 });
    await assert.rejects(coll.insertOne({ _id: 'new', a: 3 } as never), { code: 121 });
    await db.command({ collMod: 'moderate', validationLevel: 'strict' });
    await assert.rejects(coll.updateOne({ _id: 'old' } as never, { $set: { b: 2 } }), { code: 121 });
  });

  test('bypassDocumentValidation skips the validator', async () => {
    const db = target().db;
    await db.createCollection('bypassed', { validator: { a: { $exists: true } } });
    await db.collection('bypassed').insertOne({ b: 1 }, { bypassDocumentValidation: true });
    assert.equal((await db.collection('bypassed').find().toArray()).length, 1);
  });

  test('validators mongod cannot use are refused when stored', async () => {
    const db = target().db;
    await assert.rejects(db.createCollection('unknownOp', { validator: { a: { $frobnicate: 1 } } }), { code: 2, codeName: 'BadValue' });
    await assert.rejects(db.createCollection('withFormat', { validator: { $jsonSchema: { properties: { a: { format: 'email' } } } } }), {
      message: /\$jsonSchema keyword 'format' is not currently supported/,
    });
    await assert.rejects(db.createCollection('withInteger', { validator: { $jsonSchema: { properties: { a: { type: 'integer' } } } } }), {
      message: /\$jsonSchema type 'integer' is not currently supported/,
    });
    const names = (await db.listCollections({}, { nameOnly: true }).toArray()).map((c) => c.name);
    assert.ok(!names.some((n) => ['unknownOp', 'withFormat', 'withInteger'].includes(n)));
  });
});
