import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { calculateObjectSize, MaxKey, MinKey, serialize } from 'bson';
import { packDocument, packValue, unpackDocument, unpackValue } from '../../src/meta/store.js';
import { bsonValue, idValue } from './bson-arbitraries.js';

/** Two values are the same BSON when they serialize to the same bytes. */
const sameBson = (a: unknown, b: unknown) => Buffer.from(serialize({ v: a })).equals(Buffer.from(serialize({ v: b })));

describe('metadata value packing', () => {
  it('round-trips MinKey and MaxKey (partition bounds)', () => {
    assert.ok(unpackValue(packValue(new MinKey())) instanceof MinKey);
    assert.ok(unpackValue(packValue(new MaxKey())) instanceof MaxKey);
  });

  it('round-trips every _id value with its exact BSON type (property)', () => {
    fc.assert(fc.property(idValue, (id) => assert.ok(sameBson(unpackValue(packValue(id)), id))));
  });

  it('round-trips documents with $-operators exactly (validators, partial filters) (property)', () => {
    fc.assert(
      fc.property(bsonValue, (value) => {
        const doc = { validator: { $and: [{ a: value }] }, n: value };
        const back = unpackDocument(packDocument(doc));
        assert.equal(calculateObjectSize(back), calculateObjectSize(doc));
        assert.ok(Buffer.from(serialize(back)).equals(Buffer.from(serialize(doc))));
      }),
    );
  });
});
