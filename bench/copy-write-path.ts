/**
 * The copy's two write paths on the same data (see src/copy/write-path.ts):
 * 1. Ferry-side CPU to turn one batch of raw documents into an `insert` message (tinybench, no
 *    network): `decode` = type-faithful deserialize + the driver's serialize of each document,
 *    `raw` = the bytes copied into one batch buffer, pushed as one document-sequence chunk and
 *    framed once.
 * 2. End to end: one partition copied from a test cluster to another (each in its own process)
 *    by `copyPartition` in this process, per path (`wire`: Ferry's own connection, writev), measuring
 *    wall time and this process's CPU.
 * 3. The write alone: one 8 MiB batch inserted by `raw` (the driver's `db.command`) and by `wire`,
 *    this process's CPU per insert (what the wire path changes, without the reads around it).
 *
 *   npm run build && node dist/bench/copy-write-path.js [sizeMB=64] [runs=3]
 *
 * Prints each path's median Ferry CPU per MiB and wall MiB/s over the runs (run 3 or more runs
 * so that each path takes each place in the order once).
 */
import { createRequire } from 'node:module';
import { Bench } from 'tinybench';
import { deserialize, Int32, Long, MaxKey, MinKey, ObjectId, serialize, UUID, type Document } from 'bson';
import { MongoClient } from 'mongodb';
import { TYPE_FAITHFUL } from '../src/bson/index.js';
import { Batcher } from '../src/copy/batcher.js';
import { copyPartition, type CopyResources } from '../src/copy/partition-copier.js';
import { SharedCounters, StopFlag } from '../src/copy/shared-state.js';
import { driverDocumentSequence, writeRaw } from '../src/cluster/raw-writes.js';
import { wireWriterOf } from '../src/cluster/wire-writes.js';
import { packValue } from '../src/meta/store.js';
import { spawnCluster } from '../test/cluster/index.js';
import type { WritePath } from '../src/config/settings.js';
import { HistogramSet } from '../src/metrics/histograms.js';
import { median } from './lib/results.js';

const sizeMB = Number(process.argv[2] ?? 64);
const runs = Number(process.argv[3] ?? 3);
const DB = 'bench_copy';
const MiB = 1024 * 1024;

/** A ~1 KiB document with the field types of an application's data. */
function document(i: number): Document {
  return {
    _id: new ObjectId(),
    seq: new Int32(i),
    big: Long.fromNumber(i * 1_000_003),
    price: i * 0.25,
    name: `customer ${i}`,
    tags: ['alpha', 'beta', 'gamma'].slice(0, (i % 3) + 1),
    address: { street: `${i} long street`, city: 'Lisbon', zip: String(10_000 + (i % 90_000)) },
    ref: new UUID(),
    createdAt: new Date(1_700_000_000_000 + i * 1000),
    notes: 'n'.repeat(800),
  };
}

async function microBenchmark(): Promise<void> {
  const batch = Array.from({ length: 1000 }, (_, i) => serialize(document(i)));
  const bytes = batch.reduce((sum, doc) => sum + doc.length, 0);
  const Sequence = driverDocumentSequence()!;
  const commands = createRequire(import.meta.url)('mongodb/lib/cmap/commands.js') as {
    OpMsgRequest: new (db: string, command: Document, options: Document) => { toBin(): Uint8Array[] };
  };
  const bench = new Bench({ time: 2000 });
  bench
    .add('decode: deserialize + serialize each document', () => {
      const decoded = batch.map((doc) => deserialize(doc, { ...TYPE_FAITHFUL, validation: { utf8: false } }));
      new commands.OpMsgRequest(DB, { insert: 'c', documents: decoded, ordered: false }, {}).toBin();
    })
    .add('raw: copy bytes into one batch buffer, one sequence chunk', () => {
      const batcher = new Batcher({ maxBytes: 2 * MiB, maxDocuments: 100_000 });
      for (const doc of batch) batcher.add(doc, 0, doc.length);
      const sequence = new Sequence('documents');
      sequence.push(null, batcher.flush()!.bytes);
      new commands.OpMsgRequest(DB, { insert: 'c', documents: sequence, ordered: false }, {}).toBin();
    });
  await bench.run();
  console.log(`\nPreparing one insert of 1,000 documents (${(bytes / MiB).toFixed(2)} MiB), Ferry-side CPU only:`);
  for (const task of bench.tasks) {
    const mean = (task.result as unknown as { latency: { mean: number } }).latency.mean;
    console.log(`  ${task.name}: ${mean.toFixed(3)} ms per batch = ${(bytes / MiB / (mean / 1000)).toFixed(0)} MiB/s per core`);
  }
}

