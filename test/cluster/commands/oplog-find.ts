/**
 * `find` on `local.oplog.rs`: the oplog as mongod serves it (storage/oplog-documents.ts), in
 * natural (timestamp) order or reversed, with filters, projection, skip, limit and batching.
 * What tools ask is served without a full pass: `{$natural: -1}` with limit 1 (the newest entry,
 * mongodump --oplog's start), and `ts` lower bounds (`$gte`/`$gt`, also inside `$and`: the entries
 * since it) seek in the oplog. Timestamps are compared here, since mingo cannot order them.
 */
import { BSON, Timestamp } from 'bson';
import type { Instance } from '../instance.js';
import type { OplogEntry } from '../oplog.js';
import { compareTimestamps } from '../clock.js';
import { PullCursor } from '../cursor.js';
import { compileFilter } from '../collation/query.js';
import { parseProjection } from '../query/projection.js';
import { oplogDocuments } from '../storage/oplog-documents.js';
import { promoted } from '../raw.js';
import { Args } from './args.js';
import { openCursor } from './cursors.js';
import type { CommandReply } from './registry.js';

const CHUNK = 512;

/** Every live entry from `from` (inclusive) on, read in chunks so new appends are seen too. */
function* entriesFrom(instance: Instance, from: Timestamp): Iterable<OplogEntry> {
  let chunk = instance.oplog.read(from, false, CHUNK);
  while (chunk.length > 0) {
    yield* chunk;
    const last = chunk[chunk.length - 1];
    chunk = instance.oplog.readAfter(last.ts, last.txnOpIndex ?? 0, CHUNK);
  }
}

interface TimestampBounds {
  lower?: { ts: Timestamp; inclusive: boolean };
  upper?: { ts: Timestamp; inclusive: boolean };
}

function isTimestamp(v: unknown): v is Timestamp {
  return (v as { _bsontype?: string })?._bsontype === 'Timestamp';
}

/**
 * Takes the `ts` range conditions out of a filter (top level or `$and` clauses); returns them and
 * what is left to evaluate.
 */
function splitTimestampBounds(filter: Record<string, unknown>): { bounds: TimestampBounds; rest: Record<string, unknown>[] } {
  const bounds: TimestampBounds = {};
  const rest: Record<string, unknown>[] = [];
  const take = (clause: Record<string, unknown>) => {
    for (const [field, value] of Object.entries(clause)) {
      if (field === '$and' && Array.isArray(value)) {
        for (const inner of value) take(inner as Record<string, unknown>);
        continue;
      }
      const ops = field === 'ts' && typeof value === 'object' && value !== null ? (value as Record<string, unknown>) : undefined;
      if (
        ops &&
        Object.keys(ops).length > 0 &&
        Object.entries(ops).every(([op, v]) => ['$gte', '$gt', '$lte', '$lt', '$eq'].includes(op) && isTimestamp(v))
      ) {
        for (const [op, v] of Object.entries(ops) as [string, Timestamp][]) {
          if (op === '$gte' || op === '$gt' || op === '$eq') bounds.lower = { ts: v, inclusive: op !== '$gt' };
          if (op === '$lte' || op === '$lt' || op === '$eq') bounds.upper = { ts: v, inclusive: op !== '$lt' };
        }
        continue;
      }
      if (field === 'ts' && isTimestamp(value)) {
        bounds.lower = { ts: value, inclusive: true };
        bounds.upper = { ts: value, inclusive: true };
        continue;
      }
      rest.push({ [field]: value });
    }
  };
  take(filter);
  return { bounds, rest };
}

function withinBounds(ts: Timestamp, bounds: TimestampBounds): boolean {
  if (bounds.lower) {
    const c = compareTimestamps(ts, bounds.lower.ts);
    if (c < 0 || (c === 0 && !bounds.lower.inclusive)) return false;
  }
  if (bounds.upper) {
    const c = compareTimestamps(ts, bounds.upper.ts);
    if (c > 0 || (c === 0 && !bounds.upper.inclusive)) return false;
  }
  return true;
}

function naturalDirection(spec: unknown): 1 | -1 | undefined {
  if (typeof spec !== 'object' || spec === null || !('$natural' in spec)) return undefined;
  return Number((spec as { $natural: unknown }).$natural) < 0 ? -1 : 1;
}

/** A `find` on `local.oplog.rs`. */
export function findOplog(instance: Instance, body: Record<string, unknown>): Promise<CommandReply> {
  const args = new Args('find', body);
  const filter = args.object('filter') ?? {};
  const limit = Math.abs(args.number('limit') ?? 0);
  const skip = args.number('skip') ?? 0;
  const batchSize = args.number('batchSize');
  const direction = naturalDirection(body.sort) ?? naturalDirection(body.hint) ?? 1;
  const projection = parseProjection(args.object('projection'), filter);
  const { bounds, rest } = splitTimestampBounds(filter);
  const query = rest.length > 0 ? compileFilter({ $and: rest }, undefined, { scriptEnabled: false }) : undefined;
  const start = direction === 1 && bounds.lower ? bounds.lower.ts : new Timestamp({ t: 0, i: 0 });

  let source: Iterator<{ ts: Timestamp; raw: Buffer }>;
  if (direction === 1) {
    source = oplogDocuments(entriesFrom(instance, start))[Symbol.iterator]();
  } else {
    // Newest first: the newest entry alone when that is all that is asked, else everything reversed.
    const newest = instance.oplog.newest();
    const from = limit === 1 && rest.length === 0 && !bounds.upper && newest ? newest.ts : start;
    source = [...oplogDocuments(entriesFrom(instance, from))].reverse()[Symbol.iterator]();
  }
  let skipped = 0;
  const pull = (): Buffer | undefined => {
    for (let next = source.next(); !next.done; next = source.next()) {
      const { ts, raw } = next.value;
      if (!withinBounds(ts, bounds)) {
        // Past the upper bound in timestamp order nothing more can match.
        if (direction === 1 && bounds.upper && compareTimestamps(ts, bounds.upper.ts) > 0) return undefined;
        continue;
      }
      if (query && !query.test(BSON.deserialize(raw, promoted))) continue;
      if (skipped < skip) {
        skipped++;
        continue;
      }
      return projection ? projection.apply(raw) : raw;
    }
    return undefined;
  };
  return openCursor(instance, new PullCursor('local.oplog.rs', pull, limit), {
    batchSize: batchSize === undefined ? (limit > 0 ? Math.min(limit, 101) : undefined) : Math.trunc(batchSize),
    singleBatch: args.boolean('singleBatch') ?? false,
  });
}
