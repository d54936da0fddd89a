/**
 * Random source workloads for change-event application tests: a fast-check arbitrary of
 * operations (inserts, updates with operators and pipelines, replaces, deletes, multi-document
 * transactions, and DDL: index creation and removal, hiding, TTL changes, renames inside, into and
 * out of the synced namespaces, drops, collection creation with options) and a runner that plays
 * them against a source cluster with the driver. Keys come from a small range, so documents are
 * written many times (hot documents) and operations collide. An operation the source refuses (a
 * duplicate key, a missing collection) is part of the game: it simply changes nothing.
 * (Not a test file.)
 */
import fc from 'fast-check';
import { Double, Int32, Long, type Document } from 'bson';
import type { MongoClient } from 'mongodb';

/** Synced collections the workload writes to (renames move data between them). */
export const SYNCED = ['c0', 'c1', 'c2', 'c3'] as const;
/** A collection the test's filter leaves out (renames into it leave the sync). */
export const EXCLUDED = 'skip';

type Coll = string;

export type Op =
  | { kind: 'insert'; coll: Coll; key: number; doc: Document }
  | { kind: 'set'; coll: Coll; key: number; field: string; value: unknown }
  | { kind: 'inc'; coll: Coll; key: number; by: number }
  | { kind: 'unset'; coll: Coll; key: number; field: string }
  | { kind: 'push'; coll: Coll; key: number; value: unknown }
  | { kind: 'pipeline'; coll: Coll; key: number; text: string }
  | { kind: 'replace'; coll: Coll; key: number; doc: Document }
  | { kind: 'upsert'; coll: Coll; key: number; doc: Document }
  | { kind: 'delete'; coll: Coll; key: number }
  | { kind: 'deleteRange'; coll: Coll; from: number; to: number }
  | { kind: 'transaction'; ops: Op[] }
  | { kind: 'createIndex'; coll: Coll; field: string; unique: boolean; hidden: boolean; ttl: boolean }
  | { kind: 'dropIndex'; coll: Coll; field: string }
  | { kind: 'hideIndex'; coll: Coll; field: string; hidden: boolean }
  | { kind: 'ttl'; coll: Coll; field: string; seconds: number }
  | { kind: 'rename'; from: Coll; to: Coll }
  | { kind: 'drop'; coll: Coll }
  | { kind: 'create'; coll: Coll; validated: boolean };

const FIELDS = ['a', 'b', 'n', 'tags'];
const collection = fc.constantFrom<Coll>(...SYNCED);
const key = fc.integer({ min: 0, max: 24 });
const field = fc.constantFrom(...FIELDS);

/** Values of several BSON types (an int and a double of one value are different BSON). */
const value: fc.Arbitrary<unknown> = fc.oneof(
  fc.integer({ min: -5, max: 5 }).map((n) => new Int32(n)),
  fc.integer({ min: -5, max: 5 }).map((n) => new Double(n)),
  fc.integer({ min: 0, max: 3 }).map((n) => Long.fromNumber(n)),
  fc.string({ maxLength: 6 }),
  fc.constant(null),
  fc.array(
    fc.integer({ min: 0, max: 9 }).map((n) => new Int32(n)),
    { maxLength: 3 },
  ),
  fc.record({ x: fc.integer({ min: 0, max: 3 }).map((n) => new Int32(n)), y: fc.string({ maxLength: 3 }) }),
);

const body: fc.Arbitrary<Document> = fc.record(
  { a: value, b: value, n: fc.integer({ min: 0, max: 99 }).map((n) => new Int32(n)), pad: fc.string({ maxLength: 40 }) },
  { requiredKeys: ['n'] },
);

