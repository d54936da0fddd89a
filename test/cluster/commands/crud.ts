/**
 * Reading and inserting documents: `find` and `insert`.
 * (update, delete, findAndModify, count, distinct and aggregate live in their own modules.)
 */
import { ServerError } from '../errors.js';
import { DEFAULT_FIRST_BATCH, PullCursor, collectionRestore } from '../cursor.js';
import { prepareForInsert, serialize, typed, validateDocument, valueSize } from '../raw.js';
import { ownedCopy, sharesRequestMemory, type BatchDocument } from '../storage/memory.js';
import { findDocuments, matchDocuments, resolveHint } from '../query/find.js';
import { parseProjection } from '../query/projection.js';
import { type CollectionRead, aggregate, resolveNamespace } from '../query/aggregate/source.js';
import type { Collection } from '../storage/collection.js';
import { timeseriesView } from '../storage/timeseries.js';
import { Collation } from '../collation/collation.js';
import { insertMeasurement } from './timeseries/writes.js';
import { findOplog } from './oplog-find.js';
import { Args } from './args.js';
import { openCursor } from './cursors.js';
import { MAX_BSON_OBJECT_SIZE, MAX_WRITE_BATCH_SIZE } from './handshake.js';
import { defineCommand, type CommandContext } from './registry.js';
import { BSON, Long, type Timestamp } from 'bson';

/** A write error entry as write commands report them. */
export interface WriteError {
  index: number;
  code: number;
  errmsg: string;
  [extra: string]: unknown;
}

export function toWriteError(index: number, e: unknown): WriteError {
  if (e instanceof ServerError) return { index, code: e.code, errmsg: e.message, ...e.extra };
  return { index, code: 1, errmsg: String((e as Error)?.message ?? e) };
}

/** The documents of a write command: the named document sequence, or the body's array (raw). */
export function rawArgumentDocuments(ctx: CommandContext, field: string): Buffer[] {
  const sequence = ctx.sequences.get(field);
  if (sequence) return sequence;
  const parsed = BSON.deserialize(ctx.raw, { fieldsAsRaw: { [field]: true }, validation: { utf8: false } });
  const docs = parsed[field];
  if (docs === undefined) {
    throw new ServerError('IDLFailedToParse', `BSON field '${Object.keys(ctx.body)[0]}.${field}' is missing but a required field`);
  }
  if (!Array.isArray(docs)) throw new ServerError('TypeMismatch', `BSON field '${field}' is the wrong type, expected type 'array'`);
  return docs as Buffer[];
}

/** mongod's check on the number of operations in one write command. */
export function checkBatchSize(count: number): void {
  if (count < 1 || count > MAX_WRITE_BATCH_SIZE) {
    throw new ServerError('InvalidLength', `Write batch sizes must be between 1 and ${MAX_WRITE_BATCH_SIZE}. Got ${count} operations.`);
  }
}

/**
 * mongod replaces each top-level `Timestamp(0, 0)` of an inserted document (but not one in
 * `_id`) with the next cluster time (fixDocumentForInsert). Done in place on the stored copy.
 */
function fillEmptyTimestamps(doc: Buffer, clock: { tick(): Timestamp }): void {
  const end = doc.readInt32LE(0) - 1;
  for (let at = 4; at < end;) {
    const type = doc[at];
    const nameEnd = doc.indexOf(0, at + 1);
    const valueAt = nameEnd + 1;
    if (
      type === 0x11 &&
      doc.readUInt32LE(valueAt) === 0 &&
      doc.readUInt32LE(valueAt + 4) === 0 &&
      doc.toString('latin1', at + 1, nameEnd) !== '_id'
    ) {
      const ts = clock.tick();
      doc.writeUInt32LE(ts.i, valueAt);
      doc.writeUInt32LE(ts.t, valueAt + 4);
    }
    at = valueAt + valueSize(doc, type, valueAt);
  }
}

defineCommand({
  name: 'insert',
  // Named, so that CPU profiles tell its time from find's (bench/cluster-profile.ts).
  handler: function insertCommand(ctx) {
    const { instance, body, db, op } = ctx;
    const args = new Args('insert', body);
    const name = args.requiredString('insert');
    const ordered = args.boolean('ordered') ?? true;
    const docs = rawArgumentDocuments(ctx, 'documents');
    checkBatchSize(docs.length);
    // A time-series collection (a view on its buckets) takes measurements instead.
    const series = timeseriesView(instance.catalog, db, name);
    const collection = series ? undefined : instance.collectionForWrite(op, db, name);
    const shared = sharesRequestMemory(docs);
    const bypassValidation = args.boolean('bypassDocumentValidation') ?? false;
    const writeErrors: ReturnType<typeof toWriteError>[] = [];
    let n = 0;
    for (let i = 0; i < docs.length; i++) {
      try {
        const doc = docs[i];
        if (doc.length > MAX_BSON_OBJECT_SIZE) {
          throw new ServerError(
            'BSONObjectTooLarge',
            `object to insert too large. size in bytes: ${doc.length}, max size: ${MAX_BSON_OBJECT_SIZE}`,
          );
        }
        const hasTimestamp = validateDocument(doc);
        if (!collection) {
          insertMeasurement(instance, op, series!, doc);
          n++;
          continue;
        }
        const prepared = prepareForInsert(doc);
        instance.validateForWrite?.(collection, prepared.doc, bypassValidation);
        // A view of a small request's buffer would pin memory shared with other data: copy it then.
        const stored = shared && prepared.doc === doc ? doc : ownedCopy(prepared.doc);
        if (hasTimestamp) fillEmptyTimestamps(stored, instance.clock);
        instance.insertDocument(op, collection, stored, prepared.id);
        n++;
      } catch (e) {
        writeErrors.push(toWriteError(i, e));
        if (ordered) break;
      }
    }
    return writeErrors.length > 0 ? { n, writeErrors } : { n };
  },
});

