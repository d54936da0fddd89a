/**
 * Runs a sharded conformance suite against every target: a 2-shard test cluster (config server,
 * two shards and a mongos, each its own process) and, when `MONGODB_SHARDED_URI` is set (a
 * mongos of a real sharded cluster with at least two shards), that deployment — skipped
 * otherwise. Suites talk only through the official driver: to the mongos, and to each shard
 * directly by the replica-set URI `listShards` gives (with the mongos URI's credentials).
 * Each suite gets its own database, dropped after it.
 */
import { after, before, describe } from 'node:test';
import { type Db, MongoClient } from 'mongodb';
import { spawnCluster } from '../../cluster/index.js';

export interface ShardTarget {
  id: string;
  /** A client connected to the shard's replica set directly. */
  client: MongoClient;
  db: Db;
}

export interface ShardedTarget {
  /** 'test cluster' or 'MONGODB_SHARDED_URI'. */
  name: string;
  /** The mongos URI. */
  uri: string;
  client: MongoClient;
  /** The suite's database, through the mongos. */
  db: Db;
  /** The shards, in `listShards` order (at least two). */
  shards: ShardTarget[];
  /** The project's own test cluster (its extra knobs may be used). */
  local: boolean;
}

/** Options for the test cluster a suite starts (a real target is used as it is). */
export interface LocalClusterOptions {
  orphanCleanupDelaySecs?: number;
  balancerIntervalMs?: number;
  oplogSizeMB?: number;
  users?: { user: string; password: string; roles: string[] }[];
}

let counter = 0;

/** A shard's replica-set URI from its `listShards` host (`shard01/h1:p1,h2:p2`), with the mongos URI's credentials. */
export function shardUri(mongosUri: string, host: string): string {
  const slash = host.indexOf('/');
  const setName = host.slice(0, slash);
  const url = new URL(mongosUri);
  const auth = url.username ? `${url.username}:${url.password}@` : '';
  const params = new URLSearchParams(url.search);
  params.set('replicaSet', setName);
  return `mongodb://${auth}${host.slice(slash + 1)}/?${params.toString()}`;
}

/** Declares `suite` once per target; `body` gets a getter for the started target. */
export function shardedConformance(suite: string, body: (target: () => ShardedTarget) => void, options: LocalClusterOptions = {}): void {
  const targets: { name: string; uri?: string }[] = [
    { name: 'test cluster' },
    { name: 'MONGODB_SHARDED_URI', uri: process.env.MONGODB_SHARDED_URI },
  ];
  for (const spec of targets) {
    const skip = spec.name === 'MONGODB_SHARDED_URI' && !spec.uri ? 'MONGODB_SHARDED_URI is not set' : false;
    describe(`${suite} [${spec.name}]`, { skip }, () => {
      let target: ShardedTarget | undefined;
      let stop: (() => Promise<void>) | undefined;
      before(async () => {
        let uri = spec.uri;
        if (!uri) {
          const cluster = await spawnCluster({ shards: 2, ...options });
          stop = cluster.stop;
          uri = cluster.uri;
          if (options.users?.[0]) uri = uri.replace('mongodb://', `mongodb://${options.users[0].user}:${options.users[0].password}@`);
        }
        const client = await MongoClient.connect(uri, { serverSelectionTimeoutMS: 5000 });
        const listed = (await client.db('admin').command({ listShards: 1 })).shards as { _id: string; host: string }[];
        const shards = await Promise.all(
          listed.map(async (s) => {
            const shardClient = await MongoClient.connect(shardUri(uri, s.host), { serverSelectionTimeoutMS: 5000 });
            return { id: s._id, client: shardClient, db: shardClient.db('placeholder') };
          }),
        );
        const dbName = `ferry_sharded_${process.pid}_${++counter}`;
        for (const shard of shards) shard.db = shard.client.db(dbName);
        target = { name: spec.name, uri, client, db: client.db(dbName), shards, local: !spec.uri };
      });
      after(async () => {
        if (target) {
          await target.db.dropDatabase().catch(() => {});
          await Promise.all(target.shards.map((s) => s.client.close()));
          await target.client.close();
        }
        await stop?.();
      });
      body(() => {
        if (!target) throw new Error('target not started');
        return target;
      });
    });
  }
}

/** Each shard's `opcounters` (serverStatus), read directly from the shards. */
export async function shardOpcounters(target: ShardedTarget): Promise<Record<string, number>[]> {
  return Promise.all(
    target.shards.map(async (s) => (await s.client.db('admin').command({ serverStatus: 1 })).opcounters as Record<string, number>),
  );
}

/** Shards a collection of the suite's database (enableSharding first, as older servers need). */
export async function shardCollection(
  target: ShardedTarget,
  coll: string,
  key: Record<string, 1 | 'hashed'>,
  extra: Record<string, unknown> = {},
): Promise<void> {
  const admin = target.client.db('admin');
  await admin.command({ enableSharding: target.db.databaseName, primaryShard: target.shards[0]!.id }).catch(async () => {
    await admin.command({ enableSharding: target.db.databaseName });
  });
  await admin.command({ shardCollection: `${target.db.databaseName}.${coll}`, key, ...extra });
}

/** Documents each shard holds of a collection, read directly (orphans included). */
export async function shardCounts(target: ShardedTarget, coll: string): Promise<number[]> {
  return Promise.all(target.shards.map((s) => s.db.collection(coll).countDocuments()));
}
