/**
 * `aggregate`: a pipeline over a collection, a view (its pipeline runs first) or, with
 * `aggregate: 1`, over `$documents`; results come back through a cursor (`cursor.batchSize`).
 * A pipeline starting with `$changeStream` is a change stream (changestream/open.ts).
 */
import { ServerError } from '../errors.js';
import { PullCursor, collectionRestore } from '../cursor.js';
import { type CollectionRead, aggregate } from '../query/aggregate/source.js';
import { isChangeStreamPipeline, openChangeStream } from '../changestream/open.js';
import { Args } from './args.js';
import { openCursor } from './cursors.js';
import { defineCommand } from './registry.js';

defineCommand({
  name: 'aggregate',
  handler: async (ctx) => {
    const { instance, body, db } = ctx;
    if (isChangeStreamPipeline(body.pipeline)) return openChangeStream(ctx);
    const args = new Args('aggregate', body);
    const target = body.aggregate;
    if (typeof target !== 'string' && target !== 1) {
      throw new ServerError('FailedToParse', "Invalid command format: the 'aggregate' field must specify a collection name or 1");
    }
    const pipeline = args.array('pipeline');
    if (pipeline === undefined)
      throw new ServerError('IDLFailedToParse', "BSON field 'aggregate.pipeline' is missing but a required field");
    if (body.explain !== undefined) {
      throw new ServerError('CommandNotSupported', 'explain is not supported by the test cluster');
    }
    const cursorOptions = args.object('cursor');
    if (!cursorOptions) {
      throw new ServerError('FailedToParse', "The 'cursor' option is required, except for aggregate with the explain argument");
    }
    const batchSize = cursorOptions.batchSize;
    if (batchSize !== undefined && (typeof batchSize !== 'number' || batchSize < 0)) {
      throw new ServerError('BadValue', `Expected non-negative batchSize, got ${String(batchSize)}`);
    }
    const read: CollectionRead = { finished: false };
    const pull = aggregate(instance, db, target, pipeline, { variables: args.object('let'), read, collation: body.collation });
    const ns = target === 1 ? `${db}.$cmd.aggregate` : `${db}.${target}`;
    const cursor = new PullCursor(
      ns,
      () => pull()?.raw,
      0,
      collectionRestore(read.collection, () => !read.finished),
    );
    return openCursor(instance, cursor, { batchSize: batchSize === undefined ? undefined : Math.trunc(batchSize as number) });
  },
});