/** A non-negative whole number option of `find` (mongod's error 51024 otherwise). */
function nonNegative(args: Args, field: string): number | undefined {
  const n = args.number(field);
  if (n === undefined) return undefined;
  if (n < 0) throw new ServerError(51024, `BSON field '${field}' value must be >= 0, actual value '${n}'`);
  return Math.trunc(n);
}

/** Appends `$recordId` (showRecordId) to a result document. */
function withRecordId(raw: Buffer, rid: number): Buffer {
  const element = serialize({ $recordId: Long.fromNumber(rid) });
  const out = Buffer.allocUnsafe(raw.length + element.length - 5);
  raw.copy(out, 0, 0, raw.length - 1);
  element.copy(out, raw.length - 1, 4);
  out.writeInt32LE(out.length, 0);
  return out;
}

defineCommand({
  name: 'find',
  handler: async ({ instance, body, db }) => {
    const args = new Args('find', body);
    const name = args.requiredString('find');
    // The oplog is read from the oplog itself, in mongod's entry format.
    if (db === 'local' && name === 'oplog.rs') return findOplog(instance, body);
    const filter = args.object('filter');
    const sort = args.object('sort');
    const projection = args.object('projection');
    const limit = nonNegative(args, 'limit') ?? 0;
    const skip = nonNegative(args, 'skip');
    const batchSize = nonNegative(args, 'batchSize');
    const singleBatch = args.boolean('singleBatch') ?? false;
    const hint = body.hint as string | Record<string, unknown> | undefined;
    const variables = args.object('let');
    const ns = `${db}.${name}`;
    const batching = {
      // The first batch holds batchSize documents (default 101), never more than the limit.
      batchSize: batchSize ?? (limit > 0 ? Math.min(limit, DEFAULT_FIRST_BATCH) : undefined),
      singleBatch,
    };
    if (batching.batchSize !== undefined && limit > 0) batching.batchSize = Math.min(batching.batchSize, limit);

    const resolved = resolveNamespace(instance, db, name);
    if (resolved.isView) {
      // A find on a view is an aggregation: the view's pipeline, then the find's own stages.
      const stages: unknown[] = [];
      if (filter && Object.keys(filter).length > 0) stages.push({ $match: filter });
      if (sort && Object.keys(sort).length > 0) stages.push({ $sort: sort });
      if (skip) stages.push({ $skip: skip });
      if (limit) stages.push({ $limit: limit });
      if (projection && Object.keys(projection).length > 0) stages.push({ $project: projection });
      const read: CollectionRead = { finished: false };
      const pull = aggregate(instance, db, name, stages, { variables, read, collation: body.collation });
      const restore = collectionRestore(read.collection, () => !read.finished);
      return openCursor(instance, new PullCursor(ns, () => pull()?.raw, 0, restore), batching);
    }
    const collection = resolved.collection;
    if (args.boolean('tailable') && !collection?.capped) {
      throw new ServerError('BadValue', `error processing query: ns=${ns} tailable cursor requested on non capped collection`);
    }
    const collation = Collation.effective(body.collation, collection?.options.collation);
    const spec = { filter, sort, hint, skip, min: args.object('min'), max: args.object('max'), variables, collation };
    let pull: () => BatchDocument | undefined;
    if (args.boolean('returnKey') || args.boolean('showRecordId')) {
      const matches = matchDocuments(collection, spec);
      const parsed = parseProjection(projection, filter);
      const returnKey = args.boolean('returnKey') ?? false;
      const showRecordId = args.boolean('showRecordId') ?? false;
      pull = () => {
        const m = matches();
        if (!m) return undefined;
        let raw = returnKey ? indexKeyOf(m.entry.raw, hint, collection!) : parsed ? parsed.apply(m.entry.raw, m.doc) : m.entry.raw;
        if (showRecordId) raw = withRecordId(raw, m.entry.rid);
        return raw;
      };
    } else {
      pull = findDocuments(collection, { ...spec, projection });
    }
    return openCursor(instance, new PullCursor(ns, pull, limit, collectionRestore(collection)), batching);
  },
});

/** `returnKey`: the key of the hinted index for a document (`{}` for a collection scan). */
function indexKeyOf(raw: Buffer, hint: string | Record<string, unknown> | undefined, collection: Collection): Buffer {
  if (hint === undefined) return serialize({});
  const index = resolveHint(collection, hint);
  if ('natural' in index) return serialize({});
  const [key] = index.keysOf(BSON.deserialize(raw, typed));
  return serialize(key ? key.value : {});
}
