/**
 * Namespace records through the metadata store: what commit restores comes back as plain
 * numbers, whatever BSON type the store read them as. Tested without a server: the collection
 * keeps each document as BSON bytes and reads them back type-faithfully (no value promotion).
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { deserialize, Long, serialize, type Document } from 'bson';
import { NamespaceRecords, type NamespaceRecord } from '../../src/meta/namespaces.js';
import type { MetadataStore } from '../../src/meta/store.js';

function memoryRecords(): NamespaceRecords {
  let stored: Uint8Array | undefined;
  const collection = {
    replaceOne: async (_filter: Document, doc: Document) => void (stored = serialize(doc)),
    findOne: async () => (stored === undefined ? null : deserialize(stored, { promoteValues: false })),
  };
  return new NamespaceRecords({ instance: 'i', collection: () => collection } as unknown as MetadataStore);
}

const record: NamespaceRecord = {
  db: 'app',
  coll: 'sessions',
  type: 'collection',
  sourceOptions: { clusteredIndex: { key: { _id: 1 }, unique: true }, expireAfterSeconds: new Long(600) },
  createOptions: { clusteredIndex: { key: { _id: 1 }, unique: true } },
  indexes: [],
  indexBuildTime: 'afterCopy',
  sourceCount: 0,
  sourceBytes: 0,
  created: true,
  partitioned: true,
  indexesBuilt: true,
};

describe('namespace records in the metadata', () => {
  it('keep a collection-level TTL to restore, as a number', async () => {
    const records = memoryRecords();
    await records.put({ ...record, expireAfterSeconds: 600 });
    const back = await records.get(record);
    assert.equal(back?.expireAfterSeconds, 600);
  });

  it('hold none for a collection without one', async () => {
    const records = memoryRecords();
    await records.put(record);
    assert.equal('expireAfterSeconds' in (await records.get(record))!, false);
  });
});
