/**
 * Stages after `$changeStream`: only the ones mongod allows there ($match, $project, $addFields,
 * $set, $unset, $replaceRoot, $replaceWith, $redact), evaluated with mingo on the decoded event.
 * An event that only passes `$match` stages keeps its bytes; reshaping stages re-encode it (with
 * promoted numbers, see README). An event whose `_id` (its resume token) was changed ends the
 * stream with mongod's ChangeStreamFatalError.
 */
import { BSON } from 'bson';
import { Aggregator, Query } from '../mingo.js';
import { ServerError } from '../errors.js';
import { promoted, serialize } from '../raw.js';

const ALLOWED_STAGES = new Set([
  '$match',
  '$project',
  '$addFields',
  '$set',
  '$unset',
  '$replaceRoot',
  '$replaceWith',
  '$redact',
  '$changeStreamSplitLargeEvent',
]);

/** Applies the later stages to one event; undefined when the event is filtered out. */
export type EventPipeline = ((event: Buffer) => Buffer | undefined) | undefined;

function stageName(stage: unknown): string {
  if (typeof stage !== 'object' || stage === null || Array.isArray(stage) || Object.keys(stage).length !== 1) {
    throw new ServerError(40323, 'A pipeline stage specification object must contain exactly one field.');
  }
  return Object.keys(stage)[0];
}

/** Checks the later stages and returns the function applying them (undefined when none). */
export function compileEventPipeline(stages: unknown[]): EventPipeline {
  const active: Record<string, unknown>[] = [];
  for (const stage of stages) {
    const name = stageName(stage);
    if (name === '$changeStream') throw new ServerError(40602, '$changeStream is only valid as the first stage in a pipeline.');
    if (!ALLOWED_STAGES.has(name)) throw new ServerError('IllegalOperation', `${name} is not permitted in a $changeStream pipeline`);
    // Events are far below 16 MiB here, so there is never anything to split.
    if (name !== '$changeStreamSplitLargeEvent') active.push(stage as Record<string, unknown>);
  }
  if (active.length === 0) return undefined;
  if (active.every((s) => '$match' in s)) {
    const queries = active.map((s) => new Query(s.$match as Record<string, unknown>));
    return (event) => {
      const doc = BSON.deserialize(event, promoted);
      return queries.every((q) => q.test(doc)) ? event : undefined;
    };
  }
  const aggregator = new Aggregator(active);
  return (event) => {
    const doc = BSON.deserialize(event, promoted);
    const [out] = aggregator.run([doc]) as Record<string, unknown>[];
    if (out === undefined) return undefined;
    const before = (doc._id as { _data?: string } | undefined)?._data;
    const after = out._id as { _data?: unknown } | undefined;
    if (typeof after !== 'object' || after === null || after._data !== before || Object.keys(after).length !== 1) {
      throw new ServerError(
        'ChangeStreamFatalError',
        'Encountered an event whose _id field, which contains the resume token, was modified by the pipeline. Modifying the _id field of an event makes it impossible to resume the stream from that point. Only transformations that retain the unmodified _id field are allowed.',
        {},
        ['NonResumableChangeStreamError'],
      );
    }
    return serialize(out);
  };
}
