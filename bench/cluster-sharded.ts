/**
 * Sharded test cluster: what the router (mongos) costs next to the shards, as CPU read from
 * /proc for each process. A 2-shard cluster (`spawnCluster({shards: 2})`, each member its own
 * process); a collection sharded on a hashed `_id`; 1 KiB documents inserted through mongos in
 * unordered batches of 1,000 (document sequences, as drivers send them) over a few connections.
 * Figures per run, medians over runs:
 *  - insert: mongos CPU per MB inserted, each shard's CPU per MB it stored, and their ratio
 *    (target: mongos ≤ 1/3 of a shard per byte);
 *  - reads: point finds by `_id` (targeted) and by a non-key field (broadcast), counting which
 *    shards ran them (their opcounters) and their CPU (target: targeted 1 shard, broadcast n).
 *
 *   npm run bench:cluster-sharded -- [megabytes=64] [connections=2] [runs=3]
 */
import { performance } from 'node:perf_hooks';
import { BSON, Int32, ObjectId } from 'bson';
import { spawnCluster } from '../test/cluster/index.js';
import { NodeClient } from '../test/cluster/sharding/node-client.js';
import { readProcessUsage } from './lib/process-usage.js';
import { median } from './lib/results.js';

const megabytes = Number(process.argv[2] ?? 64);
const connections = Number(process.argv[3] ?? 2);
const runs = Number(process.argv[4] ?? 3);
const DOC_BYTES = 1024;
const BATCH_DOCS = 1000;
/** Point reads by the shard key, and broadcast reads (each scans every shard: fewer of them). */
const READS = 2000;
const BROADCAST_READS = 100;

