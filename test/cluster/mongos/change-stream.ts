/**
 * Change streams through the router: one stream per shard, opened at the same point (the
 * client's resume token or time, else just after the router's cluster time) and merged in the
 * order of their resume tokens. An event is returned only once every other shard has shown that
 * it has nothing earlier: its next event is later, or its postBatchResumeToken has passed the
 * event's time (idle shards get there through their periodic no-op writes). So no event can be
 * returned out of cluster-time order, and resuming from any returned token continues exactly
 * after it: each shard passes the events from the token on, and the router checks that the
 * token's own event was there (mongos's DocumentSourceEnsureResumeTokenPresent).
 */
import { Long, Timestamp } from 'bson';
import type { Batch, BatchRequest } from '../cursor.js';
import { MAX_BATCH_BYTES } from '../cursor.js';
import { ServerError } from '../errors.js';
import { decodeElement, findElement } from '../raw.js';
import { parseChangeStreamSpec } from '../changestream/spec.js';
import { encodeToken, highWaterMark } from '../changestream/token.js';
import type { RouterContext, RouterReply } from './commands.js';
import { runOnShard } from './forward.js';
import { type RouterCursor, killShardCursors, readCursorReply } from './merge-cursor.js';
import { openRouterCursor } from './cursor-commands.js';
import { num } from './router.js';
import { promote } from './targeting.js';

/** mongod's getMore wait for awaitData cursors without `maxTimeMS`. */
const DEFAULT_AWAIT_MS = 1000;

interface QueuedEvent {
  bytes: Buffer;
  /** The resume token's `_data` (hex strings sort as the events do, across shards). */
  key: string;
  invalidate: boolean;
}

interface StreamSource {
  shard: string;
  id: Long;
  collection: string;
  queue: QueuedEvent[];
  /** The shard's latest postBatchResumeToken `_data`. */
  pbrt: string;
  inflight: Promise<void> | undefined;
}

function stringField(doc: Buffer, name: string): string | undefined {
  const el = findElement(doc, name);
  return el && el.type === 0x02 ? (decodeElement(doc, el) as string) : undefined;
}

/** An event's resume token `_data`, read from its bytes. */
function eventKey(event: Buffer): string {
  const id = findElement(event, '_id');
  if (!id || id.type !== 0x03)
    throw new ServerError('ChangeStreamFatalError', 'change event without a resume token', {}, ['NonResumableChangeStreamError']);
  const nameEnd = event.indexOf(0, id.start + 1);
  return stringField(event.subarray(nameEnd + 1, id.end), '_data') ?? '';
}

/** The cluster time at the start of a token's `_data` (`82` + seconds + increment, hex). */
function timeOfKey(key: string): Timestamp {
  return new Timestamp({ t: parseInt(key.slice(2, 10), 16), i: parseInt(key.slice(10, 18), 16) });
}

class RouterChangeStream implements RouterCursor {
  private started = false;
  private closed = false;
  private invalidated = false;
  private lastReturned: string | undefined;
  /** The resume token whose event must be seen first (resumeAfter/startAfter an event). */
  private mustFind: string | undefined;

  constructor(
    private ctx: RouterContext,
    readonly ns: string,
    private readonly sources: StreamSource[],
    resumeEventKey: string | undefined,
  ) {
    this.mustFind = resumeEventKey;
  }

  /** The point before which no shard can still report anything: the postBatchResumeToken. */
  private frontier(): string {
    let min: string | undefined;
    for (const source of this.sources) {
      const bound = source.queue.length > 0 ? highWaterMark(timeOfKey(source.queue[0]!.key))._data : source.pbrt;
      if (min === undefined || bound < min) min = bound;
    }
    const candidate = min ?? '';
    return this.lastReturned !== undefined && this.lastReturned > candidate ? this.lastReturned : candidate;
  }

  /** The next event every shard allows to be returned, or undefined. */
  private nextReady(): StreamSource | undefined {
    let best: StreamSource | undefined;
    for (const source of this.sources) {
      const head = source.queue[0];
      if (head && (!best || head.key < best.queue[0]!.key)) best = source;
    }
    if (!best) return undefined;
    const key = best.queue[0]!.key;
    for (const source of this.sources) {
      if (source === best || source.queue.length > 0) continue;
      // An idle shard must have promised nothing before this event (its cursor still open).
      if (!source.id.isZero() && !(key <= source.pbrt)) return undefined;
    }
    return best;
  }

  private take(docs: Buffer[], limit: number): void {
    let bytes = docs.reduce((n, d) => n + d.length, 0);
    while (docs.length < limit && !this.invalidated) {
      const source = this.nextReady();
      if (!source) return;
      const event = source.queue[0]!;
      if (docs.length > 0 && bytes + event.bytes.length > MAX_BATCH_BYTES) return;
      source.queue.shift();
      if (this.mustFind !== undefined) {
        if (event.key === this.mustFind) {
          this.mustFind = undefined;
          continue;
        }
        if (event.key > this.mustFind) {
          throw new ServerError(
            'ChangeStreamFatalError',
            `cannot resume stream; the resume token was not found. ${JSON.stringify({ _data: event.key })}`,
            {},
            ['NonResumableChangeStreamError'],
          );
        }
        continue;
      }
      docs.push(event.bytes);
      bytes += event.bytes.length;
      this.lastReturned = event.key;
      if (event.invalidate) this.invalidated = true;
    }
  }

