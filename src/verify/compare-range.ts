/**
 * Compares one `_id` range of a collection on the two clusters, document by document, where the
 * documents are: both sides are read through the `_id` index in `_id` order as raw BSON (the same
 * reads as the copy's: `find` with `hint`, `sort`, `min`/`max` index bounds), and walked together
 * like a merge. Two documents with the same `_id` are compared byte for byte (a value, a type or
 * the order of fields differs: `different`); an `_id` only one side holds is `missing` (on the
 * destination) or `extra`. Nothing is decoded but the `_id`s of documents whose `_id` bytes differ.
 *
 * Why bytes and not hashes: both sides are streamed through this thread anyway, and comparing two
 * documents costs a memcmp (~0.1 µs for 250 bytes) where hashing each costs 1–1.6 µs with node's
 * crypto (bench/RESULTS.md, "Verification: how to hash"); a per-range hash would also need a second
 * read of every range that differs, to narrow it down to documents. The comparison itself is the
 * narrowing: a range that differs gives the `_id`s that do.
 *
 * A task reads at most `maxBytes` from each cluster and returns at most `maxDifferences`
 * differences, then says `more`, with the last `_id` it compared: the next task continues after
 * it (the caller records that position, so a restart resumes there). Memory: one reply per side.
 *
 * The reads are not one snapshot: the destination lags the source by change-event application,
 * so a document changed meanwhile differs here. Differences are therefore only candidates: the
 * verifier checks each again once change events through `sourceTime` (the latest time a source
 * reply reported) are applied (src/verify/recheck.ts).
 */
import type { MongoClient } from 'mongodb';
import { compareBsonValues, findId, readId } from '../bson/index.js';
import { batchDocumentStarts, documentSize, RawCursor, type RawReply } from '../cluster/raw-cursor.js';
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
}

/**
 * One cluster's documents of the range. The next reply is asked for as soon as one arrives, so
 * the cluster works on it while this thread compares (two replies per side at most).
 */
class RangeReader {
  readonly #cursor: RawCursor;
  #next: Promise<RawReply | undefined> | undefined;
  #buffer: Uint8Array = new Uint8Array(0);
  #starts: number[] = [];
  #index = 0;
  #done = false;
  /** Newest `operationTime` of a reply. */
  latestTime: { t: number; i: number } | undefined;
  readonly count: SideCount = { documents: 0, bytes: 0 };

  constructor(client: MongoClient, task: RangeTask) {
    const bounds = partitionFindOptions({ min: unpackValue(task.after ?? task.min), max: unpackValue(task.max) });
    this.#cursor = RawCursor.find(client, task, { ...bounds, sort: { _id: 1 }, batchSize: task.batchSize });
  }

  /** The current document without waiting: undefined at the end of the range, null when the next reply must be awaited (`fill`). */
  peek(): DocumentAt | undefined | null {
    if (this.#index < this.#starts.length) return { buffer: this.#buffer, start: this.#starts[this.#index]! };
    return this.#done ? undefined : null;
  }

  /** Waits for the next reply (after `peek` said null). */
  async fill(): Promise<void> {
    while (this.#index >= this.#starts.length && !this.#done) {
      const reply = await (this.#next ?? this.#cursor.nextReply());
      this.#next = undefined;
      if (reply === undefined) {
        this.#done = true;
        return;
      }
      if (!this.#cursor.exhausted) this.#next = this.#cursor.nextReply();
      const time = reply.reply.operationTime as { high?: number; low?: number; _bsontype?: string } | undefined;
      if (time?._bsontype === 'Timestamp') this.latestTime = { t: time.high!, i: time.low! };
      this.#buffer = reply.cursor;
      this.#starts = batchDocumentStarts(reply.cursor, reply.batch.valueOffset, reply.batch.valueEnd);
      this.#index = 0;
    }
  }

  /** The current document, waiting for a reply if need be. */
  async current(): Promise<DocumentAt | undefined> {
    const doc = this.peek();
    if (doc !== null) return doc;
    await this.fill();
    return this.peek() ?? undefined;
  }

  advance(size: number): void {
    this.#index++;
    this.count.documents++;
    this.count.bytes += size;
  }

  /** Passes the current document without counting it (compared by an earlier task). */
  skip(): void {
    this.#index++;
  }

  async close(): Promise<void> {
    await this.#next?.catch(() => undefined);
    await this.#cursor.close();
  }
}

/** Ranges at most this long are compared in a loop: shorter than a native call's own cost (an ObjectId `_id` is 12 bytes). */
const SHORT_BYTES = 32;

const compareByteRanges = Buffer.prototype.compare;

/**
 * Whether two byte ranges are equal. Twice per document compared (its `_id`, then itself), so no
 * view of either is made: four Buffers a document were most of the verifier's garbage.
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

function idOf(doc: DocumentAt): unknown {
  return readId(doc.buffer, doc.start);
}

/** Compares the range on the two clusters (see the module comment). */
export async function compareRange(source: MongoClient, destination: MongoClient, task: RangeTask): Promise<RangeOutcome> {
  const fromSource = new RangeReader(source, task);
  const fromDestination = new RangeReader(destination, task);
  const differences: RangeDifference[] = [];
  // The last document compared (its reply stays referenced until the next one): its `_id` is
  // decoded once, when the task returns.
  let last: DocumentAt | undefined;
  let status: RangeOutcome['status'] = 'done';
  const take = (side: RangeReader, doc: DocumentAt, size: number): void => {
    side.advance(size);
    last = doc;
  };
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
      const sizeA = documentSize(a.buffer, a.start);
      const sizeB = documentSize(b.buffer, b.start);
      const ida = findId(a.buffer, a.start);
      const idb = findId(b.buffer, b.start);
      const sameId = ida.type === idb.type && sameBytes(a.buffer, ida.valueOffset, ida.valueEnd, b.buffer, idb.valueOffset, idb.valueEnd);
      // Equal as `_id`s but not in bytes (1 and 1.0) is the same document, stored otherwise.
      const order = sameId ? 0 : compareBsonValues(idOf(a), idOf(b));
      if (order === 0) {
        if (!sameId || !sameBytes(a.buffer, a.start, a.start + sizeA, b.buffer, b.start, b.start + sizeB)) {
          differences.push({ id: packValue(idOf(a)), kind: 'different' });
        }
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
  } finally {
    await Promise.all([fromSource.close(), fromDestination.close()]);
  }
  const outcome: RangeOutcome = { status, source: fromSource.count, destination: fromDestination.count, differences };
  if (last !== undefined) outcome.lastId = packValue(idOf(last));
  if (fromSource.latestTime !== undefined) outcome.sourceTime = fromSource.latestTime;
  return outcome;
}
