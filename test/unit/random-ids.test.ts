// mongosync's detectRandomId and copyInNaturalOrder: which collections the plan reads in natural
// order (one range, sequential reads) rather than by _id ranges through the index.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { MongoClient, ObjectId, UUID } from 'mongodb';
import { copiedInNaturalOrder, type StartRequest } from '../../src/domain/start-request.js';
import { planCollectionCopy, type NaturalOrderChoice } from '../../src/plan/copy-plan.js';
import { idOrderCorrelation, RANDOM_ID_MAX_CORRELATION } from '../../src/plan/random-ids.js';
import { startClusterPair, type ClusterPair } from '../helpers/clusters.js';

/** A deterministic shuffle (the test must not depend on luck). */
function shuffled<T>(items: T[]): T[] {
  const out = [...items];
  let seed = 12345;
  for (let i = out.length - 1; i > 0; i--) {
    seed = (seed * 1103515245 + 12345) % 2 ** 31;
    const j = seed % (i + 1);
    [out[i], out[j]] = [out[j]!, out[i]!];
  }
  return out;
}

describe('the rank correlation of _id order against insertion order', () => {
  const counter = Array.from({ length: 1000 }, (_, i) => i);

  it('is 1 for a counter and for ObjectIds made one after another, -1 for a countdown', () => {
    assert.equal(idOrderCorrelation(counter), 1);
    assert.equal(idOrderCorrelation([...counter].reverse()), -1);
    const objectIds = Array.from({ length: 500 }, (_, i) => ObjectId.createFromTime(1_700_000_000 + i));
    assert.equal(idOrderCorrelation(objectIds), 1);
  });

  it('is near 0 for random values (shuffled numbers, random UUIDs)', () => {
    assert.ok(Math.abs(idOrderCorrelation(shuffled(counter))) < RANDOM_ID_MAX_CORRELATION);
    const uuids = Array.from({ length: 1000 }, () => new UUID(randomUUID()));
    assert.ok(Math.abs(idOrderCorrelation(uuids)) < RANDOM_ID_MAX_CORRELATION);
  });
});

describe('the copy plan of a collection against a cluster', () => {
  let pair: ClusterPair;
  let client: MongoClient;
  const db = `ferry_random_ids_${process.pid}`;
  const PARTITION_BYTES = 16 * 1024; // 600 documents of ~300 bytes: several _id ranges when read by _id

  before(async () => {
    pair = await startClusterPair();
    client = await MongoClient.connect(pair.cluster0);
    const pad = 'x'.repeat(250);
    await client
      .db(db)
      .collection<{ _id: UUID; pad: string }>('uuids')
      .insertMany(Array.from({ length: 600 }, () => ({ _id: new UUID(randomUUID()), pad })));
    await client
      .db(db)
      .collection<{ _id: number; pad: string }>('counter')
      .insertMany(Array.from({ length: 600 }, (_, i) => ({ _id: i, pad })));
  });

  after(async () => {
    await client?.db(db).dropDatabase();
    await client?.close();
    await pair?.stop();
  });

  const plan = (coll: string, natural: NaturalOrderChoice) =>
    planCollectionCopy(client.db(db).collection(coll), {}, PARTITION_BYTES, natural);

  it('detectRandomId: random _ids at least the threshold → one range in natural order; a counter keeps _id ranges', async () => {
    const detect = { asked: false, detectRandomId: true, randomIdMinBytes: 0 };
    const random = await plan('uuids', detect);
    assert.deepEqual(
      random.partitions.map((p) => p.order),
      ['natural'],
    );
    assert.equal(random.partitions[0]!.estimatedCount, 600);
    const counter = await plan('counter', detect);
    assert.ok(counter.partitions.length > 1 && counter.partitions.every((p) => p.order === 'id'));
  });

  it('below the size threshold, or with detectRandomId false, random _ids are read by _id ranges', async () => {
    for (const natural of [
      { asked: false, detectRandomId: true, randomIdMinBytes: 20 * 1024 ** 3 },
      { asked: false, detectRandomId: false, randomIdMinBytes: 0 },
    ]) {
      const { partitions } = await plan('uuids', natural);
      assert.ok(partitions.length > 1 && partitions.every((p) => p.order === 'id'), JSON.stringify(natural));
    }
  });

  it('copyInNaturalOrder: the collection is read in natural order whatever its _ids', async () => {
    const { partitions } = await plan('counter', { asked: true, detectRandomId: false, randomIdMinBytes: 0 });
    assert.deepEqual(
      partitions.map((p) => p.order),
      ['natural'],
    );
  });
});

describe('copyInNaturalOrder names collections', () => {
  const asked = (copyInNaturalOrder: StartRequest['copyInNaturalOrder']) => ({ copyInNaturalOrder }) as StartRequest;

  it('"." is every database; a database alone is all its collections; with collections, only those', () => {
    assert.equal(copiedInNaturalOrder(asked([{ database: '.' }]), 'any', 'thing'), true);
    assert.equal(copiedInNaturalOrder(asked([{ database: 'shop' }]), 'shop', 'orders'), true);
    assert.equal(copiedInNaturalOrder(asked([{ database: 'shop' }]), 'other', 'orders'), false);
    const some = asked([{ database: 'shop', collections: ['events'] }]);
    assert.equal(copiedInNaturalOrder(some, 'shop', 'events'), true);
    assert.equal(copiedInNaturalOrder(some, 'shop', 'orders'), false);
    assert.equal(copiedInNaturalOrder(asked(undefined), 'shop', 'events'), false);
  });
});
