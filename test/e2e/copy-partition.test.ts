/**
 * The partition copier against two test clusters (separate processes), run in this thread:
 * exact `_id` ranges across BSON types, byte-exact documents on the raw write path, resuming after
 * a checkpoint, tolerated duplicates, loud failures, stopping at a batch boundary, natural order.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Binary, Decimal128, Double, Int32, Long, MaxKey, MinKey, ObjectId, UUID, type Document } from 'bson';
import type { MongoClient } from 'mongodb';
import { readId } from '../../src/bson/index.js';
import { Batcher, type RawBatch } from '../../src/copy/batcher.js';
import { copyPartition, type CopyResources, type PartitionTask } from '../../src/copy/partition-copier.js';
import { SharedCounters, StopFlag } from '../../src/copy/shared-state.js';
import { createBatchWriter } from '../../src/copy/write-path.js';
import { packValue, unpackValue } from '../../src/meta/store.js';
import { planPartitions } from '../../src/plan/partitions.js';
import { RUN, useClusterPair } from './copy-fixtures.js';
import type { WritePath } from '../../src/config/settings.js';
import { HistogramSet } from '../../src/metrics/histograms.js';

const clusters = useClusterPair();
const DB = `ferry_copier_${RUN}`;

interface Recorder extends CopyResources {
  checkpoints: { lastId: string; copiedDocs: number; copiedBytes: number }[];
  histograms: HistogramSet;
}

function resources(onCheckpoint?: (resources: Recorder) => void): Recorder {
  const recorder: Recorder = {
    source: clusters.source,
    destination: clusters.destination,
    checkpoints: [],
    checkpoint: async (_key, position) => {
      recorder.checkpoints.push(position);
      onCheckpoint?.(recorder);
    },
    histograms: new HistogramSet(),
    counters: new SharedCounters(),
    stop: new StopFlag(),
  };
  return recorder;
}

function task(coll: string, overrides: Partial<PartitionTask> = {}, writePath: WritePath = 'raw'): PartitionTask {
  return {
    key: { instance: 'test', ns: `${DB}.${coll}`, index: 0 },
    db: DB,
    coll,
    order: 'id',
    min: packValue(new MinKey()),
    max: packValue(new MaxKey()),
    copiedDocs: 0,
    copiedBytes: 0,
    averageDocumentBytes: 200,
    settings: { batchBytes: 8 * 1024, batchesInFlight: 3, checkpointIntervalMs: 0, writePath },
    ...overrides,
  };
}

/** Every document of a collection as raw bytes, in `_id` order. */
async function rawDocuments(client: MongoClient, coll: string): Promise<Buffer[]> {
  return (await client
    .db(DB)
    .collection(coll)
    .find({}, { sort: { _id: 1 }, hint: { _id: 1 }, raw: true })
    .toArray()) as unknown as Buffer[];
}

/** `_id`s of every BSON type an `_id` may hold, mixed. */
/** One document as a write batch, made as the copy makes them. */
function batchOf(document: Buffer): RawBatch {
  const batcher = new Batcher({ maxBytes: document.length, maxDocuments: 1 });
  batcher.add(document, 0, document.length);
  return batcher.flush()!;
}

function mixedIds(count: number): unknown[] {
  const ids: unknown[] = [];
  for (let i = 0; i < count; i++) {
    switch (i % 10) {
      case 0:
        ids.push(new Int32(i));
        break;
      case 1:
        ids.push(Long.fromNumber(2 ** 40 + i));
        break;
      case 2:
        ids.push(new Double(i + 0.5));
        break;
      case 3:
        ids.push(Decimal128.fromString(`${i}.25`));
        break;
      case 4:
        ids.push(`key-${String(i).padStart(6, '0')}`);
        break;
      case 5:
        ids.push(new ObjectId());
        break;
      case 6:
        ids.push(new UUID());
        break;
      case 7:
        ids.push({ region: 'eu', seq: new Int32(i) });
        break;
      case 8:
        ids.push(new Date(1_700_000_000_000 + i));
        break;
      default:
        ids.push(new Binary(Buffer.from([i & 0xff, i >> 8]), 0));
    }
  }
  return ids;
}

