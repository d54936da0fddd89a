/**
 * Chains the stages of an aggregation pipeline over a source of rows, checking each stage as
 * mongod does (one field, a known name, first-only and last-only stages in place). Stages are
 * pulled lazily: streaming stages pass rows through one at a time, blocking ones collect.
 */
import { ServerError } from '../../errors.js';
import { bucketAuto, parseBucketAuto } from './bucket-auto.js';
import { type Pull } from './row.js';
import {
  blocking,
  countStage,
  isPlainProjection,
  limit,
  match,
  type MingoOptions,
  perDocument,
  project,
  sample,
  skip,
  sort,
  unsetFields,
  unwind,
} from './stages.js';
import { drain, pullFrom } from './row.js';
import { unpackBuckets } from './unpack-bucket.js';

/** Stages mingo runs one document at a time. */
const PER_DOCUMENT = new Set(['$addFields', '$set', '$project', '$replaceRoot', '$replaceWith', '$redact']);
/** Stages mingo runs over the whole input. */
const BLOCKING = new Set([
  '$group',
  '$bucket',
  '$bucketAuto',
  '$facet',
  '$lookup',
  '$graphLookup',
  '$unionWith',
  '$sortByCount',
  '$densify',
  '$fill',
  '$setWindowFields',
]);
/** Stages that must come first; the command sets them up as the source. */
export const SOURCE_STAGES = new Set(['$collStats', '$changeStream', '$documents', '$indexStats']);
const NATIVE = new Set(['$match', '$sort', '$limit', '$skip', '$sample', '$count', '$unwind', '$unset', '$_internalUnpackBucket']);
const UNSUPPORTED = new Set([
  '$out',
  '$merge',
  '$currentOp',
  '$listLocalSessions',
  '$listSessions',
  '$planCacheStats',
  '$search',
  '$geoNear',
]);

/** The name and argument of a stage, checked. */
export function stageOf(stage: unknown): [string, unknown] {
  if (stage === null || typeof stage !== 'object' || Array.isArray(stage)) {
    throw new ServerError('TypeMismatch', "Each element of the 'pipeline' array must be an object");
  }
  const names = Object.keys(stage);
  if (names.length !== 1) throw new ServerError(40323, 'A pipeline stage specification object must contain exactly one field.');
  const name = names[0];
  if (!PER_DOCUMENT.has(name) && !BLOCKING.has(name) && !SOURCE_STAGES.has(name) && !NATIVE.has(name) && !UNSUPPORTED.has(name)) {
    throw new ServerError(40324, `Unrecognized pipeline stage name: '${name}'`);
  }
  return [name, (stage as Record<string, unknown>)[name]];
}

/** Checks a whole pipeline before it runs (positions of first-only stages, unsupported stages). */
export function checkPipeline(stages: unknown[]): void {
  stages.forEach((stage, i) => {
    const [name] = stageOf(stage);
    if (SOURCE_STAGES.has(name) && i > 0) {
      const codes: Record<string, number> = { $collStats: 40602, $changeStream: 40602, $documents: 40602, $indexStats: 40602 };
      throw new ServerError(codes[name], `${name} is only valid as the first stage in a pipeline`);
    }
    if (UNSUPPORTED.has(name)) {
      throw new ServerError('CommandNotSupported', `${name} is not supported by the test cluster`);
    }
  });
}

/** Runs `stages` (no source stages) over `source`. */
export function buildPipeline(source: Pull, stages: unknown[], options: MingoOptions): Pull {
  let pull = source;
  let i = 0;
  while (i < stages.length) {
    const [name, arg] = stageOf(stages[i]);
    if (BLOCKING.has(name) && !(name === '$bucketAuto' && (arg as { granularity?: unknown })?.granularity === undefined)) {
      // Consecutive mingo stages run in one go.
      const run: Record<string, unknown>[] = [];
      while (i < stages.length) {
        const [next, nextArg] = stageOf(stages[i]);
        if (!BLOCKING.has(next) && !PER_DOCUMENT.has(next)) break;
        if (next === '$bucketAuto' && (nextArg as { granularity?: unknown })?.granularity === undefined) break;
        run.push(stages[i] as Record<string, unknown>);
        i++;
      }
      pull = blocking(pull, run, options);
      continue;
    }
    i++;
    switch (name) {
      case '$match':
        pull = match(pull, arg, options);
        break;
      case '$sort':
        pull = sort(pull, arg, options);
        break;
      case '$limit':
        pull = limit(pull, arg);
        break;
      case '$skip':
        pull = skip(pull, arg);
        break;
      case '$sample':
        pull = sample(pull, arg);
        break;
      case '$count':
        pull = countStage(pull, arg);
        break;
      case '$unwind':
        pull = unwind(pull, arg);
        break;
      case '$unset':
        pull = project(pull, unsetFields(arg));
        break;
      case '$_internalUnpackBucket':
        pull = unpackBuckets(pull, arg);
        break;
      case '$bucketAuto': {
        const spec = parseBucketAuto(arg);
        const input = pull;
        let out: Pull | undefined;
        pull = () => (out ??= pullFrom(bucketAuto(drain(input), spec)))();
        break;
      }
      case '$project':
        if (isPlainProjection(arg)) {
          pull = project(pull, arg);
          break;
        }
        pull = perDocument(pull, { [name]: arg }, options);
        break;
      default:
        pull = perDocument(pull, { [name]: arg }, options);
    }
  }
  return pull;
}
