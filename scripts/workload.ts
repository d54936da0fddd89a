/**
 * A write workload against data the generator wrote (scripts/generate.ts): what an application
 * does to its shop while it is being migrated. Inserts of new orders, customers, products, page
 * views, stock lines, audit entries and mixed-`_id` documents; updates with operators (`$set`,
 * `$inc`, `$push` with `$slice`, `$addToSet`, `$unset`, `$currentDate`) and pipelines; whole
 * document replacements; deletes; and a small share of two-document transactions (an order and
 * the stock it takes). Used by the demo, the change-event benchmark and tests.
 *
 *   node dist/scripts/workload.js --uri <uri> [--opsPerSecond 300] [--seconds 10] [--seed 1] [--idRange 1] [--prefix gen_]
 *
 * The rate is held by sending, every 20 ms, the writes that are due, as one ordered `bulkWrite`
 * per collection, the next tick waiting for them; when the cluster cannot keep up, the writes it
 * could not take are skipped rather than queued (the achieved rate is in the stats). Every write names its document by `_id`, so
 * one write changes at most one document: one change event on the source.
 *
 * New documents take generator indexes from `idRange × 10,000,000` on, so workloads given
 * different `idRange`s never insert the same `_id`. Updates, replacements and deletes pick documents the
 * generator wrote or this workload inserted; one that was deleted before simply matches nothing.
 */
import { performance } from 'node:perf_hooks';
import { Command } from 'commander';
import { Double, Int32, MongoClient, type AnyBulkWriteOperation, type Document } from 'mongodb';
import { positiveNumber, integer } from './lib/cli-numbers.js';
import { COLLECTIONS, type CollectionDefinition } from './lib/dataset.js';
import { createRandom, type Random } from './lib/random.js';
import { runIfEntryPoint } from './lib/entry-point.js';
import { redactUris } from '../src/domain/credentials.js';

/** Options of `startWorkload`. */
export interface WorkloadOptions {
  /** Connection string of the cluster to write to (a sync's source). Required. */
  uri: string;
  /** Target writes per second (each changes at most one document). Default 300. */
  opsPerSecond?: number;
  /** Seed of the writes chosen. Default 1. */
  seed?: number;
  /**
   * Which range of new `_id`s inserts take (1 – 200); concurrent or successive workloads on the
   * same data need different ones. Default 1.
   */
  idRange?: number;
  /** Prefix of the generator's database names. Default `gen_`. */
  prefix?: string;
  /** Share of writes made inside two-document transactions. Default 0.05. */
  transactionShare?: number;
  /** Stop by itself after this many seconds. Default: run until `stop()`. */
  seconds?: number;
}

/** What the workload has done so far. */
export interface WorkloadStats {
  /** Writes sent (inserts, updates, replacements, deletes; transactional ones included). */
  writes: number;
  inserts: number;
  updates: number;
  replaces: number;
  deletes: number;
  /** Committed transactions (two writes each). */
  transactions: number;
  /** Documents the source reports changed (inserted, modified, deleted): its change events. */
  changes: number;
  /** Writes the source refused (duplicate keys, ...); a healthy run has none. */
  errors: number;
  /** The first refusal's message. */
  firstError?: string;
  seconds: number;
  writesPerSecond: number;
}

export interface Workload {
  stats(): WorkloadStats;
  /** Stops after the writes in flight; resolves with the final stats. */
  stop(): Promise<WorkloadStats>;
  /** Resolves when the workload ends (its `seconds` elapsed, or `stop()`). */
  readonly finished: Promise<WorkloadStats>;
}

/** A bad option (a rate that is not positive, an `_id` range that does not exist) is an error before anything is written. */
export class InvalidWorkloadOptionError extends Error {
  override readonly name = 'InvalidWorkloadOptionError';
  readonly code = 'InvalidWorkloadOption';
}

const TICK_MS = 20;
/** Most writes one tick may send, in seconds of the rate: a cluster that fell behind is not flooded when it recovers. */
const MAX_BURST_SECONDS = 0.2;
/** Most writes one tick may send whatever the rate (bulk writes stay small; about 100,000/s at most). */
const MAX_TICK_WRITES = 2000;
/** Indexes of inserted documents: `idRange × INSERT_RANGE` onwards (Int32 `_id`s stay in range). */
const INSERT_RANGE = 10_000_000;
const MAX_ID_RANGE = 200;