async function endToEnd(): Promise<void> {
  const [a, b] = await Promise.all([spawnCluster(), spawnCluster()]);
  const source = await MongoClient.connect(a.uri);
  const destination = await MongoClient.connect(b.uri);
  try {
    let written = 0;
    for (let i = 0; written < sizeMB * MiB;) {
      const docs = Array.from({ length: 2000 }, () => document(i++));
      written += docs.reduce((sum, doc) => sum + serialize(doc).length, 0);
      await source.db(DB).collection('c').insertMany(docs, { ordered: false });
    }
    console.log(
      `\nEnd to end: one partition of ${(written / MiB).toFixed(1)} MiB (~1 KiB documents), batchBytes 8 MiB, 2 batches in flight:`,
    );
    const perPath: Partial<Record<WritePath, { cpuMsPerMiB: number; MiBps: number }[]>> = {};
    for (let run = 1; run <= runs; run++) {
      // The order rotates: a path copied later in a run meets more garbage in this process and in
      // the destination, and measured up to 2× the CPU per MiB it did when copied earlier.
      const order: WritePath[] = ['decode', 'raw', 'wire'];
      for (const writePath of [...order.slice((run - 1) % 3), ...order.slice(0, (run - 1) % 3)]) {
        await destination.db(DB).dropDatabase();
        const resources: CopyResources & { histograms: HistogramSet } = {
          source,
          destination,
          checkpoint: async () => {},
          histograms: new HistogramSet(),
          counters: new SharedCounters(),
          stop: new StopFlag(),
        };
        const cpu = process.cpuUsage();
        const started = performance.now();
        const outcome = await copyPartition(
          {
            key: { instance: 'bench', ns: `${DB}.c`, index: 0 },
            db: DB,
            coll: 'c',
            order: 'id',
            min: packValue(new MinKey()),
            max: packValue(new MaxKey()),
            copiedDocs: 0,
            copiedBytes: 0,
            averageDocumentBytes: 1024,
            settings: { batchBytes: 8 * MiB, batchesInFlight: 2, checkpointIntervalMs: 1000, writePath },
          },
          resources,
        );
        const seconds = (performance.now() - started) / 1000;
        const used = process.cpuUsage(cpu);
        const mib = outcome.copiedBytes / MiB;
        console.log(
          `  run ${run} ${outcome.writePath === writePath ? writePath.padEnd(6) : `${writePath}→${outcome.writePath}`} ${(mib / seconds).toFixed(1).padStart(6)} MiB/s wall, ` +
            `Ferry CPU ${((used.user + used.system) / 1000 / mib).toFixed(1)} ms per MiB, ` +
            `write p50 ${resources.histograms.percentiles('copyWriteLatencyMs').p50.toFixed(0)} ms`,
        );
        resources.histograms.close();
        (perPath[writePath] ??= []).push({ cpuMsPerMiB: (used.user + used.system) / 1000 / mib, MiBps: mib / seconds });
      }
    }
    console.log(`Medians of ${runs} runs:`);
    for (const [path, measured] of Object.entries(perPath)) {
      const cpu = median(measured.map((m) => m.cpuMsPerMiB));
      console.log(
        `  ${path.padEnd(6)} Ferry CPU ${cpu.toFixed(2)} ms per MiB (${(cpu * 1.024).toFixed(2)} s/GiB), ${median(measured.map((m) => m.MiBps)).toFixed(1)} MiB/s wall`,
      );
    }
  } finally {
    await Promise.allSettled([source.close(), destination.close()]);
    await Promise.all([a.stop(), b.stop()]);
  }
}

/**
 * 3. The write alone: the same 8 MiB batch inserted 10 times per path (each into a new
 * collection) on one destination, the order rotating per round; this process's CPU per insert.
 */
async function writeOnly(): Promise<void> {
  const cluster = await spawnCluster();
  const client = await MongoClient.connect(cluster.uri);
  try {
    const documents = Array.from({ length: 8000 }, (_, i) => serialize(document(i)));
    const total = documents.reduce((sum, doc) => sum + doc.length, 0);
    const wire = wireWriterOf(client);
    if ((await wire.unsupported()) !== undefined) throw new Error('the wire path cannot serve the test cluster');
    const perPath: Record<string, number[]> = { raw: [], wire: [] };
    console.log(`\nThe write alone: one batch of ${(total / MiB).toFixed(1)} MiB inserted 10 times per path and round:`);
    for (let round = 0; round < Math.max(2, runs); round++) {
      for (const path of round % 2 === 0 ? ['raw', 'wire'] : ['wire', 'raw']) {
        await client.db(DB).dropDatabase();
        let cpuMs = 0;
        for (let k = 0; k < 10; k++) {
          const batcher = new Batcher({ maxBytes: total, maxDocuments: 100_000 });
          for (const doc of documents) batcher.add(doc, 0, doc.length);
          const batch = batcher.flush()!;
          const cpu = process.cpuUsage();
          const reply =
            path === 'raw'
              ? await writeRaw(client.db(DB), 'insert', `w${k}`, batch, { bypassDocumentValidation: true })
              : await wire.insert(DB, `w${k}`, batch);
          const used = process.cpuUsage(cpu);
          cpuMs += (used.user + used.system) / 1000;
          if (reply.n !== documents.length) throw new Error(`${path} inserted ${reply.n} of ${documents.length}`);
        }
        perPath[path]!.push(cpuMs / 10);
        console.log(`  round ${round + 1} ${path.padEnd(4)} ${(cpuMs / 10).toFixed(1)} ms CPU per insert`);
      }
    }
    for (const [path, values] of Object.entries(perPath)) {
      console.log(`  median ${path.padEnd(4)} ${median(values).toFixed(1)} ms CPU per ${(total / MiB).toFixed(1)} MiB insert`);
    }
  } finally {
    await client.close();
    await cluster.stop();
  }
}

await microBenchmark();
await endToEnd();
await writeOnly();
