/**
 * Cursor replies and the cursor commands: `getMore` and `killCursors`. Commands that open
 * cursors (`find`, `aggregate`, `listCollections`, ...) answer through `openCursor`.
 */
import { Long } from 'bson';
import { ServerError } from '../errors.js';
import { type BatchRequest, DEFAULT_FIRST_BATCH, PullCursor, type ServerCursor } from '../cursor.js';
import type { Instance } from '../instance.js';
import { RawDocArray } from '../raw.js';
import { Args } from './args.js';
import { defineCommand } from './registry.js';

export interface OpenCursorOptions {
  /** First batch size (default 101). */
  batchSize?: number;
  /** Close after the first batch (`singleBatch`). */
  singleBatch?: boolean;
}

/** Runs the first batch of a cursor; registers it if more remains. Returns the command reply. */
export async function openCursor(
  instance: Instance,
  cursor: ServerCursor,
  options: OpenCursorOptions = {},
): Promise<Record<string, unknown>> {
  const request: BatchRequest = { batchSize: options.batchSize ?? DEFAULT_FIRST_BATCH };
  const batch = await cursor.nextBatch(request);
  let id = Long.fromNumber(0);
  if (!batch.exhausted && !options.singleBatch) id = instance.cursors.register(cursor);
  else cursor.close();
  return { cursor: { firstBatch: new RawDocArray(batch.docs), ...batch.extra, id, ns: cursor.ns } };
}

/** A cursor over a plain list of documents (listCollections, listIndexes, ...). */
export function listCursor(ns: string, docs: Buffer[]): PullCursor {
  let i = 0;
  return new PullCursor(ns, () => docs[i++]);
}

defineCommand({
  name: 'getMore',
  handler: async ({ instance, body, db }) => {
    const args = new Args('getMore', body);
    const raw = body.getMore;
    if (typeof raw !== 'number' && (raw as { _bsontype?: string })?._bsontype !== 'Long') {
      throw new ServerError('TypeMismatch', `BSON field 'getMore.getMore' is the wrong type, expected type 'long'`);
    }
    const id = Long.fromValue(raw as number);
    const collection = args.requiredString('collection');
    const ns = `${db}.${collection}`;
    const cursor = instance.cursors.get(id, ns);
    let batch;
    try {
      batch = await cursor.nextBatch({ batchSize: args.count('batchSize') || undefined, maxTimeMS: args.number('maxTimeMS') });
    } catch (error) {
      // A killed plan takes its cursor with it: a further getMore is CursorNotFound, as on mongod.
      if (error instanceof ServerError && error.codeName === 'QueryPlanKilled') instance.cursors.kill(id);
      throw error;
    }
    if (batch.exhausted) instance.cursors.kill(id);
    return {
      cursor: { nextBatch: new RawDocArray(batch.docs), ...batch.extra, id: batch.exhausted ? Long.fromNumber(0) : id, ns },
    };
  },
});

defineCommand({
  name: 'killCursors',
  handler: ({ instance, body }) => {
    const ids = new Args('killCursors', body).array('cursors') ?? [];
    const killed: Long[] = [];
    const notFound: Long[] = [];
    for (const raw of ids) {
      const id = Long.fromValue(raw as number);
      (instance.cursors.kill(id) ? killed : notFound).push(id);
    }
    return { cursorsKilled: killed, cursorsNotFound: notFound, cursorsAlive: [], cursorsUnknown: [] };
  },
});