type Kind = 'insert' | 'update' | 'replace' | 'delete';

/** How one generator collection is written to. */
interface Target {
  definition: CollectionDefinition;
  /** Share of the workload's writes. */
  weight: number;
  /** Share of insert, update, replace, delete (capped and mixed-`_id` collections only insert). */
  kinds: Record<Kind, number>;
  /** An update of an existing document. */
  update?: (random: Random) => Document | Document[];
}

const INSERT_ONLY: Record<Kind, number> = { insert: 1, update: 0, replace: 0, delete: 0 };
const MIXED: Record<Kind, number> = { insert: 0.35, update: 0.45, replace: 0.1, delete: 0.1 };
const STATUSES = ['open', 'paid', 'shipped', 'delivered', 'cancelled'];
const WORDS = ['river', 'stone', 'amber', 'lantern', 'copper', 'meadow', 'harbor', 'orbit'];

function definition(db: string, name: string): CollectionDefinition {
  const found = COLLECTIONS.find((c) => c.db === db && c.name === name);
  if (found === undefined) throw new Error(`the generator has no collection ${db}.${name}`);
  return found;
}

const TARGETS: readonly Target[] = [
  {
    definition: definition('shop', 'orders'),
    weight: 0.3,
    kinds: MIXED,
    update: (random) => {
      const choice = random.int(0, 4);
      if (choice === 0) return { $set: { status: random.pick(STATUSES) }, $currentDate: { updatedAt: true } };
      if (choice === 1) return { $inc: { total: new Double(random.int(1, 500) / 100) } };
      if (choice === 2) {
        return {
          $push: { items: { $each: [{ sku: `SKU-${random.int(0, 9999)}`, qty: new Int32(1), price: new Double(9.99) }], $slice: -8 } },
        };
      }
      if (choice === 3) return { $unset: { notes: '' } };
      return [{ $set: { itemCount: { $size: '$items' }, reviewed: true } }];
    },
  },
  {
    definition: definition('shop', 'customers'),
    weight: 0.2,
    kinds: MIXED,
    update: (random) => {
      const choice = random.int(0, 2);
      if (choice === 0) return { $set: { 'address.city': random.pick(['Lisbon', 'Oslo', 'Osaka', 'Lima']) } };
      if (choice === 1) return { $addToSet: { tags: random.pick(WORDS) } };
      return { $unset: { loyaltyId: '' } };
    },
  },
  {
    definition: definition('shop', 'products'),
    weight: 0.15,
    kinds: MIXED,
    update: (random) =>
      random.chance(0.5)
        ? { $inc: { stock: new Int32(random.int(-3, 10)) } }
        : {
            $push: { ratings: { $each: [new Int32(random.int(1, 5))], $slice: -20 } },
            $set: { price: new Double(random.int(100, 50_000) / 100) },
          },
  },
  {
    definition: definition('analytics', 'pageViews'),
    weight: 0.15,
    kinds: { insert: 0.8, update: 0.1, replace: 0, delete: 0.1 },
    update: (random) => ({ $set: { durationMs: new Int32(random.int(5, 120_000)) } }),
  },
  {
    definition: definition('inventory', 'stock'),
    weight: 0.1,
    kinds: { insert: 0.1, update: 0.8, replace: 0.05, delete: 0.05 },
    update: (random) => ({ $inc: { quantity: new Int32(random.int(-5, 5)) }, $currentDate: { lastCounted: true } }),
  },
  { definition: definition('shop', 'auditLog'), weight: 0.05, kinds: INSERT_ONLY },
  { definition: definition('analytics', 'mixedKeys'), weight: 0.05, kinds: INSERT_ONLY },
];

function pickWeighted<T extends string>(random: Random, weights: Record<T, number>): T {
  let r = random.next() * Object.values<number>(weights).reduce((a, b) => a + b, 0);
  for (const [key, weight] of Object.entries<number>(weights)) {
    r -= weight;
    if (r < 0) return key as T;
  }
  return Object.keys(weights)[0] as T;
}

/** The documents of one collection the workload knows about. */
interface KnownDocuments {
  /** Documents the generator wrote (indexes 0 … generated − 1). */
  generated: number;
  /** Next index this workload inserts. */
  nextInsert: number;
  firstInsert: number;
}

