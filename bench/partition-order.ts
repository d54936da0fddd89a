/**
 * Partitioning the copy of a sharded source: `_id` ranges (what the copy does: each range read
 * through mongos with `hint: {_id: 1}`, `min`/`max`, so mongos sends it to every shard) against
 * chunk ranges (each range inside one chunk, read with a filter on the shard key and `hint` on its
 * index, so mongos targets the one shard that owns it). Issue 12 asks to choose by
 * measurement.
 *
 * A 2-shard test cluster; a collection sharded on a ranged key `k` (uniform random), split into 4
 * chunks, two per shard; `_id`s ObjectIds (increasing, unrelated to `k`); 1 KiB documents inserted
 * through mongos. The same `partitions` ranges of each kind (quantiles of the keys), read
 * `readers` at a time through mongos as raw batches, in alternating order over `runs`. Figures per
 * run, medians: MB/s wall, CPU seconds per GB of mongos and of the shards, finds each shard ran.
 *
 *   npm run bench:partitions -- [megabytes=64] [partitions=8] [readers=2] [runs=3]
 */
import { performance } from 'node:perf_hooks';
import { BSON, Int32, MaxKey, MinKey, ObjectId, type Document } from 'bson';
import { MongoClient } from 'mongodb';
import { spawnCluster } from '../test/cluster/index.js';
import { readProcessUsage } from './lib/process-usage.js';
import { DEFAULT_RESULTS_DIR, GiB, median, round, writeResult } from './lib/results.js';

const megabytes = Number(process.argv[2] ?? 64);
const partitions = Number(process.argv[3] ?? 8);
const readers = Number(process.argv[4] ?? 2);
const runs = Number(process.argv[5] ?? 3);
const DOC_BYTES = 1024;
const KEY_SPACE = 1_000_000;
const NS = { db: 'bench', coll: 'sharded' };

interface Range {
  filter: Document;
  hint: Document;
  min?: Document;
  max?: Document;
}

interface Figures {
  mbPerSecond: number;
  mongosCpuPerGB: number;
  shardsCpuPerGB: number;
  /** Finds each shard ran (opcounters.query delta). */
  shardFinds: number[];
}

function cpu(pid: number): number {
  return readProcessUsage(pid).cpuSeconds;
}

async function queriesRun(shardUris: string[]): Promise<number[]> {
  return Promise.all(
    shardUris.map(async (uri) => {
      const client = await MongoClient.connect(uri, { directConnection: true });
      try {
        const status = await client.db('admin').command({ serverStatus: 1 });
        return Number(status.opcounters?.query ?? 0);
      } finally {
        await client.close();
      }
    }),
  );
}

/** Reads every range, `readers` at a time; returns the bytes read. */
async function readAll(client: MongoClient, ranges: readonly Range[]): Promise<number> {
  const queue = [...ranges];
  let bytes = 0;
  const reader = async () => {
    for (let range = queue.shift(); range !== undefined; range = queue.shift()) {
      const cursor = client
        .db(NS.db)
        .collection(NS.coll)
        .find(range.filter, {
          hint: range.hint,
          ...(range.min ? { min: range.min } : {}),
          ...(range.max ? { max: range.max } : {}),
          raw: true,
          batchSize: 1000,
        });
      for await (const doc of cursor) bytes += (doc as unknown as Uint8Array).length;
    }
  };
  await Promise.all(Array.from({ length: readers }, reader));
  return bytes;
}

/** `_id` ranges from sorted boundaries, as the copy reads them: index bounds, no filter (mongos sends each to every shard). */
function idRangesOf(bounds: readonly unknown[]): Range[] {
  const edges = [new MinKey(), ...bounds, new MaxKey()];
  return edges.slice(0, -1).map((min, i) => {
    const range: Range = { filter: {}, hint: { _id: 1 } };
    if (i > 0) range.min = { _id: min };
    if (i < edges.length - 2) range.max = { _id: edges[i + 1] };
    return range;
  });
}

/**
 * Shard-key ranges from sorted boundaries, each as a filter on the key: mongos targets a query by
 * its filter (not by `min`/`max`), so each goes to the one shard owning its chunk.
 */
function keyRangesOf(field: string, bounds: readonly number[]): Range[] {
  const edges = [undefined, ...bounds, undefined];
  return edges.slice(0, -1).map((min, i) => {
    const max = edges[i + 1];
    const condition: Document = {};
    if (min !== undefined) condition.$gte = min;
    if (max !== undefined) condition.$lt = max;
    return { filter: Object.keys(condition).length === 0 ? {} : { [field]: condition }, hint: { [field]: 1 } };
  });
}

