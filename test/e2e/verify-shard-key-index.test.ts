/**
 * The verifier's definition check on a sharded destination: the index Ferry creates there to
 * support a shard key the source has no index for (`createSupportingIndexes`) is Ferry's, not a
 * difference; any other index only on the destination still is.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { MongoClient, type Document } from 'mongodb';
import { spawnCluster } from '../cluster/index.js';
import { checkNamespace } from '../../src/verify/catalog-check.js';
import type { StartRequest } from '../../src/domain/start-request.js';

const DB = `shardkeyindex_${process.pid}`;
let source: MongoClient;
let destination: MongoClient;
const stops: (() => Promise<void>)[] = [];

before(async () => {
  const [a, b] = await Promise.all([spawnCluster(), spawnCluster({ shards: 2 })]);
  stops.push(
    () => a.stop(),
    () => b.stop(),
  );
  source = new MongoClient(a.uri);
  destination = new MongoClient(b.uri);
  const users = Array.from({ length: 20 }, (_, i) => ({ _id: i, email: `u${i}@example.com` }));
  await source
    .db(DB)
    .collection('users')
    .insertMany(users as Document[]);
  await destination.db('admin').command({ enableSharding: DB });
  await destination.db(DB).collection('users').createIndex({ email: 'hashed' }, { name: 'email_hashed' });
  await destination.db('admin').command({ shardCollection: `${DB}.users`, key: { email: 'hashed' } });
  await destination
    .db(DB)
    .collection('users')
    .insertMany(users as Document[]);
});

after(async () => {
  await Promise.all([source?.close(), destination?.close()]);
  await Promise.all(stops.map((stop) => stop()));
});

describe('verification of definitions on a sharded destination', () => {
  const request = { source: 'cluster0', destination: 'cluster1', buildIndexes: 'afterDataCopy' } as unknown as StartRequest;

  it('does not report the index supporting the destination shard key, and still reports another extra index', async () => {
    const ns = { db: DB, coll: 'users' };
    assert.deepEqual((await checkNamespace(source, destination, ns, request, 'temporary')).differences, []);
    await destination.db(DB).collection('users').createIndex({ email: 1, _id: 1 }, { name: 'extra' });
    const { differences } = await checkNamespace(source, destination, ns, request, 'temporary');
    assert.deepEqual(
      differences.map((d) => d.subject),
      ['index:extra'],
    );
  });
});
