/**
 * Compares one `_id` range of a collection on the two clusters, document by document, where the
 * documents are: both sides are read through the `_id` index in `_id` order as raw BSON (the same
 * reads as the copy's: `find` with `hint`, `sort`, `min`/`max` index bounds), and walked together
 * like a merge. Two documents with the same `_id` are compared byte for byte (a value, a type or
 * the order of fields differs: `different`); an `_id` only one side holds is `missing` (on the
 * destination) or `extra`. Where both replies hold the same documents, in the same places, they
 * are compared in one span (`compareRun`); nothing is decoded but the `_id`s of documents that differ.
 *
 * Why bytes and not hashes: both sides are streamed through this thread anyway, and comparing two
 * documents costs a memcmp (~0.1 µs for 250 bytes) where hashing each costs 1–1.6 µs with node's
 * crypto (bench/RESULTS.md, "Verification: how to hash"); a per-range hash would also need a second
 * read of every range that differs, to narrow it down to documents. The comparison itself is the
 * narrowing: a range that differs gives the `_id`s that do.
 *
 * A task reads at most `maxBytes` from each cluster and returns at most `maxDifferences`
 * differences, then says `more`, with the last `_id` it compared: the next task continues after
 * it (the caller records that position, so a restart resumes there). Memory: two replies per side
 * and one on its way; read on Ferry's own connections (`readPath: 'wire'`), in three buffers per
 * side kept by the thread from task to task.
 *
 * The reads are not one snapshot: the destination lags the source by change-event application,
 * so a document changed meanwhile differs here. Differences are therefore only candidates: the
 * verifier checks each again once change events through `sourceTime` (the latest time a source
 * reply reported) are applied (src/verify/recheck.ts).
 */
import type { MongoClient } from 'mongodb';
import { compareBsonValues, findId, readId } from '../bson/index.js';
import type { Timestamp } from 'bson';
import { documentSize } from '../cluster/raw-cursor.js';
import { openReplyReader, type ReadReply, type ReplyReader } from '../cluster/reply-reader.js';
import { wireReadable } from '../cluster/wire-connection.js';
import type { ReadPath } from '../config/settings.js';
import { IdleBatchBuffers, type BatchBuffers } from '../cluster/batch-buffers.js';
import type { Namespace } from '../domain/namespaces.js';
import { packValue, unpackValue } from '../meta/store.js';
import { partitionFindOptions } from '../plan/partitions.js';

/** One range to compare (plain data: it crosses to a worker thread). */
export interface RangeTask extends Namespace {
  /** Inclusive lower `_id` bound, packed (`packValue`); MinKey for the first range. */
  min: string;
  /** Exclusive upper bound, packed; MaxKey (unbounded) for the last range. */
  max: string;
  /** Continue after this `_id` (packed): a previous task compared everything up to it. */
  after?: string;
  /** Bytes read from each cluster before the task returns `more`. */
  maxBytes: number;
  /** Differences found before the task returns `more`. */
  maxDifferences: number;
  /** Documents per reply. */
  batchSize: number;
  /**
   * `wire`: each cluster is read on Ferry's own connections where they serve it, each reply
   * received into a buffer reused from reply to reply (as the copy reads, src/cluster/reply-reader.ts);
   * else, and by default, through the driver.
   */
  readPath?: ReadPath;
  /** Bytes of a buffer a reply is received into on the `wire` path (a larger reply gets one of its own). Default 1 MiB. */
  replyBytes?: number;
}

export type DocumentDifferenceKind = 'missing' | 'extra' | 'different';

export interface RangeDifference {
  /** The `_id`, packed. */
  id: string;
  kind: DocumentDifferenceKind;
}

/** Documents and bytes read from one cluster. */
export interface SideCount {
  documents: number;
  bytes: number;
}

/** A document in a reply: its buffer and where it starts. */
interface DocumentAt {
  buffer: Uint8Array;
  start: number;
}