  /** Asks each shard with nothing queued for more; resolves when one answers or at the deadline. */
  private async fetch(deadline: number): Promise<void> {
    const waits: Promise<void>[] = [];
    for (const source of this.sources) {
      if (source.queue.length > 0 || source.id.isZero()) continue;
      source.inflight ??= this.getMore(source, Math.max(1, deadline - Date.now())).finally(() => (source.inflight = undefined));
      waits.push(source.inflight);
    }
    if (waits.length === 0) return;
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<void>((resolve) => (timer = setTimeout(resolve, Math.max(0, deadline - Date.now()))));
    try {
      await Promise.race([...waits, timeout]);
    } finally {
      clearTimeout(timer);
    }
  }

  /** One shard's getMore; never rejects (a failure is kept and thrown by the next batch). */
  private async getMore(source: StreamSource, maxTimeMS: number): Promise<void> {
    try {
      const reply = await runOnShard(
        this.ctx,
        source.shard,
        { getMore: source.id, collection: source.collection, maxTimeMS },
        [],
        this.ctx.db,
      );
      if (!reply.ok) this.failure ??= reply.error();
      else if (!this.closed) absorb(source, readCursorReply(reply.raw));
    } catch (e) {
      this.failure ??= e instanceof ServerError ? e : new ServerError('InternalError', String(e));
    }
  }

  private failure: ServerError | undefined;

  async nextBatch(request: BatchRequest, ctx?: RouterContext): Promise<Batch> {
    if (ctx) this.ctx = ctx;
    const initial = !this.started;
    this.started = true;
    const limit = request.batchSize ?? Number.POSITIVE_INFINITY;
    const docs: Buffer[] = [];
    const deadline = Date.now() + (request.maxTimeMS || DEFAULT_AWAIT_MS);
    try {
      for (;;) {
        if (this.failure) throw this.failure;
        if (limit > 0) this.take(docs, limit);
        if (docs.length > 0 || initial || this.closed || this.invalidated || Date.now() >= deadline || limit === 0) break;
        await this.fetch(deadline);
      }
    } catch (e) {
      this.close();
      throw e;
    }
    const exhausted = this.invalidated;
    if (exhausted) this.close();
    return { docs, exhausted, extra: { postBatchResumeToken: { _data: this.frontier() } } };
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    killShardCursors(this.ctx, this.sources);
  }
}

/** Adds a shard's batch of events to its queue. */
function absorb(source: StreamSource, batch: ReturnType<typeof readCursorReply>): void {
  source.id = batch.id;
  for (const bytes of batch.docs) {
    source.queue.push({ bytes, key: eventKey(bytes), invalidate: stringField(bytes, 'operationType') === 'invalidate' });
  }
  const data = (batch.postBatchResumeToken as { _data?: unknown } | undefined)?._data;
  if (typeof data === 'string' && data > source.pbrt) source.pbrt = data;
}

/** `aggregate` with a first `$changeStream`, through the router. */
export async function openRouterChangeStream(ctx: RouterContext): Promise<RouterReply> {
  const pipeline = ctx.body.pipeline as Record<string, unknown>[];
  const stage = { ...(pipeline[0]!.$changeStream as Record<string, unknown>) };
  const target = ctx.body.aggregate;
  const collection = typeof target === 'string' ? target : undefined;
  if (collection === undefined && num(target) !== 1) {
    throw new ServerError('FailedToParse', "Invalid command format: the 'aggregate' field must specify a collection name or 1");
  }
  // The router checks the stage as mongod would, before any shard sees it.
  const spec = parseChangeStreamSpec(promote(stage), ctx.db, collection);
  const cursorOptions = ctx.body.cursor as { batchSize?: unknown } | undefined;
  if (!cursorOptions)
    throw new ServerError('FailedToParse', "The 'cursor' option is required, except for aggregate with the explain argument");
  const token = spec.resumeAfter ?? spec.startAfter;
  if (!token && !spec.startAtOperationTime) {
    // Every shard starts at the same point: just after the router's cluster time.
    const now = ctx.router.clock.current();
    stage.startAtOperationTime = new Timestamp({ t: now.t, i: now.i + 1 });
  }
  const shards = ctx.router.shardIds();
  const body = {
    aggregate: target,
    pipeline: [{ $changeStream: stage }, ...pipeline.slice(1)],
    cursor: {},
    needsMerge: true,
    fromMongos: true,
  };
  const replies = await Promise.all(shards.map((shard) => runOnShard(ctx, shard, body)));
  const sources: StreamSource[] = [];
  let failure: ServerError | undefined;
  replies.forEach((reply, i) => {
    if (!reply.ok) {
      failure ??= reply.error();
      return;
    }
    const batch = readCursorReply(reply.raw);
    const source: StreamSource = {
      shard: shards[i]!,
      id: batch.id,
      collection: batch.ns.slice(batch.ns.indexOf('.') + 1),
      queue: [],
      pbrt: '',
      inflight: undefined,
    };
    absorb(source, batch);
    sources.push(source);
  });
  const ns = collection === undefined ? `${ctx.db}.$cmd.aggregate` : `${ctx.db}.${collection}`;
  const resumeEvent = token?.event ? encodeToken(token)._data : undefined;
  const cursor = new RouterChangeStream(ctx, ns, sources, resumeEvent);
  if (failure) {
    cursor.close();
    throw failure;
  }
  const batchSize = cursorOptions.batchSize === undefined ? undefined : num(cursorOptions.batchSize);
  return openRouterCursor(ctx, cursor, { batchSize });
}
