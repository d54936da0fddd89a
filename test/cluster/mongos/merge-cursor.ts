/**
 * The router's cursors over shard cursors (mongos's AsyncResultsMerger): documents come from each
 * shard's cursor as raw bytes and leave in the router's batches as the same bytes. Without a sort
 * the shards' results follow each other; with one, the router merges the shards' sorted streams,
 * reading only the sort fields of each document. `skip` and `limit` apply to the merged stream;
 * a projection the shards could not apply (it would drop sort fields) is applied here.
 */
import { Long } from 'bson';
import { type Batch, type BatchRequest, MAX_BATCH_BYTES, type ServerCursor } from '../cursor.js';
import { ServerError } from '../errors.js';
import { decodeElement, fieldDecoder, findElement, promoted, typed } from '../raw.js';
import type { Projection } from '../query/projection.js';
import { type SortField, sortKey } from '../query/sort.js';
import { compareValues } from '../bson-order.js';
import type { RouterContext } from './commands.js';
import { runOnShard } from './forward.js';

/** One batch of a shard's cursor reply, documents as views of the reply. */
export interface ShardBatch {
  id: Long;
  ns: string;
  docs: Buffer[];
  postBatchResumeToken?: Record<string, unknown>;
}

/** The raw documents of a BSON array value starting at `at`. */
function arrayDocs(buf: Buffer, at: number): Buffer[] {
  const docs: Buffer[] = [];
  const end = at + buf.readInt32LE(at) - 1;
  for (let p = at + 4; p < end;) {
    const type = buf[p]!;
    const nameEnd = buf.indexOf(0, p + 1);
    const valueAt = nameEnd + 1;
    const length = buf.readInt32LE(valueAt);
    if (type === 0x03) docs.push(buf.subarray(valueAt, valueAt + length));
    p = valueAt + length;
  }
  return docs;
}

/** Reads a `{cursor: {firstBatch|nextBatch, id, ns, ...}}` reply without decoding its documents. */
export function readCursorReply(raw: Buffer): ShardBatch {
  const el = findElement(raw, 'cursor');
  if (!el || el.type !== 0x03) throw new ServerError('InternalError', 'shard reply has no cursor');
  const nameEnd = raw.indexOf(0, el.start + 1);
  const cursor = raw.subarray(nameEnd + 1, el.end);
  const batch = findElement(cursor, 'firstBatch') ?? findElement(cursor, 'nextBatch');
  const docs = batch ? arrayDocs(cursor, cursor.indexOf(0, batch.start + 1) + 1) : [];
  const idElement = findElement(cursor, 'id');
  const id = idElement ? Long.fromValue(decodeElement(cursor, idElement, typed) as Long) : Long.fromNumber(0);
  const nsElement = findElement(cursor, 'ns');
  const ns = nsElement ? String(decodeElement(cursor, nsElement)) : '';
  const pbrt = findElement(cursor, 'postBatchResumeToken');
  return { id, ns, docs, postBatchResumeToken: pbrt ? (decodeElement(cursor, pbrt, typed) as Record<string, unknown>) : undefined };
}

/** One shard's part of a merged cursor. */
export interface CursorSource {
  shard: string;
  id: Long;
  /** The getMore `collection` (the shard cursor's ns after the database). */
  collection: string;
  buffer: Buffer[];
  keys: unknown[][];
  at: number;
}

export interface MergeOptions {
  sort?: SortField[];
  skip?: number;
  /** 0: no limit. */
  limit?: number;
  projection?: Projection;
}

/** Kills the shard cursors still open among `sources` (best effort, not awaited). */
export function killShardCursors(ctx: RouterContext, sources: { shard: string; id: Long; collection: string }[]): void {
  for (const source of sources) {
    if (source.id.isZero()) continue;
    const id = source.id;
    source.id = Long.fromNumber(0);
    void ctx.router
      .shard(source.shard)
      .client.run(ctx.db, { killCursors: source.collection, cursors: [id] })
      .catch(() => undefined);
  }
}

export function sourceOf(shard: string, batch: ShardBatch): CursorSource {
  return { shard, id: batch.id, collection: batch.ns.slice(batch.ns.indexOf('.') + 1), buffer: batch.docs, keys: [], at: 0 };
}

