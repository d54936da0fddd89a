/**
 * The baseline Ferry's copy is measured against: what a dump-and-restore pipeline does, in one
 * driver process. For each selected collection, one at a time: create it with the source's
 * options, read it with `find` (documents deserialized, type-faithfully), write them with
 * unordered `insertMany` batches of 1,000 (re-serialized by the driver), then build its indexes.
 * Views are created last. Like `mongodump | mongorestore`, reading the next batch overlaps writing
 * the previous one; nothing else runs in parallel.
 *
 *   node dist/bench/baseline-copier.js --from <uri> --to <uri> [--batchDocuments 1000] [--holdOpen]
 *
 * Prints one JSON line `{"documents": n, "collections": n, "seconds": s}` when done. With
 * `--harness` a benchmark drives it over stdin, so that its CPU time and peak memory can be read
 * from /proc for the copy alone: it prints `ready` once loaded, starts copying on the first line
 * it reads, and after the report waits for stdin to close before exiting.
 */
import { createInterface } from 'node:readline';
import { performance } from 'node:perf_hooks';
import { Command } from 'commander';
import { MongoClient, type Document } from 'mongodb';
import { pino } from 'pino';
import { TYPE_FAITHFUL } from '../src/bson/index.js';
import type { Logger } from '../src/log/logger.js';
import { readSourceCatalog, type SourceNamespace } from '../src/plan/catalog.js';
import { createNamespaceSelector } from '../src/plan/namespaces.js';
import { positiveInteger } from '../scripts/lib/cli-numbers.js';
import { runIfEntryPoint } from '../scripts/lib/entry-point.js';

/** Options of `baselineCopy`. */
export interface BaselineCopyOptions {
  /** Connection string of the source. Required. */
  from: string;
  /** Connection string of the destination (its namespaces must not exist yet). Required. */
  to: string;
  /** Documents per `insertMany` (mongorestore's default batch). Default 1000. */
  batchDocuments?: number;
}

/** What `baselineCopy` did. */
export interface BaselineCopyReport {
  documents: number;
  collections: number;
  seconds: number;
}

/** Copies one collection's documents: read a batch, write it while reading the next. */
async function copyDocuments(source: MongoClient, destination: MongoClient, ns: SourceNamespace, batchDocuments: number): Promise<number> {
  const target = destination.db(ns.db).collection(ns.coll);
  // Capped collections keep their insertion order, as mongodump reads them.
  const cursor = source
    .db(ns.db)
    .collection(ns.coll)
    .find({}, { ...TYPE_FAITHFUL, batchSize: batchDocuments, ...(ns.options.capped ? { hint: { $natural: 1 } } : {}) });
  let batch: Document[] = [];
  let writing: Promise<unknown> = Promise.resolve();
  let documents = 0;
  const flush = async () => {
    await writing;
    writing = target.insertMany(batch, { ordered: false, bypassDocumentValidation: true });
    documents += batch.length;
    batch = [];
  };
  for await (const document of cursor) {
    batch.push(document);
    if (batch.length === batchDocuments) await flush();
  }
  if (batch.length > 0) await flush();
  await writing;
  return documents;
}

async function buildIndexes(destination: MongoClient, ns: SourceNamespace): Promise<void> {
  const indexes = ns.indexes.filter((index) => index.name !== '_id_').map(({ v: _v, ns: _ns, ...index }) => index);
  if (indexes.length > 0) await destination.db(ns.db).command({ createIndexes: ns.coll, indexes });
}

/** Copies every non-reserved namespace from `options.from` to `options.to` (see the module comment). */
export async function baselineCopy(options: BaselineCopyOptions): Promise<BaselineCopyReport> {
  const batchDocuments = options.batchDocuments ?? 1000;
  const started = performance.now();
  const source = new MongoClient(options.from);
  const destination = new MongoClient(options.to);
  try {
    const catalog = await readSourceCatalog(source, createNamespaceSelector(), pino({ level: 'silent' }) as unknown as Logger);
    let documents = 0;
    const collections = catalog.filter((ns) => ns.type === 'collection');
    for (const ns of collections) {
      await destination.db(ns.db).createCollection(ns.coll, ns.options);
      documents += await copyDocuments(source, destination, ns, batchDocuments);
      await buildIndexes(destination, ns);
    }
    for (const view of catalog.filter((ns) => ns.type === 'view')) {
      await destination.db(view.db).createCollection(view.coll, view.options);
    }
    return { documents, collections: collections.length, seconds: (performance.now() - started) / 1000 };
  } finally {
    await Promise.all([source.close(), destination.close()]);
  }
}

async function main(argv: string[]): Promise<void> {
  const flags = new Command()
    .name('baseline-copier')
    .description('Copy a cluster the way a dump-and-restore pipeline does (the benchmark baseline)')
    .requiredOption('--from <uri>', 'source connection string')
    .requiredOption('--to <uri>', 'destination connection string')
    .option('--batchDocuments <n>', 'documents per insertMany', positiveInteger, 1000)
    .option('--harness', 'print `ready`, copy on the first stdin line, exit when stdin closes', false)
    .parse(argv)
    .opts<{ from: string; to: string; batchDocuments: number; harness: boolean }>();
  if (!flags.harness) {
    process.stdout.write(JSON.stringify(await baselineCopy(flags)) + '\n');
    return;
  }
  const input = createInterface({ input: process.stdin });
  const closed = new Promise((resolve) => input.once('close', resolve));
  const go = new Promise((resolve) => input.once('line', resolve));
  process.stdout.write('ready\n');
  await go;
  process.stdout.write(JSON.stringify(await baselineCopy(flags)) + '\n');
  await closed;
}

runIfEntryPoint(import.meta.url, 'baseline-copier', main);
