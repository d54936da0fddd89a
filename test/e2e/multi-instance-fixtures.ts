/**
 * What the several-instance end-to-end tests share: a 2-shard source and a replica-set or 2-shard
 * destination (or real deployments: `FERRY_TEST_SHARDED_URI` and `FERRY_TEST_RS_URI`, or
 * `FERRY_TEST_SHARDED_DEST_URI` for the sharded one), and a wait for the destination to equal the source.
 */
import assert from 'node:assert/strict';
import { MongoClient, type Document } from 'mongodb';
import { spawnCluster } from '../cluster/index.js';
import { emptyDestination } from './ferry-process.js';

export interface ShardedSourcePair {
  sourceUri: string;
  destinationUri: string;
  source: MongoClient;
  destination: MongoClient;
  /** The source's shard IDs, `listShards` order. */
  shards: string[];
  /** Closes the clients and stops the clusters this spawned. */
  stop(): Promise<void>;
}

/** A 2-shard source and an empty destination: a replica set, or with `shardedDestination` a 2-shard cluster. */
export async function shardedSourcePair(shardedDestination = false): Promise<ShardedSourcePair> {
  const stops: (() => Promise<void>)[] = [];
  let sourceUri: string;
  let destinationUri: string;
  const real = [
    process.env.FERRY_TEST_SHARDED_URI,
    shardedDestination ? process.env.FERRY_TEST_SHARDED_DEST_URI : process.env.FERRY_TEST_RS_URI,
  ];
  if (real.every((uri) => uri !== undefined && uri !== '')) {
    [sourceUri, destinationUri] = real as string[];
  } else {
    const [a, b] = await Promise.all([spawnCluster({ shards: 2 }), shardedDestination ? spawnCluster({ shards: 2 }) : spawnCluster()]);
    stops.push(
      () => a.stop(),
      () => b.stop(),
    );
    [sourceUri, destinationUri] = [a.uri, b.uri];
  }
  const source = new MongoClient(sourceUri);
  const destination = new MongoClient(destinationUri);
  await emptyDestination(destinationUri);
  const shards = ((await source.db('admin').command({ listShards: 1 })).shards as { _id: string }[]).map((shard) => shard._id);
  return {
    sourceUri,
    destinationUri,
    source,
    destination,
    shards,
    stop: async () => {
      await Promise.all([source.close(), destination.close()]);
      await Promise.all(stops.map((stop) => stop()));
    },
  };
}

/**
 * Waits until `read(destination)` equals `read(source)` (canCommit allows a few seconds of lag),
 * for a minute at most: the last difference seen is the failure.
 */
export async function converged<T>(pair: ShardedSourcePair, read: (client: MongoClient) => Promise<T>, label: string): Promise<void> {
  for (const deadline = Date.now() + 60_000; ;) {
    const [actual, expected] = await Promise.all([read(pair.destination), read(pair.source)]);
    try {
      assert.deepEqual(actual, expected, label);
      return;
    } catch (error) {
      if (Date.now() + 500 >= deadline) throw error;
    }
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
}

/** The documents of `db.coll`, by `_id`. */
export function sortedDocs(client: MongoClient, db: string, coll: string): Promise<Document[]> {
  return client.db(db).collection(coll).find().sort({ _id: 1 }).toArray();
}