export interface RangeOutcome {
  /** `done`: the range is compared to its end; `more`: a limit was reached, continue after `lastId`. */
  status: 'done' | 'more';
  /** The last `_id` compared, packed (absent when the range held nothing). */
  lastId?: string;
  source: SideCount;
  destination: SideCount;
  differences: RangeDifference[];
  /** The latest source time a source reply reported, as `{t, i}` (plain data across threads). */
  sourceTime?: { t: number; i: number };
  /** How each cluster was read. */
  readPaths: { source: ReadPath; destination: ReadPath };
}

/** A Timestamp as plain data (it crosses threads). */
function timeOf(time: Timestamp): { t: number; i: number } {
  return { t: time.high, i: time.low };
}

/**
 * One cluster's documents of the range. The next reply is asked for as soon as one arrives, so
 * the cluster works on it while this thread compares (two replies per side at most, and one on
 * its way). On the wire path the buffer of the reply before the current one stays lent too: the
 * last document compared (`compareSides`' `last`) may lie in it until the next is taken.
 */
class RangeReader {
  readonly #replies: ReplyReader;
  #next: Promise<ReadReply | undefined> | undefined;
  /** The previous and current replies (on the wire path, their buffers stay lent until `done`). */
  #held: ReadReply[] = [];
  #buffer: Uint8Array = new Uint8Array(0);
  #starts: number[] = [];
  #index = 0;
  #done = false;
  /** Replies received (a new one on either side lets `compareRun` try again). */
  replies = 0;
  /** Newest `operationTime` of a reply. */
  latestTime: { t: number; i: number } | undefined;
  readonly count: SideCount = { documents: 0, bytes: 0 };
  readonly path: ReadPath;

  /** `buffers` (at least three) make it read on the wire path. */
  constructor(client: MongoClient, task: RangeTask, buffers?: BatchBuffers) {
    const bounds = partitionFindOptions({ min: unpackValue(task.after ?? task.min), max: unpackValue(task.max) });
    this.#replies = openReplyReader(client, task, { ...bounds, sort: { _id: 1 }, batchSize: task.batchSize }, buffers);
    this.path = this.#replies.path;
  }

