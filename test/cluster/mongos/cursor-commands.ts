/**
 * The router's cursor replies and cursor commands: `getMore` (a merged cursor asks its shards for
 * more with the client's session fields) and `killCursors` (the shards' cursors are killed too).
 */
import { Long } from 'bson';
import { DEFAULT_FIRST_BATCH } from '../cursor.js';
import { ServerError } from '../errors.js';
import { RawDocArray } from '../raw.js';
import { type RouterContext, type RouterReply, defineRouterCommand } from './commands.js';
import type { RouterCursor } from './merge-cursor.js';
import { num } from './router.js';

export interface RouterCursorOptions {
  /** First batch size (default 101). */
  batchSize?: number;
  singleBatch?: boolean;
}

/** Runs a cursor's first batch and registers it when more remains. */
export async function openRouterCursor(ctx: RouterContext, cursor: RouterCursor, options: RouterCursorOptions = {}): Promise<RouterReply> {
  let batch;
  try {
    batch = await cursor.nextBatch({ batchSize: options.batchSize ?? DEFAULT_FIRST_BATCH }, ctx);
  } catch (e) {
    cursor.close();
    throw e;
  }
  let id = Long.fromNumber(0);
  if (!batch.exhausted && !options.singleBatch) id = ctx.router.cursors.register(cursor);
  else cursor.close();
  return { cursor: { firstBatch: new RawDocArray(batch.docs), ...batch.extra, id, ns: cursor.ns } };
}

defineRouterCommand({
  name: 'getMore',
  handler: async (ctx) => {
    const { body, db, router } = ctx;
    const raw = body.getMore;
    if (!Long.isLong(raw) && typeof raw !== 'number') {
      throw new ServerError('TypeMismatch', "BSON field 'getMore.getMore' is the wrong type, expected type 'long'");
    }
    const id = Long.fromValue(raw as Long);
    if (typeof body.collection !== 'string') {
      throw new ServerError('IDLFailedToParse', "BSON field 'getMore.collection' is missing but a required field");
    }
    const ns = `${db}.${body.collection}`;
    const cursor = router.cursors.get(id, ns) as RouterCursor;
    const batchSize = body.batchSize === undefined ? undefined : num(body.batchSize) || undefined;
    const maxTimeMS = body.maxTimeMS === undefined ? undefined : num(body.maxTimeMS);
    let batch;
    try {
      batch = await cursor.nextBatch({ batchSize, maxTimeMS }, ctx);
    } catch (e) {
      router.cursors.kill(id);
      throw e;
    }
    if (batch.exhausted) router.cursors.kill(id);
    return { cursor: { nextBatch: new RawDocArray(batch.docs), ...batch.extra, id: batch.exhausted ? Long.fromNumber(0) : id, ns } };
  },
});

defineRouterCommand({
  name: 'killCursors',
  handler: ({ router, body }) => {
    const ids = Array.isArray(body.cursors) ? body.cursors : [];
    const killed: Long[] = [];
    const notFound: Long[] = [];
    for (const raw of ids) {
      const id = Long.fromValue(raw as Long);
      (router.cursors.kill(id) ? killed : notFound).push(id);
    }
    return { cursorsKilled: killed, cursorsNotFound: notFound, cursorsAlive: [], cursorsUnknown: [] };
  },
});
