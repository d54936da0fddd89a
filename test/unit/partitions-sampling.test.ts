// Sampling, statistics and partition reads against a running cluster (the test cluster, or the
// real deployment of FERRY_TEST_CLUSTER0_URI): the plan's ranges, read with min/max index bounds,
// return every document exactly once, whatever the mix of _id types.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { EJSON } from 'bson';
import { Binary, Decimal128, Double, Int32, Long, MaxKey, MinKey, MongoClient, ObjectId, type Collection } from 'mongodb';
import { partitionFindOptions, planPartitions, readCollectionStats, sampleIds, wantedPartitions } from '../../src/plan/partitions.js';
import { startClusterPair, type ClusterPair } from '../helpers/clusters.js';

const DOCUMENTS = 3_000;

/** The i-th _id: every type an _id can have, in turn. */
function mixedId(i: number): unknown {
  switch (i % 9) {
    case 0:
      return new Int32(i);
    case 1:
      return Long.fromNumber(2 ** 40 + i);
    case 2:
      return new Double(i + 0.5);
    case 3:
      return Decimal128.fromString(`${i}.25`);
    case 4:
      return `s-${i}`;
    case 5:
      return { k: new Int32(i) };
    case 6:
      return new Binary(Buffer.from(String(i)), 0);
    case 7:
      return ObjectId.createFromTime(1_700_000_000 + i);
    default:
      return new Date(i * 1000);
  }
}

describe('partitions against a cluster', () => {
  let pair: ClusterPair;
  let client: MongoClient;
  // _ids of every type: the driver's typed filters cannot express that.
  let collection: Collection<any>;

  before(async () => {
    pair = await startClusterPair();
    client = await MongoClient.connect(pair.cluster0);
    collection = client.db('ferry_partition_test').collection('mixed');
    await collection.drop().catch(() => {});
    const docs = Array.from({ length: DOCUMENTS }, (_, i) => ({ _id: mixedId(i), pad: 'x'.repeat(200) }));
    docs.push({ _id: new MinKey(), pad: 'min' }, { _id: new MaxKey(), pad: 'max' });
    await collection.insertMany(docs, { ordered: false });
  });

  after(async () => {
    await client
      ?.db('ferry_partition_test')
      .dropDatabase()
      .catch(() => {});
    await client?.close();
    await pair?.stop();
  });

  it('reads collection statistics with $collStats', async () => {
    const stats = await readCollectionStats(collection);
    assert.equal(stats.count, DOCUMENTS + 2);
    assert.ok(stats.size > DOCUMENTS * 200, `size ${stats.size}`);
    assert.equal(stats.capped, false);
  });

  it('samples about ten _ids per wanted partition, all of them real', async () => {
    const ids = await sampleIds(collection, 8);
    assert.ok(ids.length >= 60 && ids.length <= 80, `${ids.length} samples`);
    for (const id of ids.slice(0, 10)) assert.equal(await collection.countDocuments({ _id: id }), 1);
    assert.deepEqual(await sampleIds(collection, 1), [], 'nothing to sample for one partition');
  });

  it('reading every partition with min/max bounds returns each document exactly once', async () => {
    const stats = await readCollectionStats(collection);
    const options = { partitionBytes: Math.ceil(stats.size / 12) };
    const plan = planPartitions(stats, await sampleIds(collection, wantedPartitions(stats, options)), options);
    assert.ok(plan.partitions.length >= 6, `${plan.partitions.length} partitions`);
    const seen = new Map<string, number>();
    for (const partition of plan.partitions) {
      const docs = await collection.find({}, { ...partitionFindOptions(partition), projection: { _id: 1 } }).toArray();
      for (const { _id } of docs) {
        const key = EJSON.stringify({ _id }, { relaxed: false });
        seen.set(key, (seen.get(key) ?? 0) + 1);
      }
    }
    assert.equal(seen.size, DOCUMENTS + 2, 'every document, MinKey and MaxKey included');
    assert.ok(
      [...seen.values()].every((n) => n === 1),
      'no document twice',
    );
  });
});
