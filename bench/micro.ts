/**
 * Micro-benchmarks (tinybench) of the hot paths, on the generator's documents (scripts/lib/dataset.ts):
 * - reading `_id` from raw BSON (`readId`, and `findId` which only locates it),
 * - walking a cursor reply's batch to each document's offset (what the raw cursor does per reply),
 * - batch assembly: documents copied out of a reply into a write batch (`Batcher`),
 * - event routing: the routing fields of raw change events (`readChangeEvent`), and the whole
 *   choice of a lane as change-event application makes it (fields, `_id` key, hash),
 * - hashing: the lane hash alone, and SHA-256 of documents as the comparison of clusters does;
 * - verification: comparing a document with its copy byte for byte, against hashing it (SHA-1);
 * - the destination test cluster's document trees under a copy's load (appended record ids, and
 *   `_id`s in four ascending partitions).
 *
 *   npm run bench:micro -- [--time 1000] [--out bench/results]
 *
 * Each case works on a batch of items so that timer resolution does not matter; figures are per
 * item and per MiB. Writes `<out>/micro.json`.
 */
import { createHash } from 'node:crypto';
import { ObjectId, serialize, Timestamp, UUID } from 'bson';
import { Command } from 'commander';
import { Bench } from 'tinybench';
import { decodeDocument, findElement, findId, readChangeEvent, readId } from '../src/bson/index.js';
import { idKey, laneOf } from '../src/cea/document-key.js';
import { Batcher, batchLimits } from '../src/copy/batcher.js';
import { batchDocumentStarts } from '../src/cluster/raw-cursor.js';
import { positiveInteger } from '../scripts/lib/cli-numbers.js';
import { COLLECTIONS } from '../scripts/lib/dataset.js';
import { createRandom } from '../scripts/lib/random.js';
import { runIfEntryPoint } from '../scripts/lib/entry-point.js';
import { compareValues } from '../test/cluster/bson-order.js';
import { RecordTree } from '../test/cluster/storage/record-tree.js';
import { DEFAULT_RESULTS_DIR, MiB, round, writeResult } from './lib/results.js';

/** Options of `runMicroBenchmarks`. */
export interface MicroBenchmarkOptions {
  /** Time spent measuring each case, ms. Default 1000. */
  time?: number;
  /** Directory of `micro.json`. Default `bench/results/`. */
  out?: string;
  print?: (line: string) => void;
}

/** One case's figures. */
export interface MicroCase {
  name: string;
  /** What one item is (a document, an event...). */
  item: string;
  itemsPerRun: number;
  bytesPerRun: number;
  meanMsPerRun: number;
  nsPerItem: number;
  itemsPerSecond: number;
  MBps: number;
  samples: number;
}

const ITEMS = 1000;
/** `--applyLanes` at the default load level. */
const LANES = 8;

/** The generator's documents for one collection, serialized. */
function documents(collection: string, count: number): Uint8Array[] {
  const definition = COLLECTIONS.find((c) => c.name === collection)!;
  const random = createRandom(7);
  return Array.from({ length: count }, (_, i) => serialize(definition.document(i, random)));
}

/** A `find` reply's `cursor` document holding `docs` in `firstBatch`, as bytes. */
function cursorReply(docs: readonly Uint8Array[]): Uint8Array {
  // Decoded type-faithfully, each document re-encodes to its own bytes.
  return serialize({ id: 0, ns: 'gen_shop.orders', firstBatch: docs.map((doc) => decodeDocument(doc)) });
}

/** Raw change events like those of the workload on the generator's data: inserts, updates, deletes. */
function changeEvents(count: number): Uint8Array[] {
  const orders = COLLECTIONS.find((c) => c.name === 'orders')!;
  const random = createRandom(9);
  return Array.from({ length: count }, (_, i) => {
    const kind = i % 3;
    const document = orders.document(i, random);
    return serialize({
      _id: {
        _data:
          `8265${i.toString(16).padStart(8, '0')}000000012B042C0100296E5A1004${'A'.repeat(32)}` +
          '463C6F7065726174696F6E54797065003C696E736572740046',
      },
      operationType: kind === 0 ? 'insert' : kind === 1 ? 'update' : 'delete',
      clusterTime: new Timestamp({ t: 1_700_000_000 + i, i: 1 }),
      wallTime: new Date(1_700_000_000_000 + i),
      ns: { db: 'gen_shop', coll: 'orders' },
      collectionUUID: new UUID('0f8fad5b-d9cb-469f-a165-70867728950e'),
      documentKey: { _id: document._id },
      ...(kind === 0 ? { fullDocument: document } : {}),
      ...(kind === 1 ? { updateDescription: { updatedFields: { status: 'paid' }, removedFields: [], truncatedArrays: [] } } : {}),
    });
  });
}