async function measure(
  client: MongoClient,
  pids: { mongos: number; shards: number[] },
  shardUris: string[],
  ranges: readonly Range[],
  expectedBytes: number,
): Promise<Figures> {
  const before = { mongos: cpu(pids.mongos), shards: pids.shards.map(cpu), finds: await queriesRun(shardUris) };
  const started = performance.now();
  const bytes = await readAll(client, ranges);
  const seconds = (performance.now() - started) / 1000;
  if (bytes !== expectedBytes)
    throw new Error(`read ${bytes} bytes, expected ${expectedBytes}: the ranges do not cover the collection once`);
  const finds = await queriesRun(shardUris);
  const gb = bytes / GiB;
  return {
    mbPerSecond: bytes / 1024 / 1024 / seconds,
    mongosCpuPerGB: (cpu(pids.mongos) - before.mongos) / gb,
    shardsCpuPerGB: pids.shards.reduce((sum, pid, i) => sum + cpu(pid) - before.shards[i]!, 0) / gb,
    shardFinds: finds.map((n, i) => n - before.finds[i]!),
  };
}

const cluster = await spawnCluster({ shards: 2, noopIntervalMs: 0, ttlIntervalMs: 0 });
const client = await MongoClient.connect(cluster.uri);
const results: { id: Figures; chunk: Figures }[] = [];
try {
  const admin = client.db('admin');
  const ns = `${NS.db}.${NS.coll}`;
  await admin.command({ enableSharding: NS.db });
  await admin.command({ shardCollection: ns, key: { k: 1 } });
  const quarter = KEY_SPACE / 4;
  for (const at of [quarter, 2 * quarter, 3 * quarter]) await admin.command({ split: ns, middle: { k: at } });
  const other = cluster.shards[1]!.id;
  await admin.command({ moveRange: ns, min: { k: quarter }, max: { k: 2 * quarter }, toShard: other });
  await admin.command({ moveRange: ns, min: { k: 3 * quarter }, toShard: other });

  const total = Math.round((megabytes * 1024 * 1024) / DOC_BYTES);
  const ids: ObjectId[] = [];
  let expectedBytes = 0;
  const collection = client.db(NS.db).collection(NS.coll);
  for (let first = 0; first < total; first += 1000) {
    const docs: Document[] = [];
    for (let i = first; i < Math.min(total, first + 1000); i++) {
      const doc: Document = { _id: new ObjectId(), k: Math.floor(Math.random() * KEY_SPACE), n: new Int32(i), pad: '' };
      doc.pad = 'x'.repeat(DOC_BYTES - BSON.calculateObjectSize(doc));
      expectedBytes += BSON.calculateObjectSize(doc);
      ids.push(doc._id as ObjectId);
      docs.push(doc);
    }
    await collection.insertMany(docs, { ordered: false });
  }
  const idBounds = Array.from({ length: partitions - 1 }, (_, i) => ids[Math.floor(((i + 1) * ids.length) / partitions)]!);
  // Chunk ranges: each chunk cut into equal key ranges, partitions in all (a multiple of 4 keeps each inside a chunk).
  const keyBounds = Array.from({ length: partitions - 1 }, (_, i) => Math.round(((i + 1) * KEY_SPACE) / partitions));
  const idRanges = idRangesOf(idBounds);
  const chunkRanges = keyRangesOf('k', keyBounds);
  const pids = { mongos: cluster.mongos.pid!, shards: cluster.shards.map((s) => s.pid!) };
  const shardUris = cluster.shards.map((s) => s.uri);
  for (let run = 1; run <= runs; run++) {
    // Alternate which goes first, so neither always reads a warmer cluster.
    const first = run % 2 === 1 ? 'id' : 'chunk';
    const figures: Partial<Record<'id' | 'chunk', Figures>> = {};
    for (const kind of first === 'id' ? (['id', 'chunk'] as const) : (['chunk', 'id'] as const)) {
      figures[kind] = await measure(client, pids, shardUris, kind === 'id' ? idRanges : chunkRanges, expectedBytes);
    }
    results.push({ id: figures.id!, chunk: figures.chunk! });
    console.log(
      `run ${run}: _id ranges ${figures.id!.mbPerSecond.toFixed(1)} MB/s (finds per shard ${figures.id!.shardFinds.join('/')}), ` +
        `chunk ranges ${figures.chunk!.mbPerSecond.toFixed(1)} MB/s (finds per shard ${figures.chunk!.shardFinds.join('/')})`,
    );
  }
} finally {
  await client.close();
  await cluster.stop();
}

type Run = (typeof results)[number];
const med = (f: (r: Run) => number) => median(results.map(f));
/** One kind's figures, medians over the runs. */
const summarize = (pick: (r: Run) => Figures) => ({
  mbPerSecond: round(
    med((r) => pick(r).mbPerSecond),
    1,
  ),
  mongosCpuSecondsPerGB: round(
    med((r) => pick(r).mongosCpuPerGB),
    1,
  ),
  shardsCpuSecondsPerGB: round(
    med((r) => pick(r).shardsCpuPerGB),
    1,
  ),
  shardFinds: pick(results[0]!).shardFinds,
});
const summary = {
  megabytes,
  partitions,
  readers,
  runs,
  idRanges: summarize((r) => r.id),
  chunkRanges: summarize((r) => r.chunk),
  chunkOverIdThroughput: round(
    med((r) => r.chunk.mbPerSecond / r.id.mbPerSecond),
    2,
  ),
};
console.log(JSON.stringify(summary, null, 2));
console.log(`written to ${writeResult(DEFAULT_RESULTS_DIR, 'partition-order', summary)}`);