/** A cursor the router serves; getMores need the client's request (its session fields). */
export interface RouterCursor extends ServerCursor {
  nextBatch(request: BatchRequest, ctx?: RouterContext): Promise<Batch>;
}

export class MergedCursor implements RouterCursor {
  private skipped = 0;
  private returned = 0;
  private readonly decodeSortFields: ((doc: Buffer) => Record<string, unknown>) | undefined;
  private closed = false;

  constructor(
    private ctx: RouterContext,
    readonly ns: string,
    private readonly sources: CursorSource[],
    private readonly options: MergeOptions = {},
  ) {
    const sort = options.sort;
    this.decodeSortFields =
      sort && sort.length > 0 ? fieldDecoder([...new Set(sort.map((f) => f.path.split('.')[0]!))], promoted) : undefined;
  }

  private live(source: CursorSource): boolean {
    return source.at < source.buffer.length || !source.id.isZero();
  }

  /** Fetches the next batch of every source whose buffer is empty (and `all`: of the one needed). */
  private async fill(sources: CursorSource[]): Promise<void> {
    await Promise.all(
      sources.map(async (source) => {
        const reply = await runOnShard(this.ctx, source.shard, { getMore: source.id, collection: source.collection }, [], this.ctx.db);
        if (!reply.ok) throw reply.error();
        const batch = readCursorReply(reply.raw);
        source.id = batch.id;
        source.buffer = batch.docs;
        source.keys = [];
        source.at = 0;
      }),
    );
  }

  private keyOf(source: CursorSource): unknown[] {
    let key = source.keys[source.at];
    if (!key) {
      const doc = this.decodeSortFields!(source.buffer[source.at]!);
      key = this.options.sort!.map((f) => sortKey(doc, f));
      source.keys[source.at] = key;
    }
    return key;
  }

  /** The source holding the next document, fetching as needed; undefined when all are done. */
  private async next(): Promise<CursorSource | undefined> {
    for (;;) {
      const empty = this.sources.filter((s) => s.at >= s.buffer.length && !s.id.isZero());
      if (this.options.sort) {
        // Every live source must show its next document before the smallest can be chosen.
        if (empty.length > 0) {
          await this.fill(empty);
          continue;
        }
        let best: CursorSource | undefined;
        for (const source of this.sources) {
          if (source.at >= source.buffer.length) continue;
          if (!best || this.compare(this.keyOf(source), this.keyOf(best)) < 0) best = source;
        }
        return best;
      }
      const ready = this.sources.find((s) => s.at < s.buffer.length);
      if (ready) return ready;
      if (empty.length === 0) return undefined;
      await this.fill(empty);
    }
  }

  private compare(a: unknown[], b: unknown[]): number {
    const sort = this.options.sort!;
    for (let i = 0; i < sort.length; i++) {
      const c = compareValues(a[i], b[i]);
      if (c !== 0) return c * sort[i]!.direction;
    }
    return 0;
  }

  async nextBatch(request: BatchRequest, ctx?: RouterContext): Promise<Batch> {
    if (ctx) this.ctx = ctx;
    const docs: Buffer[] = [];
    let bytes = 0;
    const max = request.batchSize ?? Number.POSITIVE_INFINITY;
    const limit = this.options.limit ?? 0;
    while (docs.length < max && !this.closed && (limit === 0 || this.returned < limit)) {
      const source = await this.next();
      if (!source) break;
      let doc = source.buffer[source.at]!;
      if (docs.length > 0 && bytes + doc.length > MAX_BATCH_BYTES) break;
      source.at++;
      if (this.skipped < (this.options.skip ?? 0)) {
        this.skipped++;
        continue;
      }
      if (this.options.projection) doc = this.options.projection.apply(doc);
      docs.push(doc);
      bytes += doc.length;
      this.returned++;
    }
    const done = this.closed || (limit > 0 && this.returned >= limit) || !this.sources.some((s) => this.live(s));
    if (done) this.close();
    return { docs, exhausted: done };
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    killShardCursors(this.ctx, this.sources);
  }
}
