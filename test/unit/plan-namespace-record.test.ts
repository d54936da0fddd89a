import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Binary, Int32, Long } from 'bson';
import type { StartRequest } from '../../src/domain/start-request.js';
import { MAX_CAPPED_SIZE_BYTES } from '../../src/domain/constants.js';
import { namespaceRecord } from '../../src/plan/catalog.js';

const request = (buildIndexes: StartRequest['buildIndexes'] = 'afterDataCopy'): StartRequest => ({
  source: 'cluster0',
  destination: 'cluster1',
  buildIndexes,
  reversible: false,
  enableUserWriteBlocking: 'destinationOnly',
  verification: { enabled: true },
});

const ID_INDEX = { v: 2, key: { _id: 1 }, name: '_id_' };

describe('what the destination gets for each source namespace', () => {
  it('a view: created as a view, nothing to partition or index', () => {
    const record = namespaceRecord(
      { db: 'shop', coll: 'paid', type: 'view', options: { viewOn: 'orders', pipeline: [{ $match: { paid: true } }] }, indexes: [] },
      'afterCopy',
      request(),
    );
    assert.deepEqual(record.createOptions, { viewOn: 'orders', pipeline: [{ $match: { paid: true } }] });
    assert.equal(record.partitioned, true);
    assert.equal(record.indexesBuilt, true);
    assert.deepEqual(record.indexes, []);
  });

  it('a capped collection: created at the largest size without max, original recorded, to be partitioned', () => {
    const uuid = new Binary(Buffer.alloc(16, 1), 4);
    const record = namespaceRecord(
      {
        db: 'log',
        coll: 'events',
        type: 'collection',
        uuid,
        options: { capped: true, size: new Int32(4096), max: new Int32(10) },
        indexes: [ID_INDEX],
      },
      'afterCopy',
      request(),
    );
    assert.deepEqual(record.createOptions, { capped: true, size: MAX_CAPPED_SIZE_BYTES });
    assert.deepEqual(record.capped, { size: 4096, max: 10 });
    assert.equal(record.uuid, uuid);
    assert.equal(record.created || record.partitioned || record.indexesBuilt, false);
  });

  it('a clustered collection with a TTL: created without it, the original recorded for commit', () => {
    const clusteredIndex = { v: new Int32(2), key: { _id: new Int32(1) }, name: '_id_', unique: true };
    const record = namespaceRecord(
      { db: 'log', coll: 'sessions', type: 'collection', options: { clusteredIndex, expireAfterSeconds: new Long(600) }, indexes: [] },
      'afterCopy',
      request(),
    );
    assert.deepEqual(record.createOptions, { clusteredIndex });
    assert.equal(record.expireAfterSeconds, 600);
    assert.deepEqual(record.sourceOptions, { clusteredIndex, expireAfterSeconds: new Long(600) }, 'the source options as listed');
  });

  it('a collated collection: its indexes without a collation stay simple; _id is never built', () => {
    const record = namespaceRecord(
      {
        db: 'crm',
        coll: 'people',
        type: 'collection',
        options: { collation: { locale: 'fr' } },
        indexes: [ID_INDEX, { v: 2, key: { name: 1 }, name: 'name_1', unique: true }],
      },
      'afterCopy',
      request(),
    );
    assert.deepEqual(
      record.indexes.map((index) => index.temporary),
      [{ key: { name: 1 }, name: 'name_1', collation: { locale: 'simple' } }],
    );
    assert.deepEqual(record.indexes[0]!.changes, { unique: true });
  });

  it('buildIndexes never: no index recorded to build', () => {
    const record = namespaceRecord(
      { db: 'a', coll: 'b', type: 'collection', options: {}, indexes: [ID_INDEX, { v: 2, key: { x: 1 }, name: 'x_1' }] },
      'never',
      request('never'),
    );
    assert.deepEqual(record.indexes, []);
  });
});
