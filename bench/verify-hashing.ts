/**
 * How should the verifier hash? The same generated data, copied by Ferry (verification off) into
 * a fresh destination, is then compared whole three ways, one after another, each collection in
 * `_id` order on both clusters:
 *
 * - `server`: each cluster hashes its documents in an aggregation (`$project` with
 *   `$toHashedIndexKey: '$$ROOT'`, mongod 7.0's only document hash, the one hashed indexes use) and
 *   sends back `_id` and hash; the two streams are merged by `_id` and their hashes compared;
 * - `stream-hash`: both clusters stream raw BSON (the copy's reads) and this process hashes each
 *   document with node:crypto (SHA-1), then compares the hashes;
 * - `stream-bytes`: both clusters stream raw BSON and the documents are compared byte for byte as
 *   they are merged by `_id` (src/verify/compare-range.ts, what Ferry does).
 *
 * For each: wall time, this process's CPU and each cluster's CPU. Run in one process (no worker
 * threads) so that the CPU figures compare the methods, not the thread pool.
 *
 *   node dist/bench/verify-hashing.js [--sizeMB 100] [--seed 1] [--out bench/results]
 *
 * Writes `<out>/verify-hashing.json`.
 */
import { createHash } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { Command } from 'commander';
import { MaxKey, MinKey } from 'bson';
import { MongoClient, type Document } from 'mongodb';
import { compareBsonValues, readId } from '../src/bson/index.js';
import { packValue } from '../src/meta/store.js';
import { compareRange } from '../src/verify/compare-range.js';
import { generateDataset } from '../scripts/generate.js';
import { integer, positiveNumber } from '../scripts/lib/cli-numbers.js';
import { runIfEntryPoint } from '../scripts/lib/entry-point.js';
import { watchProgress } from '../scripts/lib/sync-watch.js';
import { spawnCluster } from '../test/cluster/index.js';
import { copyFinished, startFerry } from '../test/e2e/ferry-process.js';
import { UsageSampler } from './lib/process-usage.js';
import { DEFAULT_RESULTS_DIR, GiB, MiB, round, writeResult } from './lib/results.js';

type Method = 'server' | 'stream-hash' | 'stream-bytes';

export interface MethodFigures {
  method: Method;
  seconds: number;
  MBps: number;
  ferryCpuSeconds: number;
  ferryCpuSecondsPerGB: number;
  sourceClusterCpuSeconds: number;
  destinationClusterCpuSeconds: number;
  documents: number;
  differences: number;
  /** Why a method could not run on these clusters. */
  unsupported?: string;
}

/** `{_id, h}` of each document, hashed by the cluster, in `_id` order. */
async function* serverHashes(client: MongoClient, db: string, coll: string): AsyncGenerator<{ id: unknown; h: unknown }> {
  const cursor = client
    .db(db)
    .collection(coll)
    .aggregate<Document>([{ $sort: { _id: 1 } }, { $project: { _id: 1, h: { $toHashedIndexKey: '$$ROOT' } } }], { batchSize: 10_000 });
  for await (const doc of cursor) yield { id: doc._id, h: doc.h };
}

/** SHA-1 of each raw document, in `_id` order. */
async function* streamedHashes(client: MongoClient, db: string, coll: string): AsyncGenerator<{ id: unknown; h: string }> {
  const cursor = client
    .db(db)
    .collection(coll)
    .find({}, { sort: { _id: 1 }, hint: { _id: 1 }, raw: true, batchSize: 10_000 });
  for await (const raw of cursor as unknown as AsyncIterable<Uint8Array>) {
    yield { id: readId(raw), h: createHash('sha1').update(raw).digest('base64') };
  }
}

/** Merges two `_id`-ordered streams of hashes; returns documents read and differences. */
async function mergeHashes(
  a: AsyncGenerator<{ id: unknown; h: unknown }>,
  b: AsyncGenerator<{ id: unknown; h: unknown }>,
): Promise<{ documents: number; differences: number }> {
  let x = await a.next();
  let y = await b.next();
  let documents = 0;
  let differences = 0;
  while (!x.done || !y.done) {
    const order = x.done ? 1 : y.done ? -1 : compareBsonValues(x.value.id, y.value.id);
    if (order === 0) {
      if (String(x.value!.h) !== String(y.value!.h)) differences++;
      documents++;
      [x, y] = await Promise.all([a.next(), b.next()]);
    } else {
      differences++;
      if (order < 0) x = await a.next();
      else y = await b.next();
    }
  }
  return { documents, differences };
}

