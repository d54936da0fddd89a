/**
 * Opening a change stream: an `aggregate` whose first stage is `$changeStream`, on a collection
 * (`aggregate: <name>`), a database (`aggregate: 1`) or the whole cluster (`aggregate: 1` on
 * `admin` with `allChangesForCluster: true`). The first batch is returned at once (no wait);
 * later batches come from `getMore` on the returned cursor.
 */
import { ServerError } from '../errors.js';
import { Args } from '../commands/args.js';
import { openCursor } from '../commands/cursors.js';
import type { CommandContext, CommandReply } from '../commands/registry.js';
import { ChangeStreamCursor } from './cursor.js';
import { compileEventPipeline } from './pipeline.js';
import { parseChangeStreamSpec } from './spec.js';

/** Whether an aggregate pipeline is a change stream (its first stage is `$changeStream`). */
export function isChangeStreamPipeline(pipeline: unknown): boolean {
  if (!Array.isArray(pipeline) || pipeline.length === 0) return false;
  const first = pipeline[0] as Record<string, unknown> | null;
  return typeof first === 'object' && first !== null && '$changeStream' in first;
}

/** Runs an `aggregate` command whose pipeline starts with `$changeStream`. */
export async function openChangeStream(ctx: CommandContext): Promise<CommandReply> {
  const { instance, body, db } = ctx;
  const args = new Args('aggregate', body);
  const target = body.aggregate;
  let collection: string | undefined;
  if (typeof target === 'string') collection = target;
  else if (target !== 1) {
    throw new ServerError('FailedToParse', "Invalid command format: the 'aggregate' field must specify a collection name or 1");
  }
  const pipeline = args.array('pipeline') ?? [];
  const cursorOptions = args.object('cursor');
  if (!cursorOptions && body.explain === undefined) {
    throw new ServerError('FailedToParse', "The 'cursor' option is required, except for aggregate with the explain argument");
  }
  if (body.explain !== undefined) throw new ServerError('IllegalOperation', 'The test cluster does not explain change streams');
  const spec = parseChangeStreamSpec((pipeline[0] as Record<string, unknown>).$changeStream, db, collection);
  // A router (mongos) merging shards' streams asks each shard for its part (sharding/).
  if (body.needsMerge === true) spec.merged = true;
  if (collection !== undefined && instance.catalog.get(db, collection)?.kind === 'view') {
    throw new ServerError('CommandNotSupportedOnView', `Namespace ${db}.${collection} is a view, not a collection`);
  }
  const later = compileEventPipeline(pipeline.slice(1));
  const ns = collection === undefined ? `${db}.$cmd.aggregate` : `${db}.${collection}`;
  const cursor = new ChangeStreamCursor(instance, spec, later, ns);
  const batchSize = cursorOptions?.batchSize === undefined ? undefined : Number(cursorOptions.batchSize);
  return openCursor(instance, cursor, { batchSize });
}