  /** The current document without waiting: undefined at the end of the range, null when the next reply must be awaited (`fill`). */
  peek(): DocumentAt | undefined | null {
    if (this.#index < this.#starts.length) return { buffer: this.#buffer, start: this.#starts[this.#index]! };
    return this.#done ? undefined : null;
  }

  /** Waits for the next reply (after `peek` said null). */
  async fill(): Promise<void> {
    while (this.#index >= this.#starts.length && !this.#done) {
      const reply = await (this.#next ?? this.#replies.next());
      this.#next = undefined;
      if (reply === undefined) {
        this.#done = true;
        return;
      }
      this.#held.push(reply);
      // Two replies back: nothing points into it any more, so the next read may use its buffer.
      if (this.#held.length > 2) this.#replies.done(this.#held.shift()!);
      if (!this.#replies.exhausted) this.#next = this.#replies.next();
      if (reply.operationTime !== undefined) this.latestTime = timeOf(reply.operationTime);
      this.#buffer = reply.buffer;
      this.#starts = reply.starts;
      this.#index = 0;
      this.replies++;
    }
  }

  /** The current reply's documents from the current one on (`compareRun`). */
  rest(): { buffer: Uint8Array; starts: readonly number[]; index: number } {
    return { buffer: this.#buffer, starts: this.#starts, index: this.#index };
  }

  /** The current document, waiting for a reply if need be. */
  async current(): Promise<DocumentAt | undefined> {
    const doc = this.peek();
    if (doc !== null) return doc;
    await this.fill();
    return this.peek() ?? undefined;
  }

  advance(size: number, documents = 1): void {
    this.#index += documents;
    this.count.documents += documents;
    this.count.bytes += size;
  }

  /** Passes the current document without counting it (compared by an earlier task). */
  skip(): void {
    this.#index++;
  }

  /** Kills the cursor; every lent buffer is free once this resolves (no read is left on its way). */
  async close(): Promise<void> {
    const pending = await this.#next?.catch(() => undefined);
    if (pending !== undefined) this.#held.push(pending);
    await this.#replies.close();
    for (const reply of this.#held.splice(0)) this.#replies.done(reply);
  }
}

/** Ranges at most this long are compared in a loop: shorter than a native call's own cost (an ObjectId `_id` is 12 bytes). */
const SHORT_BYTES = 32;

const compareByteRanges = Buffer.prototype.compare;

/**
 * Whether two byte ranges are equal. Up to twice per document compared one by one (itself, then
 * its `_id` when it differs), so no view of either is made (four Buffers a document otherwise).
 */
function sameBytes(a: Uint8Array, aStart: number, aEnd: number, b: Uint8Array, bStart: number, bEnd: number): boolean {
  const length = aEnd - aStart;
  if (length !== bEnd - bStart) return false;
  if (length <= SHORT_BYTES) {
    for (let i = 0; i < length; i++) if (a[aStart + i] !== b[bStart + i]) return false;
    return true;
  }
  return compareByteRanges.call(a, b, bStart, bEnd, aStart, aEnd) === 0;
}

/**
 * Compares at once the documents both readers' current replies hold from their current ones on,
 * up to `maxBytes` read: when the two spans are the same bytes, every document in them is the same
 * document (the first length prefixes agree, so do the boundaries, each document and its `_id`).
 * The spans include the replies' array keys between documents, so this holds only where the two
 * replies are aligned — as they are when the copy is faithful: both sides are read with one batch
 * size. Returns the last document passed, or undefined: compare one by one.
 */
function compareRun(fromSource: RangeReader, fromDestination: RangeReader, maxBytes: number): DocumentAt | undefined {
  const a = fromSource.rest();
  const b = fromDestination.rest();
  const available = Math.min(a.starts.length - a.index, b.starts.length - b.index);
  // As compareSides' limit: a document is taken while fewer than `maxBytes` were read before it.
  const readBefore = Math.max(fromSource.count.bytes, fromDestination.count.bytes);
  let count = 0;
  let bytes = 0;
  let lastSize = 0;
  while (count < available && readBefore + bytes < maxBytes) {
    lastSize = documentSize(a.buffer, a.starts[a.index + count]!);
    bytes += lastSize;
    count++;
  }
  if (count < 2) return undefined;
  const aStart = a.starts[a.index]!;
  const aEnd = a.starts[a.index + count - 1]! + lastSize;
  const bStart = b.starts[b.index]!;
  const bLast = b.starts[b.index + count - 1]!;
  const bEnd = bLast + documentSize(b.buffer, bLast);
  if (!sameBytes(a.buffer, aStart, aEnd, b.buffer, bStart, bEnd)) return undefined;
  fromSource.advance(bytes, count);
  fromDestination.advance(bytes, count);
  return { buffer: a.buffer, start: a.starts[a.index + count - 1]! };
}

function idOf(doc: DocumentAt): unknown {
  return readId(doc.buffer, doc.start);
}

/** Compares the range on the two clusters (see the module comment). */
export async function compareRange(source: MongoClient, destination: MongoClient, task: RangeTask): Promise<RangeOutcome> {
  const [sourceBuffers, destinationBuffers] = await Promise.all([replyBuffersFor(source, task), replyBuffersFor(destination, task)]);
  try {
    return await compareSides(new RangeReader(source, task, sourceBuffers), new RangeReader(destination, task, destinationBuffers), task);
  } finally {
    // Both readers are closed by now: nothing is received into these buffers any more.
    for (const buffers of [sourceBuffers, destinationBuffers]) if (buffers !== undefined) idleReplyBuffers.put(buffers);
  }
}

/** This thread's reply buffers between range tasks (one set per side of each task running). */
const idleReplyBuffers = new IdleBatchBuffers();

const DEFAULT_REPLY_BYTES = 1024 * 1024;

/** Buffers to read `client`'s side of `task` into on the wire path, or undefined: the driver reads. */
async function replyBuffersFor(client: MongoClient, task: RangeTask): Promise<BatchBuffers | undefined> {
  if (task.readPath !== 'wire' || !(await wireReadable(client))) return undefined;
  // The previous reply, the current one, and the next on its way.
  return idleReplyBuffers.take(task.replyBytes ?? DEFAULT_REPLY_BYTES, 3);
}

async function compareSides(fromSource: RangeReader, fromDestination: RangeReader, task: RangeTask): Promise<RangeOutcome> {
  const differences: RangeDifference[] = [];
  // The last document compared (its reply stays referenced until the next one): its `_id` is
  // decoded once, when the task returns.
  let last: DocumentAt | undefined;
  let lastId: string | undefined;
  let status: RangeOutcome['status'] = 'done';
  const take = (side: RangeReader, doc: DocumentAt, size: number): void => {
    side.advance(size);
    last = doc;
  };
  // The replies (source's, destination's) over which a run last failed: one by one until either changes.
  let runFailedAt = [-1, -1];
  try {
    // The range restarts at `after` (inclusive): that document was compared already.
    const skipId = task.after === undefined ? undefined : unpackValue(task.after);
    for (const side of [fromSource, fromDestination]) {
      const first = skipId === undefined ? undefined : await side.current();
      if (first !== undefined && compareBsonValues(idOf(first), skipId) === 0) side.skip();
    }
    for (;;) {
      if (differences.length >= task.maxDifferences || Math.max(fromSource.count.bytes, fromDestination.count.bytes) >= task.maxBytes) {
        status = 'more';
        break;
      }
      let a = fromSource.peek();
      let b = fromDestination.peek();
      if (a === null || b === null) {
        await Promise.all([a === null ? fromSource.fill() : undefined, b === null ? fromDestination.fill() : undefined]);
        a = fromSource.peek() ?? undefined;
        b = fromDestination.peek() ?? undefined;
      }
      if (a === undefined && b === undefined) break;
      if (a === undefined || b === undefined) {
        const only = (a ?? b)!;
        differences.push({ id: packValue(idOf(only)), kind: a !== undefined ? 'missing' : 'extra' });
        take(a !== undefined ? fromSource : fromDestination, only, documentSize(only.buffer, only.start));
        continue;
      }
      if (runFailedAt[0] !== fromSource.replies || runFailedAt[1] !== fromDestination.replies) {
        const passed = compareRun(fromSource, fromDestination, task.maxBytes);
        if (passed !== undefined) {
          last = passed;
          continue;
        }
        runFailedAt = [fromSource.replies, fromDestination.replies];
      }
      const sizeA = documentSize(a.buffer, a.start);
      const sizeB = documentSize(b.buffer, b.start);
      if (sizeA === sizeB && sameBytes(a.buffer, a.start, a.start + sizeA, b.buffer, b.start, b.start + sizeB)) {
        fromDestination.advance(sizeB);
        take(fromSource, a, sizeA);
        continue;
      }
      const ida = findId(a.buffer, a.start);
      const idb = findId(b.buffer, b.start);
      const sameId = ida.type === idb.type && sameBytes(a.buffer, ida.valueOffset, ida.valueEnd, b.buffer, idb.valueOffset, idb.valueEnd);
      // Equal as `_id`s but not in bytes (1 and 1.0) is the same document, stored otherwise.
      const order = sameId ? 0 : compareBsonValues(idOf(a), idOf(b));
      if (order === 0) {
        differences.push({ id: packValue(idOf(a)), kind: 'different' });
        fromDestination.advance(sizeB);
        take(fromSource, a, sizeA);
      } else if (order < 0) {
        differences.push({ id: packValue(idOf(a)), kind: 'missing' });
        take(fromSource, a, sizeA);
      } else {
        differences.push({ id: packValue(idOf(b)), kind: 'extra' });
        take(fromDestination, b, sizeB);
      }
    }
    // Read before the readers close: on the wire path their buffers are lent again after that.
    lastId = last === undefined ? undefined : packValue(idOf(last));
  } finally {
    await Promise.all([fromSource.close(), fromDestination.close()]);
  }
  const outcome: RangeOutcome = {
    status,
    source: fromSource.count,
    destination: fromDestination.count,
    differences,
    readPaths: { source: fromSource.path, destination: fromDestination.path },
  };
  if (lastId !== undefined) outcome.lastId = lastId;
  if (fromSource.latestTime !== undefined) outcome.sourceTime = fromSource.latestTime;
  return outcome;
}