function emptyStats(): WorkloadStats {
  return {
    writes: 0,
    inserts: 0,
    updates: 0,
    replaces: 0,
    deletes: 0,
    transactions: 0,
    changes: 0,
    errors: 0,
    seconds: 0,
    writesPerSecond: 0,
  };
}

/** Starts the workload; it writes in the background until `stop()` or `seconds`. */
export async function startWorkload(options: WorkloadOptions): Promise<Workload> {
  const rate = options.opsPerSecond ?? 300;
  const seed = options.seed ?? 1;
  const prefix = options.prefix ?? 'gen_';
  const transactionShare = options.transactionShare ?? 0.05;
  if (!(rate > 0)) throw new InvalidWorkloadOptionError(`opsPerSecond must be positive, got ${rate}`);
  const idRange = options.idRange ?? 1;
  if (!Number.isSafeInteger(seed)) throw new InvalidWorkloadOptionError(`seed must be an integer, got ${seed}`);
  if (!Number.isSafeInteger(idRange) || idRange < 1 || idRange > MAX_ID_RANGE) {
    throw new InvalidWorkloadOptionError(`idRange must be an integer from 1 to ${MAX_ID_RANGE}, got ${idRange}`);
  }
  const client = await MongoClient.connect(options.uri);
  const random = createRandom(seed * 7919 + idRange);
  // `_id`s are a function of a document's index for these collections; a separate stream keeps
  // building them from shifting the workload's own choices.
  const idRandom = createRandom(1);
  const known = new Map<Target, KnownDocuments>();
  try {
    for (const target of TARGETS) {
      const generated = await client
        .db(prefix + target.definition.db)
        .collection(target.definition.name)
        .estimatedDocumentCount();
      known.set(target, { generated, nextInsert: idRange * INSERT_RANGE, firstInsert: idRange * INSERT_RANGE });
    }
  } catch (error) {
    await client.close();
    throw error;
  }
  const collection = (target: Target) => client.db(prefix + target.definition.db).collection(target.definition.name);
  const weights = Object.fromEntries(TARGETS.map((t, i) => [String(i), t.weight])) as Record<string, number>;

  const stats = emptyStats();
  const started = performance.now();
  let stopping = false;
  const refused = (error: unknown, writes = 1) => {
    stats.errors += writes;
    stats.firstError ??= redactUris((error as Error).message);
  };

  /** An existing document's index: half the time one this workload inserted, if any. */
  const existingIndex = (docs: KnownDocuments): number | undefined => {
    const inserted = docs.nextInsert - docs.firstInsert;
    if (inserted > 0 && (docs.generated === 0 || random.chance(0.5))) return docs.firstInsert + random.int(0, inserted - 1);
    return docs.generated > 0 ? random.int(0, docs.generated - 1) : undefined;
  };

  const nextWrite = (target: Target): AnyBulkWriteOperation => {
    const docs = known.get(target)!;
    let kind = pickWeighted(random, target.kinds);
    const index = kind === 'insert' ? undefined : existingIndex(docs);
    if (index === undefined) kind = 'insert';
    if (kind === 'insert') {
      stats.inserts++;
      return { insertOne: { document: target.definition.document(docs.nextInsert++, random) } };
    }
    const _id = target.definition.document(index!, idRandom)._id;
    if (kind === 'update') {
      stats.updates++;
      return { updateOne: { filter: { _id }, update: target.update!(random) } };
    }
    if (kind === 'replace') {
      stats.replaces++;
      const { _id: _ignored, ...replacement } = target.definition.document(index!, random);
      return { replaceOne: { filter: { _id }, replacement } };
    }
    stats.deletes++;
    return { deleteOne: { filter: { _id } } };
  };

  const orders = TARGETS[0]!;
  const stock = TARGETS.find((t) => t.definition.name === 'stock')!;
  /** An order and the stock it takes, atomically. */
  const transaction = async (): Promise<void> => {
    const order = orders.definition.document(known.get(orders)!.nextInsert++, random);
    const stockIndex = existingIndex(known.get(stock)!) ?? 0;
    const stockId = stock.definition.document(stockIndex, idRandom)._id;
    stats.inserts++;
    stats.updates++;
    const session = client.startSession();
    try {
      let changes = 0;
      await session.withTransaction(async () => {
        await collection(orders).insertOne(order, { session });
        const updated = await collection(stock).updateOne({ _id: stockId }, { $inc: { quantity: new Int32(-1) } }, { session });
        changes = 1 + updated.modifiedCount;
      });
      stats.transactions++;
      stats.changes += changes;
    } catch (error) {
      refused(error, 2);
    } finally {
      await session.endSession();
    }
  };

  const tick = async (due: number): Promise<void> => {
    const byTarget = new Map<Target, AnyBulkWriteOperation[]>();
    const work: Promise<void>[] = [];
    for (let i = 0; i < due; i++) {
      if (transactionShare > 0 && random.chance(transactionShare / 2)) {
        // Two writes at once: counts for two of the due writes.
        work.push(transaction());
        stats.writes += 2;
        i++;
        continue;
      }
      const target = TARGETS[Number(pickWeighted(random, weights))]!;
      const write = nextWrite(target);
      stats.writes++;
      const list = byTarget.get(target) ?? [];
      list.push(write);
      byTarget.set(target, list);
    }
    for (const [target, writes] of byTarget) {
      work.push(
        collection(target)
          .bulkWrite(writes, { ordered: true })
          .then((result) => {
            stats.changes += result.insertedCount + result.modifiedCount + result.deletedCount + result.upsertedCount;
          })
          .catch((error: unknown) => {
            // An ordered bulk stops at its first error: the rest of it was not written.
            const written = (error as { result?: { insertedCount: number; modifiedCount: number; deletedCount: number } }).result;
            if (written !== undefined) stats.changes += written.insertedCount + written.modifiedCount + written.deletedCount;
            refused(error);
          }),
      );
    }
    await Promise.all(work);
  };

  const elapsedSeconds = () => (performance.now() - started) / 1000;
  const snapshot = (): WorkloadStats => {
    const seconds = elapsedSeconds();
    return { ...stats, seconds, writesPerSecond: seconds > 0 ? stats.writes / seconds : 0 };
  };

  const finished = (async () => {
    try {
      // A token bucket: writes accrue at the rate, at most MAX_BURST_SECONDS' worth.
      let credit = 0;
      let last = performance.now();
      while (!stopping) {
        if (options.seconds !== undefined && elapsedSeconds() >= options.seconds) break;
        const now = performance.now();
        credit = Math.min(credit + (rate * (now - last)) / 1000, Math.max(1, Math.min(rate * MAX_BURST_SECONDS, MAX_TICK_WRITES)));
        last = now;
        const due = Math.floor(credit);
        credit -= due;
        if (due > 0) await tick(due);
        const wait = TICK_MS - (performance.now() - now);
        if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
      }
      return snapshot();
    } finally {
      await client.close();
    }
  })();

  return {
    stats: snapshot,
    stop: () => {
      stopping = true;
      return finished;
    },
    finished,
  };
}

/** The command line: runs the workload for `--seconds` (or until SIGINT) and prints its stats. */
export async function main(argv: string[]): Promise<void> {
  const flags = new Command()
    .name('workload')
    .description("Write to the generator's data like an application would, at a steady rate")
    .requiredOption('--uri <uri>', 'connection string of the cluster to write to')
    .option('--opsPerSecond <n>', 'writes per second', positiveNumber, 300)
    .option('--seconds <n>', 'stop after this many seconds (default: until interrupted)', positiveNumber)
    .option('--seed <n>', 'seed of the writes chosen', integer, 1)
    .option('--idRange <n>', `range of the new _ids (1-${MAX_ID_RANGE}); differ for workloads on the same data`, integer, 1)
    .option('--prefix <prefix>', "prefix of the generator's database names", 'gen_')
    .option('--transactionShare <n>', 'share of writes made in two-document transactions', Number, 0.05)
    .parse(argv)
    .opts<Omit<WorkloadOptions, 'uri'> & { uri: string }>();
  const workload = await startWorkload(flags);
  process.once('SIGINT', () => void workload.stop());
  process.stdout.write(JSON.stringify(await workload.finished, null, 2) + '\n');
}

runIfEntryPoint(import.meta.url, 'workload', main);