async function fill(coll: string, ids: unknown[], padding = 150): Promise<void> {
  const docs = ids.map((_id, i) => ({ _id, i: new Int32(i), pad: 'p'.repeat(padding) }));
  await clusters.source
    .db(DB)
    .collection(coll)
    .insertMany(docs as Document[]);
}

describe('copying one partition', () => {
  it('copies each _id range exactly once across every BSON type, byte for byte', async () => {
    const ids = [...mixedIds(600), new MinKey(), new MaxKey()];
    await fill('mixed', ids);
    // Ranges at quantiles of the ids themselves: every range spans several types.
    const plan = planPartitions({ count: ids.length, size: ids.length * 200 }, ids, { partitionBytes: 20_000 });
    assert.ok(plan.partitions.length >= 5, `planned ${plan.partitions.length} ranges`);
    const recorder = resources();
    let copied = 0;
    for (const [index, partition] of plan.partitions.entries()) {
      const outcome = await copyPartition(
        task('mixed', {
          key: { instance: 'test', ns: `${DB}.mixed`, index },
          min: packValue(partition.min),
          max: packValue(partition.max),
        }),
        recorder,
      );
      assert.equal(outcome.status, 'done');
      copied += outcome.copiedDocs;
    }
    assert.equal(copied, ids.length, 'documents counted once');
    assert.deepEqual(await rawDocuments(clusters.destination, 'mixed'), await rawDocuments(clusters.source, 'mixed'));
    assert.equal(recorder.counters.documents, ids.length);
    assert.ok(recorder.histograms.percentiles('copyWriteLatencyMs').count > 0, 'write latency recorded');
    assert.ok(recorder.histograms.percentiles('copyReadLatencyMs').count > 0, 'read latency recorded');
  });

  it('the raw write path keeps BSON that decoding cannot (undefined, DBPointer, duplicate field names); decoding changes it', async () => {
    const odd = oddDocument();
    for (const coll of ['odd', 'odd2']) await createBatchWriter(clusters.source.db(DB), coll, 'raw').write(batchOf(odd));
    assert.equal((await rawDocuments(clusters.source, 'odd'))[0]!.compare(odd), 0, 'the source holds the exact bytes');

    await copyPartition(task('odd', {}, 'raw'), resources());
    assert.equal((await rawDocuments(clusters.destination, 'odd'))[0]!.compare(odd), 0, 'raw: byte-identical');

    const outcome = await copyPartition(task('odd2', {}, 'decode'), resources());
    assert.equal(outcome.writePath, 'decode');
    assert.notEqual((await rawDocuments(clusters.destination, 'odd2'))[0]!.compare(odd), 0, 'decode: the bytes changed');
  });

  it('resumes after a checkpoint: starts at its _id, skips it, copies nothing before it', async () => {
    const ids = Array.from({ length: 300 }, (_, i) => new Int32(i));
    await fill('resume', ids);
    const checkpointId = ids[119]!;
    const outcome = await copyPartition(
      task('resume', { lastId: packValue(checkpointId), copiedDocs: 120, copiedBytes: 120 * 100 }),
      resources(),
    );
    assert.equal(outcome.status, 'done');
    assert.equal(outcome.copiedDocs, 300, 'totals continue from the checkpoint');
    const copiedIds = (await rawDocuments(clusters.destination, 'resume')).map((doc) => Number(readId(doc)));
    assert.deepEqual(
      copiedIds,
      Array.from({ length: 180 }, (_, i) => i + 120),
    );
  });

  it('tolerates documents already on the destination (a range copied again)', async () => {
    const ids = Array.from({ length: 200 }, (_, i) => `k${String(i).padStart(4, '0')}`);
    await fill('again', ids);
    const already = await clusters.source
      .db(DB)
      .collection<{ _id: string }>('again')
      .find({ _id: { $in: ids.filter((_, i) => i % 3 === 0) } })
      .toArray();
    await clusters.destination.db(DB).collection<{ _id: string }>('again').insertMany(already);
    const outcome = await copyPartition(task('again'), resources());
    assert.equal(outcome.status, 'done');
    assert.deepEqual(await rawDocuments(clusters.destination, 'again'), await rawDocuments(clusters.source, 'again'));
  });

  it('fails loudly when the destination refuses a write for another reason', async () => {
    await fill('refused', [new Int32(1), new Int32(2)]);
    await clusters.destination.db(DB).createCollection('refused', { viewOn: 'elsewhere', pipeline: [] });
    await assert.rejects(copyPartition(task('refused'), resources()), (error: Error) => /view/i.test(error.message));
  });

  it('stops at a batch boundary with its writes done and its position checkpointed, then resumes to the end', async () => {
    const ids = Array.from({ length: 2000 }, (_, i) => new Int32(i));
    await fill('stop', ids);
    const recorder = resources((r) => {
      if (r.checkpoints.length === 2) r.stop.raise();
    });
    const settings = { batchBytes: 4 * 1024, batchesInFlight: 2, checkpointIntervalMs: 0, writePath: 'raw' as const };
    const stopped = await copyPartition(task('stop', { averageDocumentBytes: 10_000, settings }), recorder);
    assert.equal(stopped.status, 'stopped');
    assert.ok(stopped.lastId !== undefined && stopped.copiedDocs < ids.length, `stopped after ${stopped.copiedDocs} documents`);
    const last = recorder.checkpoints.at(-1)!;
    assert.equal(last.lastId, stopped.lastId, 'the final position is checkpointed');
    // Everything up to the checkpoint is on the destination.
    const upTo = Number(unpackValue(stopped.lastId!));
    const present = new Set((await rawDocuments(clusters.destination, 'stop')).map((doc) => Number(readId(doc))));
    for (let i = 0; i <= upTo; i++) assert.ok(present.has(i), `document ${i} is written`);

    const resumed = await copyPartition(
      task('stop', { lastId: stopped.lastId, copiedDocs: stopped.copiedDocs, copiedBytes: stopped.copiedBytes, settings }),
      resources(),
    );
    assert.equal(resumed.status, 'done');
    assert.equal(resumed.copiedDocs, ids.length);
    assert.deepEqual(await rawDocuments(clusters.destination, 'stop'), await rawDocuments(clusters.source, 'stop'));
  });

  it('copies a capped collection whole, in natural (insertion) order', async () => {
    await clusters.source.db(DB).createCollection('capped', { capped: true, size: 1024 * 1024 });
    const ids = [new Int32(5), 'b', new Int32(1), new ObjectId(), 'a'];
    for (const _id of ids)
      await clusters.source
        .db(DB)
        .collection('capped')
        .insertOne({ _id } as Document);
    await clusters.destination.db(DB).createCollection('capped', { capped: true, size: 1024 ** 5 });
    const outcome = await copyPartition(task('capped', { order: 'natural' }), resources());
    assert.equal(outcome.status, 'done');
    assert.equal(outcome.lastId, undefined, 'natural order has no resumable position');
    const natural = (client: MongoClient) =>
      client
        .db(DB)
        .collection('capped')
        .find({}, { hint: { $natural: 1 }, raw: true })
        .toArray();
    const copied = (await natural(clusters.destination)) as unknown as Buffer[];
    assert.deepEqual(copied, (await natural(clusters.source)) as unknown as Buffer[]);
    assert.deepEqual(
      copied.map((doc) => readId(doc)),
      ids,
      'in insertion order',
    );
  });
});

/** `{_id: 1, u: undefined, dup: 1, dup: 2, p: DBPointer}` built byte by byte (no JavaScript value holds it). */
function oddDocument(): Buffer {
  const element = (type: number, name: string, value: Buffer) => Buffer.concat([Buffer.from([type]), Buffer.from(`${name}\0`), value]);
  const int32 = (v: number) => {
    const b = Buffer.alloc(4);
    b.writeInt32LE(v);
    return b;
  };
  const namespace = Buffer.from('db.coll\0');
  const body = Buffer.concat([
    element(0x10, '_id', int32(1)),
    element(0x06, 'u', Buffer.alloc(0)),
    element(0x10, 'dup', int32(1)),
    element(0x10, 'dup', int32(2)),
    element(0x0c, 'p', Buffer.concat([int32(namespace.length), namespace, Buffer.alloc(12, 7)])),
    Buffer.from([0]),
  ]);
  return Buffer.concat([int32(body.length + 4), body]);
}