async function compareWith(method: Method, source: MongoClient, destination: MongoClient, namespaces: { db: string; coll: string }[]) {
  let documents = 0;
  let differences = 0;
  for (const { db, coll } of namespaces) {
    if (method === 'stream-bytes') {
      let after: string | undefined;
      for (;;) {
        const outcome = await compareRange(source, destination, {
          db,
          coll,
          min: packValue(new MinKey()),
          max: packValue(new MaxKey()),
          ...(after === undefined ? {} : { after }),
          maxBytes: 16 * MiB,
          maxDifferences: 1000,
          batchSize: 10_000,
        });
        documents += outcome.source.documents;
        differences += outcome.differences.length;
        if (outcome.status === 'done') break;
        after = outcome.lastId;
      }
      continue;
    }
    const read = method === 'server' ? serverHashes : streamedHashes;
    const merged = await mergeHashes(read(source, db, coll), read(destination, db, coll));
    documents += merged.documents;
    differences += merged.differences;
  }
  return { documents, differences };
}

export async function runHashingBenchmark(options: { sizeMB?: number; seed?: number; out?: string; print?: (line: string) => void } = {}) {
  const print = options.print ?? ((line: string) => console.log(line));
  const sampler = new UsageSampler();
  const source = await spawnCluster();
  const destination = await spawnCluster();
  const results: MethodFigures[] = [];
  try {
    sampler.watch('source', source.pid);
    sampler.watch('destination', destination.pid);
    const generated = await generateDataset({ uri: source.uri, sizeMB: options.sizeMB ?? 100, seed: options.seed ?? 1 });
    const ferry = await startFerry(['--cluster0', source.uri, '--cluster1', destination.uri, '--disableVerification']);
    try {
      await ferry.post('start', { source: 'cluster0', destination: 'cluster1' });
      await watchProgress(ferry, copyFinished, { what: 'the copy', timeoutMs: 60 * 60_000, intervalMs: 100 });
    } finally {
      await ferry.stop();
    }
    print(`${(generated.totalBytes / MiB).toFixed(1)} MB in ${generated.totalDocuments} documents, copied`);
    const namespaces = generated.collections.map((c) => ({
      db: c.ns.slice(0, c.ns.indexOf('.')),
      coll: c.ns.slice(c.ns.indexOf('.') + 1),
    }));
    const sourceClient = await MongoClient.connect(source.uri);
    const destinationClient = await MongoClient.connect(destination.uri);
    try {
      for (const method of ['stream-bytes', 'stream-hash', 'server'] as const) {
        sampler.restart('source');
        sampler.restart('destination');
        const cpu = process.cpuUsage();
        const started = performance.now();
        let outcome: { documents: number; differences: number } | undefined;
        let unsupported: string | undefined;
        try {
          outcome = await compareWith(method, sourceClient, destinationClient, namespaces);
        } catch (error) {
          unsupported = (error as Error).message;
        }
        const seconds = (performance.now() - started) / 1000;
        const used = process.cpuUsage(cpu);
        const ferryCpuSeconds = (used.user + used.system) / 1e6;
        const figures: MethodFigures = {
          method,
          seconds: round(seconds, 3),
          MBps: round(generated.totalBytes / MiB / seconds),
          ferryCpuSeconds: round(ferryCpuSeconds, 3),
          ferryCpuSecondsPerGB: round(ferryCpuSeconds / (generated.totalBytes / GiB)),
          sourceClusterCpuSeconds: round(sampler.usage('source').cpuSeconds),
          destinationClusterCpuSeconds: round(sampler.usage('destination').cpuSeconds),
          documents: outcome?.documents ?? 0,
          differences: outcome?.differences ?? 0,
        };
        if (unsupported !== undefined) figures.unsupported = unsupported;
        results.push(figures);
        print(
          `${method.padEnd(12)} ${figures.seconds} s, ${figures.MBps} MB/s, this process ${figures.ferryCpuSeconds} s CPU ` +
            `(${figures.ferryCpuSecondsPerGB} s/GB), ` +
            `clusters ${figures.sourceClusterCpuSeconds} + ${figures.destinationClusterCpuSeconds} s, ` +
            `${figures.documents} documents, ${figures.differences} differences` +
            (unsupported === undefined ? '' : ` — unsupported: ${unsupported}`),
        );
      }
    } finally {
      await Promise.all([sourceClient.close(), destinationClient.close()]);
    }
    const path = writeResult(options.out ?? DEFAULT_RESULTS_DIR, 'verify-hashing', {
      bytes: generated.totalBytes,
      documents: generated.totalDocuments,
      methods: results,
    });
    print(`→ ${path}`);
    return results;
  } finally {
    sampler.close();
    await Promise.all([source.stop(), destination.stop()]);
  }
}

async function main(argv: string[]): Promise<void> {
  const flags = new Command()
    .name('verify-hashing')
    .description('Compares ways of hashing for verification: on the server, or streaming raw BSON (hashes or bytes)')
    .option('--sizeMB <n>', 'data size, MiB', positiveNumber, 100)
    .option('--seed <n>', 'generator seed', integer, 1)
    .option('--out <dir>', 'directory of verify-hashing.json', DEFAULT_RESULTS_DIR)
    .parse(argv)
    .opts<{ sizeMB: number; seed: number; out: string }>();
  await runHashingBenchmark(flags);
}

runIfEntryPoint(import.meta.url, 'verify-hashing', main);