export async function runMicroBenchmarks(options: MicroBenchmarkOptions = {}): Promise<{ cases: MicroCase[]; path: string }> {
  const print = options.print ?? ((line: string) => console.log(line));
  const orders = documents('orders', ITEMS);
  const customers = documents('customers', ITEMS);
  const reply = cursorReply(documents('orders', 4 * ITEMS));
  const replyBatch = findElement(reply, 'firstBatch')!;
  const events = changeEvents(ITEMS);
  const ordersBytes = Buffer.concat(orders);
  const size = (parts: readonly Uint8Array[]) => parts.reduce((sum, p) => sum + p.byteLength, 0);
  const replyStarts = batchDocumentStarts(reply, replyBatch.valueOffset, replyBatch.valueEnd);
  let sink = 0; // keeps results alive so that no case is optimized away

  const cases: Omit<MicroCase, 'meanMsPerRun' | 'nsPerItem' | 'itemsPerSecond' | 'MBps' | 'samples'>[] = [];
  const bench = new Bench({ time: options.time ?? 1000 });
  const add = (name: string, item: string, items: number, bytes: number, run: () => void) => {
    cases.push({ name, item, itemsPerRun: items, bytesPerRun: bytes });
    bench.add(name, run);
  };
  add('readId: Int32 _id of an order (decoded)', 'document', ITEMS, size(orders), () => {
    for (const doc of orders) sink += readId(doc) === undefined ? 0 : 1;
  });
  add('readId: ObjectId _id of a customer (decoded)', 'document', ITEMS, size(customers), () => {
    for (const doc of customers) sink += readId(doc) === undefined ? 0 : 1;
  });
  add('findId: locate _id only (no decode)', 'document', ITEMS, size(orders), () => {
    for (const doc of orders) sink += findId(doc).valueOffset;
  });
  add('reply walk: offsets of a cursor reply’s documents', 'document', replyStarts.length, reply.byteLength, () => {
    sink += batchDocumentStarts(reply, replyBatch.valueOffset, replyBatch.valueEnd).length;
  });
  // One batcher for every round: its buffer is reused, as a copy worker's are.
  const batcher = new Batcher(batchLimits(8 * MiB));
  add('batch assembly: reply documents copied into a write batch', 'document', replyStarts.length, reply.byteLength, () => {
    const view = new DataView(reply.buffer, reply.byteOffset, reply.byteLength);
    for (const start of replyStarts) batcher.add(reply, start, view.getInt32(start, true));
    const batch = batcher.flush();
    sink += batch?.count ?? 0;
    if (batch !== undefined) batcher.release(batch);
  });
  add('event routing: readChangeEvent (type, ns, documentKey bytes, time)', 'event', ITEMS, size(events), () => {
    for (const event of events) {
      const fields = readChangeEvent(event);
      sink += (fields.documentKeyBytes?.byteLength ?? 0) + (fields.ns?.coll?.length ?? 0);
    }
  });
  add('event routing: lane of an event (fields, _id key, FNV-1a of ns and key)', 'event', ITEMS, size(events), () => {
    for (const event of events) {
      const fields = readChangeEvent(event);
      const key = fields.documentKeyBytes!;
      sink += laneOf(`${fields.ns!.db}.${fields.ns!.coll}`, idKey(key, findElement(key, '_id')!), LANES);
    }
  });
  const idKeys = events.map((event) => {
    const key = readChangeEvent(event).documentKeyBytes!;
    return idKey(key, findElement(key, '_id')!);
  });
  add('hashing: lane hash (FNV-1a of namespace and _id key)', 'event', ITEMS, size(events), () => {
    for (const key of idKeys) sink += laneOf('gen_shop.orders', key, LANES);
  });
  add('hashing: SHA-256 of documents (cluster comparison)', 'document', ITEMS, size(orders), () => {
    const hash = createHash('sha256');
    for (const doc of orders) hash.update(doc);
    sink += hash.digest()[0]!;
  });
  add('hashing: SHA-256 of the same bytes in one call', 'document', ITEMS, ordersBytes.byteLength, () => {
    sink += createHash('sha256').update(ordersBytes).digest()[0]!;
  });
  // Verification (src/verify/compare-range.ts): two copies of each document, compared byte for byte, or each hashed.
  const copies = orders.map((doc) => Uint8Array.from(doc));
  add('verification: compare a document with its copy, byte for byte', 'document', ITEMS, size(orders), () => {
    for (let i = 0; i < orders.length; i++) sink += Buffer.compare(orders[i]!, copies[i]!);
  });
  add('verification: SHA-1 of each document (node:crypto)', 'document', ITEMS, size(orders), () => {
    for (const doc of orders) sink += createHash('sha1').update(doc).digest()[0]!;
  });
  // The destination test cluster's trees (test/cluster/storage/record-tree.ts) under a copy's load:
  // record ids appended, and `_id`s arriving in four partitions, each in ascending order (bytes: the keys').
  const treeKeys = 64 * ITEMS;
  const partitionIds = Array.from({ length: treeKeys }, (_, i) => {
    const id = Buffer.alloc(12);
    id.writeUInt32BE(0x60000000 + (i % 4) * 1_000_000 + Math.floor(i / 4), 0);
    return new ObjectId(id);
  });
  add('test cluster: record ids appended to a record tree', 'key', treeKeys, 8 * treeKeys, () => {
    const tree = new RecordTree<number, number>((a, b) => a - b);
    for (let i = 1; i <= treeKeys; i++) tree.set(i, i, false);
    sink += tree.size;
  });
  add('test cluster: ObjectIds of four partitions into an _id tree', 'key', treeKeys, 12 * treeKeys, () => {
    const tree = new RecordTree<unknown, number>(compareValues);
    for (let i = 0; i < partitionIds.length; i++) tree.set(partitionIds[i], i, false);
    sink += tree.size;
  });

  await bench.run();
  const results: MicroCase[] = bench.tasks.map((task, i) => {
    const result = task.result as { latency?: { mean: number }; throughput?: unknown; state: string; error?: Error };
    if (result.latency === undefined) throw new Error(`micro-benchmark "${task.name}" ${result.state}: ${result.error?.message ?? ''}`);
    const spec = cases[i]!;
    const meanMs = result.latency.mean;
    return {
      ...spec,
      meanMsPerRun: round(meanMs, 4),
      nsPerItem: round((meanMs * 1e6) / spec.itemsPerRun, 1),
      itemsPerSecond: Math.round(spec.itemsPerRun / (meanMs / 1000)),
      MBps: round(spec.bytesPerRun / MiB / (meanMs / 1000), 1),
      samples: (task.runs as number) ?? 0,
    };
  });
  for (const c of results) {
    print(
      `${c.name.padEnd(66)} ${String(c.nsPerItem).padStart(9)} ns/${c.item}  ` +
        `${c.itemsPerSecond.toLocaleString('en-US').padStart(12)} ${c.item}s/s  ${String(c.MBps).padStart(8)} MB/s`,
    );
  }
  if (sink === Number.MIN_SAFE_INTEGER) print(''); // never true; reads sink
  const path = writeResult(options.out ?? DEFAULT_RESULTS_DIR, 'micro', { cases: results });
  print(`→ ${path}`);
  return { cases: results, path };
}

async function main(argv: string[]): Promise<void> {
  const flags = new Command()
    .name('bench:micro')
    .description("Micro-benchmarks of Ferry's hot paths")
    .option('--time <ms>', 'time spent measuring each case', positiveInteger, 1000)
    .option('--out <dir>', 'directory of micro.json', DEFAULT_RESULTS_DIR)
    .parse(argv)
    .opts<MicroBenchmarkOptions>();
  await runMicroBenchmarks(flags);
}

runIfEntryPoint(import.meta.url, 'bench:micro', main);
