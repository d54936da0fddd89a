import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Int32, Long } from 'bson';
import { createPlan, temporaryCollectionOptions } from '../../src/plan/collection-options.js';
import { MAX_CAPPED_SIZE_BYTES } from '../../src/domain/constants.js';

describe('destination collection options', () => {
  it('creates a capped collection at the largest size mongod allows, without a document limit, and records the original', () => {
    const plan = createPlan('collection', { capped: true, size: new Long(1_048_576), max: new Int32(500) });
    assert.deepEqual(plan.options, { capped: true, size: MAX_CAPPED_SIZE_BYTES });
    assert.equal(MAX_CAPPED_SIZE_BYTES, 1024 ** 5);
    assert.deepEqual(plan.capped, { size: 1_048_576, max: 500 });
  });

  it('records no max for a capped collection without one, and a listed 2^31-1 as the limit it is', () => {
    assert.deepEqual(createPlan('collection', { capped: true, size: 4096 }).capped, { size: 4096 });
    assert.deepEqual(createPlan('collection', { capped: true, size: 4096, max: 0 }).capped, { size: 4096 });
    // mongod lists "no limit" given as 0 as 2^31-1, and a user may set 2^31-1: what the source lists comes back.
    assert.deepEqual(createPlan('collection', { capped: true, size: 2 ** 31, max: 0x7fffffff }).capped, { size: 2 ** 31, max: 0x7fffffff });
  });

  it('carries collation, validator and every other option unchanged', () => {
    const options = {
      collation: { locale: 'fr', strength: new Int32(2) },
      validator: { $jsonSchema: { required: ['name'] } },
      validationLevel: 'moderate',
      validationAction: 'warn',
      changeStreamPreAndPostImages: { enabled: true },
    };
    const plan = createPlan('collection', options);
    assert.deepEqual(plan.options, options);
    assert.equal(plan.capped, undefined);
    assert.notEqual(plan.options, options, 'a copy, not the source object');
  });

  it('creates a clustered collection without its collection-level TTL, and records the original', () => {
    const clusteredIndex = { v: new Int32(2), key: { _id: new Int32(1) }, name: '_id_', unique: true };
    const plan = createPlan('collection', { clusteredIndex, expireAfterSeconds: new Long(3600) });
    assert.deepEqual(plan.options, { clusteredIndex });
    assert.equal(plan.expireAfterSeconds, 3600);
  });

  it('creates a time-series collection without its collection-level TTL, and records the original', () => {
    const timeseries = { timeField: 't', metaField: 'm', granularity: 'seconds', bucketMaxSpanSeconds: new Int32(3600) };
    const plan = createPlan('collection', { timeseries, expireAfterSeconds: new Long(86_400) });
    assert.deepEqual(plan.options, { timeseries });
    assert.equal(plan.expireAfterSeconds, 86_400);
    assert.equal(createPlan('collection', { timeseries }).expireAfterSeconds, undefined, 'none without a TTL');
  });

  it('creates a view as the source defines it', () => {
    const options = { viewOn: 'orders', pipeline: [{ $match: { status: 'paid' } }], collation: { locale: 'en' } };
    assert.deepEqual(createPlan('view', options), { options });
  });

  it('gives the options a destination collection lists during sync', () => {
    assert.deepEqual(temporaryCollectionOptions({ capped: true, size: 10, max: 3 }), { capped: true, size: MAX_CAPPED_SIZE_BYTES });
    assert.deepEqual(temporaryCollectionOptions({}), {});
    assert.deepEqual(temporaryCollectionOptions({ clusteredIndex: { key: { _id: 1 }, unique: true }, expireAfterSeconds: 60 }), {
      clusteredIndex: { key: { _id: 1 }, unique: true },
    });
  });
});