function toBuffer(bytes: Uint8Array): Buffer {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

/** A 1 KiB document: an ObjectId `_id`, a number, a string field for broadcast reads, padding. */
function makeDocument(i: number): { raw: Buffer; id: ObjectId } {
  const id = new ObjectId();
  const base = { _id: id, n: new Int32(i), name: `customer-${i}`, tags: ['a', 'b'], address: { city: 'Lisbon' }, pad: '' };
  base.pad = 'x'.repeat(DOC_BYTES - BSON.calculateObjectSize(base));
  return { raw: toBuffer(BSON.serialize(base)), id };
}

function cpuOf(pid: number): number {
  return readProcessUsage(pid).cpuSeconds;
}

function systemCpuOf(pid: number): number {
  return readProcessUsage(pid).systemCpuSeconds;
}

interface RunFigures {
  insertMBps: number;
  mongosCpuPerMB: number;
  shardCpuPerMB: number[];
  ratio: number;
  targetedQueries: number[];
  broadcastQueries: number[];
  targetedCpuMsPerRead: number[];
  broadcastCpuMsPerRead: number[];
  mongosCpuMsPerTargetedRead: number;
}

async function oneRun(run: number): Promise<RunFigures> {
  const cluster = await spawnCluster({ shards: 2, noopIntervalMs: 0, ttlIntervalMs: 0 });
  const pids = [cluster.mongos.pid!, ...cluster.shards.map((s) => s.pid!)];
  const router = new NodeClient(`127.0.0.1:${cluster.port}`);
  const shards = cluster.shards.map((s) => new NodeClient(`127.0.0.1:${s.port}`));
  try {
    await router.command('admin', { enableSharding: 'bench' });
    await router.command('admin', { shardCollection: 'bench.docs', key: { _id: 'hashed' } });
    const total = Math.round((megabytes * 1024 * 1024) / DOC_BYTES);
    const batches: Buffer[][] = [];
    const ids: ObjectId[] = [];
    for (let first = 0; first < total; first += BATCH_DOCS) {
      const docs: Buffer[] = [];
      for (let i = first; i < Math.min(total, first + BATCH_DOCS); i++) {
        const doc = makeDocument(i);
        docs.push(doc.raw);
        if (i % Math.ceil(total / READS) === 0) ids.push(doc.id);
      }
      batches.push(docs);
    }

    // Insert through mongos.
    let next = 0;
    const before = pids.map(cpuOf);
    const systemBefore = pids.map(systemCpuOf);
    const started = performance.now();
    await Promise.all(
      Array.from({ length: connections }, async () => {
        while (next < batches.length) {
          const reply = await router.command('bench', { insert: 'docs', ordered: false }, [{ name: 'documents', docs: batches[next++]! }]);
          if (reply.writeErrors) throw new Error(`insert failed: ${JSON.stringify(reply.writeErrors)}`);
        }
      }),
    );
    const wall = (performance.now() - started) / 1000;
    const used = pids.map((pid, i) => cpuOf(pid) - before[i]!);
    const system = pids.map((pid, i) => systemCpuOf(pid) - systemBefore[i]!);
    const insertedMB = (total * DOC_BYTES) / 1e6;
    const stored = await Promise.all(shards.map(async (s) => Number((await s.command('bench', { collStats: 'docs' })).size) / 1e6));
    const shardCpuPerMB = stored.map((mb, i) => used[i + 1]! / mb);
    const mongosCpuPerMB = used[0]! / insertedMB;
    const meanShard = shardCpuPerMB.reduce((a, b) => a + b, 0) / shardCpuPerMB.length;

    // Reads: targeted by the shard key, then broadcast on another field.
    const opcounters = async () =>
      Promise.all(shards.map(async (s) => Number(((await s.command('admin', { serverStatus: 1 })).opcounters as { query: number }).query)));
    const measureReads = async (reads: number, filterOf: (i: number) => Record<string, unknown>) => {
      const queriesBefore = await opcounters();
      const cpuBefore = pids.map(cpuOf);
      for (let i = 0; i < reads; i++) {
        const reply = await router.command('bench', { find: 'docs', filter: filterOf(i), limit: 1, singleBatch: true });
        if ((reply.cursor as { firstBatch: unknown[] }).firstBatch.length !== 1) throw new Error('a read found nothing');
      }
      const cpu = pids.map((pid, i) => ((cpuOf(pid) - cpuBefore[i]!) * 1000) / reads);
      const queries = (await opcounters()).map((n, i) => n - queriesBefore[i]!);
      return { cpu, queries };
    };
    const targeted = await measureReads(READS, (i) => ({ _id: ids[i % ids.length] }));
    const broadcast = await measureReads(BROADCAST_READS, (i) => ({ name: `customer-${(i * 7919) % total}` }));
    console.log(
      `run ${run}: insert ${insertedMB.toFixed(0)} MB at ${(insertedMB / wall).toFixed(0)} MB/s; CPU per MB: mongos ${(mongosCpuPerMB * 1000).toFixed(1)} ms, shards ${shardCpuPerMB.map((c) => (c * 1000).toFixed(1)).join(' / ')} ms → mongos/shard ${(mongosCpuPerMB / meanShard).toFixed(2)} (kernel share: mongos ${((100 * system[0]!) / used[0]!).toFixed(0)}%, shards ${system
        .slice(1)
        .map((s, i) => ((100 * s) / used[i + 1]!).toFixed(0))
        .join(' / ')}%)`,
    );
    console.log(
      `       ${READS} targeted reads ran on the shards ${targeted.queries.join(' + ')} times; ${BROADCAST_READS} broadcast reads ${broadcast.queries.join(' + ')} times`,
    );
    return {
      insertMBps: insertedMB / wall,
      mongosCpuPerMB,
      shardCpuPerMB,
      ratio: mongosCpuPerMB / meanShard,
      targetedQueries: targeted.queries,
      broadcastQueries: broadcast.queries,
      targetedCpuMsPerRead: targeted.cpu.slice(1),
      broadcastCpuMsPerRead: broadcast.cpu.slice(1),
      mongosCpuMsPerTargetedRead: targeted.cpu[0]!,
    };
  } finally {
    router.close();
    for (const s of shards) s.close();
    await cluster.stop();
  }
}

const results: RunFigures[] = [];
for (let run = 1; run <= runs; run++) results.push(await oneRun(run));
const med = (f: (r: RunFigures) => number) => median(results.map(f));
console.log(`\nmedians over ${runs} runs (${megabytes} MB, ${connections} connections, 2 shards, hashed _id):`);
console.log(`insert: ${med((r) => r.insertMBps).toFixed(0)} MB/s wall`);
console.log(
  `insert CPU per MB: mongos ${(med((r) => r.mongosCpuPerMB) * 1000).toFixed(1)} ms, shard ${(med((r) => (r.shardCpuPerMB[0]! + r.shardCpuPerMB[1]!) / 2) * 1000).toFixed(1)} ms; mongos/shard ${med((r) => r.ratio).toFixed(2)} (target ≤ 0.33)`,
);
console.log(
  `targeted read: shards ran ${med((r) => r.targetedQueries[0]! + r.targetedQueries[1]!) / READS} find per read; CPU per read: shards ${med((r) => r.targetedCpuMsPerRead[0]!).toFixed(3)} / ${med((r) => r.targetedCpuMsPerRead[1]!).toFixed(3)} ms, mongos ${med((r) => r.mongosCpuMsPerTargetedRead).toFixed(3)} ms`,
);
console.log(
  `broadcast read: shards ran ${med((r) => r.broadcastQueries[0]! + r.broadcastQueries[1]!) / BROADCAST_READS} finds per read; CPU per read: shards ${med((r) => r.broadcastCpuMsPerRead[0]!).toFixed(3)} / ${med((r) => r.broadcastCpuMsPerRead[1]!).toFixed(3)} ms`,
);