const crud: fc.Arbitrary<Op> = fc.oneof(
  { weight: 4, arbitrary: fc.record({ kind: fc.constant('insert' as const), coll: collection, key, doc: body }) },
  { weight: 4, arbitrary: fc.record({ kind: fc.constant('set' as const), coll: collection, key, field, value }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('inc' as const), coll: collection, key, by: fc.integer({ min: 1, max: 3 }) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('unset' as const), coll: collection, key, field }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('push' as const), coll: collection, key, value }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('pipeline' as const), coll: collection, key, text: fc.string({ maxLength: 4 }) }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('replace' as const), coll: collection, key, doc: body }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('upsert' as const), coll: collection, key, doc: body }) },
  { weight: 3, arbitrary: fc.record({ kind: fc.constant('delete' as const), coll: collection, key }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('deleteRange' as const), coll: collection, from: key, to: key }) },
);

const ddl: fc.Arbitrary<Op> = fc.oneof(
  fc.record({
    kind: fc.constant('createIndex' as const),
    coll: collection,
    field: fc.constantFrom('a', 'b', 'n'),
    unique: fc.boolean(),
    hidden: fc.boolean(),
    ttl: fc.boolean(),
  }),
  fc.record({ kind: fc.constant('dropIndex' as const), coll: collection, field: fc.constantFrom('a', 'b', 'n') }),
  fc.record({ kind: fc.constant('hideIndex' as const), coll: collection, field: fc.constantFrom('a', 'b', 'n'), hidden: fc.boolean() }),
  fc.record({
    kind: fc.constant('ttl' as const),
    coll: collection,
    field: fc.constantFrom('a', 'b', 'n'),
    seconds: fc.integer({ min: 100_000, max: 200_000 }),
  }),
  fc.record({
    kind: fc.constant('rename' as const),
    from: fc.constantFrom<Coll>(...SYNCED, EXCLUDED),
    to: fc.constantFrom<Coll>(...SYNCED, EXCLUDED),
  }),
  fc.record({ kind: fc.constant('drop' as const), coll: collection }),
  fc.record({ kind: fc.constant('create' as const), coll: collection, validated: fc.boolean() }),
);

/** One operation: mostly CRUD, some transactions, a little DDL (`ddlWeight` of 20; 0 for none). */
export function operation(ddlWeight = 1): fc.Arbitrary<Op> {
  const transaction = fc.record({ kind: fc.constant('transaction' as const), ops: fc.array(crud, { minLength: 2, maxLength: 4 }) });
  return ddlWeight === 0
    ? fc.oneof({ weight: 18, arbitrary: crud }, { weight: 2, arbitrary: transaction })
    : fc.oneof({ weight: 18 - ddlWeight, arbitrary: crud }, { weight: 2, arbitrary: transaction }, { weight: ddlWeight, arbitrary: ddl });
}

/** A deterministic list of operations for a seed. */
export function sampleOperations(seed: number, count: number, ddlWeight = 1): Op[] {
  return fc.sample(fc.array(operation(ddlWeight), { minLength: count, maxLength: count }), { seed, numRuns: 1 })[0]!;
}

/** Initial documents: `count` per synced collection, with every kind of index the sync must carry. */
export async function seed(client: MongoClient, db: string, count: number): Promise<void> {
  for (const [i, coll] of SYNCED.entries()) {
    const docs = Array.from({ length: count }, (_, k) => ({
      _id: k,
      n: new Int32(k),
      a: `v${k % 7}`,
      b: k % 3,
      at: new Date(1_700_000_000_000 + k),
      pad: 'p'.repeat(100 + i),
    }));
    await client
      .db(db)
      .collection(coll)
      .insertMany(docs as Document[]);
  }
  const c0 = client.db(db).collection('c0');
  await c0.createIndex({ n: 1 }, { name: 'n_1', unique: true });
  await c0.createIndex({ at: 1 }, { name: 'at_1', expireAfterSeconds: 10 * 365 * 86_400 });
  await c0.createIndex({ a: 1, b: -1 }, { name: 'a_1_b_-1', hidden: true });
  await client
    .db(db)
    .collection('c1')
    .createIndex({ b: 1 }, { name: 'b_1', partialFilterExpression: { b: { $gt: 0 } } });
}

