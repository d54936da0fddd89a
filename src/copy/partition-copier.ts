/**
 * Copies one partition: reads its `_id` range from the source with a raw cursor and writes it to
 * the destination in byte-bounded unordered batches, several batches in flight while reading
 * continues. No document is deserialized: only the last `_id` of each batch is read, by a scan of
 * its bytes, for the checkpoint.
 *
 * Reading: `find` with `hint: {_id: 1}`, `sort: {_id: 1}` (through mongos, shards' results would
 * otherwise interleave) and `min`/`max` index bounds (never `$gte`/`$lt`, which bracket by type),
 * replies kept as bytes (raw-cursor.ts). Resuming after a checkpoint, `min` is the checkpoint's `_id`,
 * and that document is skipped (it is written). Capped collections are read whole in natural
 * order (`hint: {$natural: 1}`); they have no usable checkpoint, so they start over, and the
 * documents already there are tolerated as duplicates.
 *
 * Checkpoints cover only batches that are fully written, with every batch before them (an
 * in-order watermark over the overlapping writes), at most once per `checkpointIntervalMs`, and
 * once more at the end. Memory held: `batchesInFlight` batches being written and the batch being
 * filled, in `batchesInFlight + 1` buffers of `batchBytes` reused from batch to batch and from
 * partition to partition (src/cluster/batch-buffers.ts; a document larger than `batchBytes` gets one of its
 * own), and the current reply (about `batchBytes`, at most 16 MiB), garbage once its documents are
 * copied into batches. Reading on Ferry's own connections (`readPath: 'wire'`, src/cluster/reply-reader.ts)
 * with the `wire` write path, the same `batchesInFlight + 1` buffers, sized for a reply, receive
 * the replies instead, and each reply's documents are written as slices of it (`#issueSlices`):
 * no batch copy, and a buffer goes back only once every write of its slices has settled.
 *
 * Transient failures (src/cluster/errors.ts) restart the read from the watermark, with the cluster
 * layer's retry policy (src/cluster/retry.ts); anything else fails the partition.
 */
import type { Document, MongoClient } from 'mongodb';
import { compareBsonValues, readId } from '../bson/index.js';
import type { PartitionKey, PartitionRow } from '../meta/partitions.js';
import { packValue, unpackDocument, unpackValue } from '../meta/store.js';
import type { HistogramRecorder } from '../metrics/samples.js';
import { partitionFindOptions } from '../plan/partitions.js';
import { BatchBuffers, IdleBatchBuffers } from '../cluster/batch-buffers.js';
import { Batcher, batchLimits, packDocuments, SECTION_ROOM_BYTES, type BatchLimits, type RawBatch } from './batcher.js';
import { openReplyReader, type ReadReply } from '../cluster/reply-reader.js';
import { wireReadable } from '../cluster/wire-connection.js';
import { readBatchSize, replyBufferBytes } from '../cluster/wire-reads.js';
import { RETRY_POLICY, retryDelay, sleep } from '../cluster/retry.js';
import type { SharedCounters, StopFlag } from './shared-state.js';
import { Watermark, type BatchMark } from './watermark.js';
import type { CopySettings, ReadPath, WritePath } from '../config/settings.js';
import { createBatchWriter, lastIdOf, type BatchWriter } from './write-path.js';
import { isTransient } from '../cluster/errors.js';

/**
 * One partition to copy, as the scheduler hands it to a worker (plain data: it crosses threads):
 * its row (bounds and checkpoint packed, totals at the checkpoint) and how to copy it.
 */
export interface PartitionTask extends Pick<
  PartitionRow,
  'key' | 'db' | 'coll' | 'order' | 'min' | 'max' | 'range' | 'lastId' | 'copiedDocs' | 'copiedBytes'
> {
  /** The collection's average document size, to size read batches. */
  averageDocumentBytes: number;
  /**
   * For a natural-order partition: false when the collection is not capped (read in natural order
   * for `detectRandomId` or `copyInNaturalOrder`), so its batches need no order among themselves
   * and go `batchesInFlight` at a time. Absent: taken as capped (one batch at a time, in order).
   */
  capped?: boolean;
  settings: CopySettings;
  /** The shared counter slot this partition's bytes also go to (per-namespace progress). */
  slot?: number;
}

export interface PartitionOutcome {
  /** `done`: the range is copied; `stopped`: asked to stop, checkpointed where it was. */
  status: 'done' | 'stopped';
  /** Final in-order position (absent when nothing was ever written in this range). */
  lastId?: string;
  copiedDocs: number;
  copiedBytes: number;
  /** The write path used. */
  writePath: WritePath;
  /** The read path used (its last pass; absent: `driver`). */
  readPath?: ReadPath;
}

