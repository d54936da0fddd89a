/**
 * Looking up again the documents of updates whose `updateLookup` found nothing
 * (src/cea/moved-documents.ts), against an in-process test cluster. The stream looked the
 * document up when it read the event; the lookup here runs later, in an apply worker, and the
 * collection may have been renamed once more in between.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { deserialize, serialize, type Document } from 'bson';
import { MongoClient } from 'mongodb';
import { lookUpMovedDocuments } from '../../src/cea/moved-documents.js';
import { startCluster } from '../cluster/index.js';

const DB = 'moved';

/** The `_id` element of `{_id: id}`, as bytes. */
function idElement(id: unknown): Uint8Array {
  const doc = serialize({ _id: id });
  return new Uint8Array(doc.subarray(4, doc.length - 1));
}

async function uuidOf(client: MongoClient, coll: string): Promise<unknown> {
  const [entry] = await client.db(DB).listCollections({ name: coll }, { nameOnly: false }).toArray();
  return (entry as { info?: { uuid?: unknown } } | undefined)?.info?.uuid;
}

/** The documents found, decoded. */
function written(documents: Uint8Array[]): Document[] {
  return documents.map((document) => deserialize(document));
}

describe('looking up documents whose update lookup found nothing', () => {
  let cluster: Awaited<ReturnType<typeof startCluster>>;
  let client: MongoClient;

  before(async () => {
    cluster = await startCluster({ noopIntervalMs: 0, ttlIntervalMs: 0 });
    client = await MongoClient.connect(cluster.uri);
  });

  after(async () => {
    await client?.close();
    await cluster?.stop();
  });

  it('finds a document whose collection was renamed within its database', async () => {
    await client
      .db(DB)
      .collection('r1')
      .insertOne({ _id: 1, state: 'after' } as Document);
    const uuid = await uuidOf(client, 'r1');
    await client.db('admin').command({ renameCollection: `${DB}.r1`, to: `${DB}.r1b` });
    const statements = await lookUpMovedDocuments(client, DB, 'r1', [{ idElement: idElement(1), collectionUUID: uuid }]);
    assert.deepEqual(written(statements), [{ _id: 1, state: 'after' }]);
  });

  it("finds a document whose collection was renamed away and back between the stream's lookup and this one", async () => {
    await client
      .db(DB)
      .collection('r2')
      .insertOne({ _id: 1, state: 'after' } as Document);
    const uuid = await uuidOf(client, 'r2');
    // The stream read the update while the collection was `r2b` (lookup: null); by now it is `r2` again.
    await client.db('admin').command({ renameCollection: `${DB}.r2`, to: `${DB}.r2b` });
    await client.db('admin').command({ renameCollection: `${DB}.r2b`, to: `${DB}.r2` });
    const statements = await lookUpMovedDocuments(client, DB, 'r2', [{ idElement: idElement(1), collectionUUID: uuid }]);
    assert.deepEqual(written(statements), [{ _id: 1, state: 'after' }]);
  });

  it('writes nothing for a deleted document, or a dropped collection', async () => {
    await client
      .db(DB)
      .collection('r3')
      .insertOne({ _id: 1 } as Document);
    const uuid = await uuidOf(client, 'r3');
    await client
      .db(DB)
      .collection('r3')
      .deleteOne({ _id: 1 } as Document);
    assert.deepEqual(await lookUpMovedDocuments(client, DB, 'r3', [{ idElement: idElement(1), collectionUUID: uuid }]), []);
    await client
      .db(DB)
      .collection('r3')
      .insertOne({ _id: 2 } as Document);
    await client.db(DB).dropCollection('r3');
    assert.deepEqual(await lookUpMovedDocuments(client, DB, 'r3', [{ idElement: idElement(2), collectionUUID: uuid }]), []);
  });

  it('writes nothing when another collection with another UUID now has the name', async () => {
    await client
      .db(DB)
      .collection('r4')
      .insertOne({ _id: 1, generation: 1 } as Document);
    const uuid = await uuidOf(client, 'r4');
    await client.db(DB).dropCollection('r4');
    await client
      .db(DB)
      .collection('r4')
      .insertOne({ _id: 1, generation: 2 } as Document);
    assert.deepEqual(await lookUpMovedDocuments(client, DB, 'r4', [{ idElement: idElement(1), collectionUUID: uuid }]), []);
  });
});