/** What playing operations did. */
export interface PlayStats {
  applied: number;
  refused: number;
}

function indexName(fieldName: string): string {
  return `w_${fieldName}`;
}

async function play(client: MongoClient, db: string, op: Op, session?: import('mongodb').ClientSession): Promise<void> {
  const database = client.db(db);
  const options = session === undefined ? {} : { session };
  switch (op.kind) {
    case 'insert':
      await database.collection(op.coll).insertOne({ _id: op.key, ...op.doc } as Document, options);
      return;
    case 'set':
      await database.collection(op.coll).updateOne({ _id: op.key } as Document, { $set: { [op.field]: op.value } }, options);
      return;
    case 'inc':
      await database.collection(op.coll).updateOne({ _id: op.key } as Document, { $inc: { n: op.by } }, options);
      return;
    case 'unset':
      await database.collection(op.coll).updateOne({ _id: op.key } as Document, { $unset: { [op.field]: '' } }, options);
      return;
    case 'push':
      await database
        .collection(op.coll)
        .updateOne({ _id: op.key } as Document, { $push: { tags: { $each: [op.value], $slice: -4 } } } as Document, options);
      return;
    case 'pipeline':
      await database
        .collection(op.coll)
        .updateOne(
          { _id: op.key } as Document,
          [{ $set: { label: { $concat: [{ $toString: '$n' }, op.text] }, old: '$$REMOVE' } }],
          options,
        );
      return;
    case 'replace':
      await database.collection(op.coll).replaceOne({ _id: op.key } as Document, op.doc, options);
      return;
    case 'upsert':
      await database.collection(op.coll).replaceOne({ _id: op.key } as Document, op.doc, { ...options, upsert: true });
      return;
    case 'delete':
      await database.collection(op.coll).deleteOne({ _id: op.key } as Document, options);
      return;
    case 'deleteRange':
      await database
        .collection(op.coll)
        .deleteMany({ _id: { $gte: Math.min(op.from, op.to), $lte: Math.max(op.from, op.to) } } as Document, options);
      return;
    case 'transaction':
      return; // played by playOperations
    case 'createIndex':
      await database.collection(op.coll).createIndex(
        { [op.field]: 1 },
        {
          name: indexName(op.field),
          ...(op.unique ? { unique: true } : {}),
          ...(op.hidden ? { hidden: true } : {}),
          ...(op.ttl ? { expireAfterSeconds: 10 * 365 * 86_400 } : {}),
        },
      );
      return;
    case 'dropIndex':
      await database.collection(op.coll).dropIndex(indexName(op.field));
      return;
    case 'hideIndex':
      await database.command({ collMod: op.coll, index: { name: indexName(op.field), hidden: op.hidden } });
      return;
    case 'ttl':
      await database.command({ collMod: op.coll, index: { name: indexName(op.field), expireAfterSeconds: op.seconds } });
      return;
    case 'rename':
      await database.collection(op.from).rename(op.to, { dropTarget: true });
      return;
    case 'drop':
      await database.collection(op.coll).drop();
      return;
    case 'create':
      await database.createCollection(op.coll, op.validated ? { validator: { n: { $exists: true } }, validationAction: 'warn' } : {});
      return;
  }
}

/** Plays operations one after the other; `between` runs after each (e.g. to interleave checks). */
export async function playOperations(
  client: MongoClient,
  db: string,
  ops: readonly Op[],
  between?: (index: number) => Promise<void>,
): Promise<PlayStats> {
  const stats: PlayStats = { applied: 0, refused: 0 };
  for (const [index, op] of ops.entries()) {
    try {
      if (op.kind === 'transaction') {
        await client.withSession((session) =>
          session.withTransaction(async () => {
            for (const inner of op.ops) await play(client, db, inner, session);
          }),
        );
      } else {
        await play(client, db, op);
      }
      stats.applied++;
    } catch {
      stats.refused++;
    }
    await between?.(index);
  }
  return stats;
}