/** What a copy needs from the thread it runs in. */
export interface CopyResources {
  source: MongoClient;
  destination: MongoClient;
  /** Persists a partition's in-order position (the partition table, on the destination). */
  checkpoint(key: PartitionKey, position: { lastId: string; copiedDocs: number; copiedBytes: number }): Promise<void>;
  histograms: HistogramRecorder;
  counters: SharedCounters;
  stop: StopFlag;
  /** The destination's `hello` limits, when known. */
  serverLimits?: { maxMessageSizeBytes?: number; maxWriteBatchSize?: number; maxBsonObjectSize?: number };
  /** This thread's write-batch buffers between partitions (created on the first partition). */
  idleBatchBuffers?: IdleBatchBuffers;
}

/**
 * Share of a batch a lent reply is asked to fill: a reply is written in slices of at most a
 * batch, so a reply just over a batch would leave a small slice, one more insert to wait for; a
 * reply of this share of a batch is rarely over it (the documents of a reply vary little in sum).
 */
const LENT_REPLY_SHARE = 0.9;

/** The in-order position of a partition: where to resume and the totals up to there. */
interface Position {
  lastId?: unknown;
  documents: number;
  bytes: number;
}

export async function copyPartition(task: PartitionTask, resources: CopyResources): Promise<PartitionOutcome> {
  const writer = createBatchWriter(resources.destination.db(task.db), task.coll, task.settings.writePath);
  const natural = task.order === 'natural';
  let position: Position = natural
    ? { documents: 0, bytes: 0 }
    : { lastId: task.lastId === undefined ? undefined : unpackValue(task.lastId), documents: task.copiedDocs, bytes: task.copiedBytes };
  const limits = batchLimits(task.settings.batchBytes, resources.serverLimits);
  // Reading on Ferry's own connections, replies are received into buffers this partition lends;
  // writing on them too, each reply's documents are written from there (`lendReplies`).
  const wireRead = task.settings.readPath === 'wire' && (await wireReadable(resources.source));
  const lendReplies = wireRead && (await writer.takesSharedBatches().catch(() => false));
  const readBytes = lendReplies ? Math.floor(limits.maxBytes * LENT_REPLY_SHARE) : task.settings.batchBytes;
  const replyBytes = replyBufferBytes(task.averageDocumentBytes, readBytes);
  // `batchesInFlight` being written and one being filled (or, lending replies, one being read).
  const idle = (resources.idleBatchBuffers ??= new IdleBatchBuffers());
  const buffers = idle.take(lendReplies ? replyBytes : SECTION_ROOM_BYTES + limits.maxBytes, task.settings.batchesInFlight + 1);
  // Replies not lent to the writes are received into a buffer of their own, from the same shelf.
  const replyBuffers = wireRead && !lendReplies ? idle.take(replyBytes, 1) : undefined;
  const reading: Reading = { lendReplies, limits, readBytes, buffers: lendReplies ? buffers : replyBuffers };
  try {
    // Transient failures in a row without progress; a pass that moved the position starts over
    // from 0, so a long partition survives a few failovers hours apart.
    let failures = 0;
    for (;;) {
      const run = new PartitionRun(task, resources, writer, position, new Batcher(limits, buffers), reading);
      try {
        return await run.copy();
      } catch (error) {
        if (!isTransient(error)) throw error;
        const advanced = !natural && run.position.documents > position.documents;
        failures = advanced ? 1 : failures + 1;
        if (failures > RETRY_POLICY.retries) throw error;
        // Natural order has no resumable position: start over (duplicates are tolerated).
        position = natural ? { documents: 0, bytes: 0 } : run.position;
        await sleep(retryDelay(failures - 1));
      }
    }
  } finally {
    // Every batch has settled by now (a pass waits for its writes, even when it fails).
    idle.put(buffers);
    if (replyBuffers !== undefined) idle.put(replyBuffers);
  }
}

/** How a partition reads: on the driver (no buffers), or on wire connections into `buffers`, lent to the writes or not. */
interface Reading {
  buffers: BatchBuffers | undefined;
  lendReplies: boolean;
  /** The batches' limits (a lent reply is written in slices within them). */
  limits: BatchLimits;
  /** Bytes of documents a reply is asked for (`readBatchSize`). */
  readBytes: number;
}

