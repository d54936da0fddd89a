/**
 * The hot documents (`--hotDocIDs`) recorded with a sync: each run adds its own, none is ever
 * removed (their events were skipped: the commit must still copy them), and `_id`s keep their
 * BSON types. Tested without a server: the collection keeps the document as BSON bytes and reads
 * it back with the options the store asks for.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { deserialize, EJSON, Int32, Long, serialize, type Document, type DeserializeOptions } from 'bson';
import { ResumeStore } from '../../src/meta/resume.js';
import type { MetadataStore } from '../../src/meta/store.js';
import { checkHotDocuments } from '../../src/config/hot-documents.js';

function memoryResume(): { store: ResumeStore; writes: () => number } {
  let stored: Uint8Array = serialize({ _id: 'i', state: 'RUNNING' });
  let writes = 0;
  const collection = {
    findOne: async (_filter: Document, options: DeserializeOptions = {}) => deserialize(stored, options),
    updateOne: async (_filter: Document, update: { $set: Document }) => {
      writes++;
      stored = serialize({ ...deserialize(stored, { promoteValues: false }), ...update.$set });
    },
  };
  return { store: new ResumeStore({ instance: 'i', collection: () => collection } as unknown as MetadataStore), writes: () => writes };
}

const hot = (json: string) => checkHotDocuments([JSON.parse(json) as Record<string, unknown>]);
const canonical = (value: unknown) => EJSON.stringify(value, { relaxed: false });

describe('hot documents recorded with the sync', () => {
  it('a later run adds to them and never removes any; the same _id is recorded once', async () => {
    const { store, writes } = memoryResume();
    const first = await store.addHotDocuments(hot('{"db": "shop", "collection": "counters", "ids": [{"_id": 1}]}'));
    assert.deepEqual(
      first.map((entry) => [entry.db, entry.coll, entry.ids.map(canonical)]),
      [['shop', 'counters', ['{"$numberInt":"1"}']]],
    );
    // A restart without the flag: nothing added, the recorded ones still come back.
    const restarted = await store.addHotDocuments([]);
    assert.deepEqual(
      restarted.map((entry) => entry.ids.map(canonical)),
      [['{"$numberInt":"1"}']],
    );
    assert.equal(writes(), 1, 'nothing new, nothing written');
    const more = await store.addHotDocuments([
      ...hot('{"db": "shop", "collection": "counters", "ids": [{"_id": 1}, {"_id": {"$numberLong": "9007199254740993"}}]}'),
      ...hot('{"db": "shop", "collection": "seq", "ids": [{"_id": "orders"}]}'),
    ]);
    assert.deepEqual(
      more.map((entry) => [entry.coll, entry.ids.map(canonical)]),
      [
        ['counters', ['{"$numberInt":"1"}', '{"$numberLong":"9007199254740993"}']],
        ['seq', ['"orders"']],
      ],
    );
  });

  it('_ids come back with their BSON types (a 64-bit integer past 2^53 stays exact)', async () => {
    const { store } = memoryResume();
    await store.addHotDocuments(hot('{"db": "a", "collection": "b", "ids": [{"_id": {"$numberLong": "9007199254740993"}}, {"_id": 7}]}'));
    const [entry] = await store.addHotDocuments([]);
    assert.ok(entry!.ids[0] instanceof Long && entry!.ids[0].toString() === '9007199254740993');
    assert.ok(entry!.ids[1] instanceof Int32);
  });
});