/** One pass over a partition from a position; a transient failure ends it and a new pass resumes. */
class PartitionRun {
  readonly #task: PartitionTask;
  readonly #resources: CopyResources;
  readonly #writer: BatchWriter;
  readonly #watermark: Watermark;
  readonly #inFlight = new Set<Promise<void>>();
  readonly #batcher: Batcher;
  readonly #reading: Reading;
  #failure: unknown;
  #sequence = 0;
  #readPath: ReadPath = 'driver';
  /** Totals of the batches issued so far (in read order). */
  #issuedDocuments: number;
  #issuedBytes: number;
  #lastCheckpointAt = Date.now();
  #checkpointing: Promise<void> | undefined;
  #checkpointed: BatchMark | undefined;
  readonly #start: Position;

  constructor(task: PartitionTask, resources: CopyResources, writer: BatchWriter, start: Position, batcher: Batcher, reading: Reading) {
    this.#task = task;
    this.#batcher = batcher;
    this.#reading = reading;
    this.#resources = resources;
    this.#writer = writer;
    this.#start = start;
    this.#issuedDocuments = start.documents;
    this.#issuedBytes = start.bytes;
    this.#watermark = new Watermark(
      start.lastId === undefined ? undefined : { lastId: start.lastId, documents: start.documents, bytes: start.bytes },
    );
  }

  /** The in-order position reached (where a new pass resumes). */
  get position(): Position {
    const mark = this.#watermark.current;
    return mark === undefined ? this.#start : { lastId: mark.lastId, documents: mark.documents, bytes: mark.bytes };
  }

  async copy(): Promise<PartitionOutcome> {
    const { source, stop, histograms } = this.#resources;
    const task = this.#task;
    const resumeAfter = this.#start.lastId;
    // Checkpoints assume `_id` order: `sort` makes mongos merge the shards' results in that order
    // (on a replica set the hinted index scan gives it anyway). Natural order is not `_id` order.
    // A chunk read on its shard: the shard-key index between the chunk's bounds, which leaves out
    // the orphans the shard holds of other shards' chunks.
    const bounds =
      task.range !== undefined
        ? (unpackDocument(task.range) as { hint: Document; min: Document; max: Document })
        : task.order === 'natural'
          ? { hint: { $natural: 1 } }
          : { ...partitionFindOptions({ min: resumeAfter ?? unpackValue(task.min), max: unpackValue(task.max) }), sort: { _id: 1 } };
    const cursor = openReplyReader(
      source,
      task,
      { ...bounds, batchSize: readBatchSize(task.averageDocumentBytes, this.#reading.readBytes) },
      this.#reading.buffers,
    );
    this.#readPath = cursor.path;
    const batcher = this.#batcher;
    let skipResumePoint = resumeAfter !== undefined;
    let stopped = false;
    try {
      for (;;) {
        if (stop.raised) {
          stopped = true;
          break;
        }
        const started = performance.now();
        const reply = await cursor.next();
        if (reply === undefined) break;
        histograms.record('copyReadLatencyMs', performance.now() - started);
        const { buffer, starts } = reply;
        let next = 0;
        if (skipResumePoint && starts.length > 0) {
          skipResumePoint = false;
          // The range restarts at the checkpoint's `_id` (inclusive): that document is written.
          if (compareBsonValues(readId(buffer, starts[0]!), resumeAfter) === 0) next = 1;
        }
        try {
          if (this.#reading.lendReplies) await this.#issueSlices(reply, next);
          else {
            // The reply is this loop's alone (nothing else reads it once its documents are batched).
            while (next < starts.length) {
              next = batcher.addDocuments(buffer, starts, next);
              // The full batch goes out before the next one takes a buffer (see BatchBuffers).
              if (next < starts.length) await this.#issue(batcher.flush()!);
            }
          }
        } finally {
          cursor.done(reply);
        }
      }
      if (!stopped) {
        const last = batcher.flush();
        if (last !== undefined) await this.#issue(last);
      }
      await this.#drain();
    } catch (error) {
      // Let the writes and the checkpoint still in flight settle, so a retry starts from a quiet
      // position (a late checkpoint of this pass must not land after the next pass's).
      await Promise.allSettled(this.#inFlight);
      await this.#checkpointing;
      throw error;
    } finally {
      // A batch left unwritten (stopped, or failed) gives its buffer back too.
      const unwritten = batcher.flush();
      if (unwritten !== undefined) batcher.release(unwritten);
      await cursor.close();
    }
    // A stopped partition resumes from its checkpoint; a finished one is recorded by the scheduler.
    if (stopped) await this.#checkpoint(true);
    else await this.#checkpointing;
    const mark = this.#watermark.current;
    const outcome: PartitionOutcome = {
      status: stopped ? 'stopped' : 'done',
      copiedDocs: mark?.documents ?? this.#start.documents,
      copiedBytes: mark?.bytes ?? this.#start.bytes,
      writePath: this.#writer.path,
      readPath: this.#readPath,
    };
    if (mark !== undefined && task.order === 'id') outcome.lastId = packValue(mark.lastId);
    return outcome;
  }

  /**
   * Writes a lent reply's documents from `from` on as batches that are slices of the reply itself:
   * each run of documents is moved together in place (over the array's element headers) and
   * written from there, each write holding the reply's buffer until it settles. A later run is
   * packed after the earlier ones' bytes, so it never touches a slice still being written.
   */
  async #issueSlices(reply: ReadReply, from: number): Promise<void> {
    const { buffer, starts } = reply;
    const owner = reply.owner!;
    for (let next = from; next < starts.length;) {
      const start = starts[next]!;
      const run = packDocuments(buffer, starts, next, this.#reading.limits);
      next = run.next;
      this.#reading.buffers!.share(owner);
      await this.#issue({
        bytes: buffer.subarray(start, start + run.bytes),
        count: run.count,
        lastStart: run.lastStart,
        buffer: owner,
        shared: true,
        checked: true,
      });
    }
  }

  /**
   * Starts writing a batch once fewer than `batchesInFlight` are being written. The batch's
   * buffer goes back to the batcher once its write has settled (or at once if it is not written).
   * A capped collection (natural order) writes one batch at a time: its documents must land in the
   * source's insertion order, which decides what the destination evicts first once commit restores
   * its size.
   */
  async #issue(batch: RawBatch): Promise<void> {
    const batcher = this.#batcher;
    const inOrder = this.#task.order === 'natural' && this.#task.capped !== false;
    const maxInFlight = inOrder ? 1 : this.#task.settings.batchesInFlight;
    while (this.#inFlight.size >= maxInFlight && this.#failure === undefined) {
      await Promise.race(this.#inFlight);
    }
    if (this.#failure !== undefined) {
      batcher.release(batch);
      throw this.#failure;
    }
    const sequence = this.#sequence++;
    const bytes = batch.bytes.byteLength;
    this.#issuedDocuments += batch.count;
    this.#issuedBytes += bytes;
    const mark: BatchMark = { lastId: lastIdOf(batch), documents: this.#issuedDocuments, bytes: this.#issuedBytes };
    const { histograms, counters } = this.#resources;
    histograms.record('copyBatchBytes', bytes);
    const started = performance.now();
    const write: Promise<void> = this.#writer.write(batch).then(
      () => {
        batcher.release(batch);
        histograms.record('copyWriteLatencyMs', performance.now() - started);
        counters.add(bytes, batch.count, this.#task.slot);
        if (this.#watermark.complete(sequence, mark) !== undefined) void this.#checkpoint(false);
      },
      (error: unknown) => {
        batcher.release(batch);
        this.#failure ??= error;
      },
    );
    const tracked = write.finally(() => this.#inFlight.delete(tracked));
    this.#inFlight.add(tracked);
  }

  /** Waits for every batch being written; throws the first failure. */
  async #drain(): Promise<void> {
    while (this.#inFlight.size > 0) await Promise.race(this.#inFlight);
    if (this.#failure !== undefined) throw this.#failure;
  }

  /**
   * Persists the watermark when it moved and the interval has passed (or `final`). One checkpoint
   * write at a time; a failure of one fails the pass like a failed batch.
   */
  async #checkpoint(final: boolean): Promise<void> {
    if (this.#task.order === 'natural') return;
    if (final) await this.#checkpointing;
    else if (this.#checkpointing !== undefined || Date.now() - this.#lastCheckpointAt < this.#task.settings.checkpointIntervalMs) return;
    const mark = this.#watermark.current;
    if (mark === undefined || mark === this.#checkpointed) return;
    this.#lastCheckpointAt = Date.now();
    const writing = this.#resources
      .checkpoint(this.#task.key, { lastId: packValue(mark.lastId), copiedDocs: mark.documents, copiedBytes: mark.bytes })
      .then(
        () => {
          this.#checkpointed = mark;
        },
        (error: unknown) => {
          this.#failure ??= error;
        },
      )
      .finally(() => {
        this.#checkpointing = undefined;
      });
    this.#checkpointing = writing;
    if (final) {
      await writing;
      if (this.#failure !== undefined) throw this.#failure;
    }
  }
}
