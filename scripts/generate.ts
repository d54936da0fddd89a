/**
 * The data generator: fills a cluster with a deterministic, realistic dataset (see
 * `lib/dataset.ts`) for tests, the demo and benchmarks.
 *
 *   node dist/scripts/generate.js --uri <uri> [--sizeMB 10] [--seed 1] [--prefix gen_] [--drop]
 *
 * prints a JSON report of what was written (documents and BSON bytes per collection). The same
 * seed and size always write the same bytes. Documents go in large unordered batches, and the next
 * batch is built while the previous one is being inserted.
 */
import { pathToFileURL } from 'node:url';
import { Command, InvalidArgumentError } from 'commander';
import { calculateObjectSize } from 'bson';
import { MongoClient, type Db, type Document } from 'mongodb';
import { COLLECTIONS, FIXED_DOCUMENT_COUNT, VIEWS, type CollectionDefinition } from './lib/dataset.js';
import { createRandom } from './lib/random.js';

/** Options of `generateDataset`. */
export interface GenerateOptions {
  /** Connection string of the cluster to fill. Required. */
  uri: string;
  /** Approximate total BSON size of the documents to write, in MiB. Default 10. */
  sizeMB?: number;
  /** Seed of the pseudo-random data: one seed and size always give the same bytes. Default 1. */
  seed?: number;
  /** Prefix of the database names (`<prefix>shop`...), keeping clear of real data. Default `gen_`. */
  prefix?: string;
  /** Drop the generator's databases first if they exist. Default false: a non-empty one is an error. */
  drop?: boolean;
  /** Target BSON bytes of one `insertMany` batch. Default 4 MiB. */
  batchBytes?: number;
}

/** What one collection received. */
export interface CollectionReport {
  ns: string;
  documents: number;
  /** Sum of the documents' BSON sizes. */
  bytes: number;
}

/** What `generateDataset` wrote. */
export interface GenerateReport {
  seed: number;
  sizeMB: number;
  databases: string[];
  collections: CollectionReport[];
  views: string[];
  indexes: number;
  totalDocuments: number;
  totalBytes: number;
}

/** Raised when the target databases already hold data and `drop` was not asked for. */
export class GeneratorTargetNotEmptyError extends Error {
  override readonly name = 'GeneratorTargetNotEmptyError';
  readonly code = 'GeneratorTargetNotEmpty';
}

const MiB = 1024 * 1024;
const MAX_BATCH_DOCUMENTS = 10_000;

/** Prepares the databases: refuses (or drops, if asked) existing generator data. */
async function prepareDatabases(client: MongoClient, names: string[], drop: boolean): Promise<void> {
  for (const name of names) {
    const db = client.db(name);
    const existing = await db.listCollections({}, { nameOnly: true }).toArray();
    if (existing.length === 0) continue;
    if (!drop) {
      throw new GeneratorTargetNotEmptyError(
        `database ${name} already exists with ${existing.length} collection(s); pass drop to replace it`,
      );
    }
    await db.dropDatabase();
  }
}

async function createCollection(db: Db, definition: CollectionDefinition, targetBytes: number): Promise<void> {
  const options: Document = { ...definition.options };
  // A capped collection sized to hold its whole share (plus slack), so the report stays honest.
  if (options.capped) options.size = Math.max(1 * MiB, Math.ceil(targetBytes * 2));
  await db.createCollection(definition.name, options);
  for (const index of definition.indexes) {
    await db.collection(definition.name).createIndex(index.key, index.options);
  }
}

/** Writes one collection's documents; returns its report line. */
async function fillCollection(
  db: Db,
  definition: CollectionDefinition,
  targetBytes: number,
  seed: number,
  batchBytes: number,
): Promise<CollectionReport> {
  // Each collection has its own stream of numbers, so changing one never shifts another.
  const random = createRandom(seed * 1_000_003 + hashName(`${definition.db}.${definition.name}`));
  const collection = db.collection(definition.name);
  const fixedCount = definition.share === 0 ? FIXED_DOCUMENT_COUNT : Infinity;
  let documents = 0;
  let bytes = 0;
  let pending: Promise<unknown> = Promise.resolve();
  while (documents < fixedCount && (definition.share === 0 || bytes < targetBytes)) {
    const batch: Document[] = [];
    let size = 0;
    while (
      size < batchBytes &&
      batch.length < MAX_BATCH_DOCUMENTS &&
      documents < fixedCount &&
      (definition.share === 0 || bytes < targetBytes)
    ) {
      const document = definition.document(documents, random);
      const documentBytes = calculateObjectSize(document);
      batch.push(document);
      size += documentBytes;
      bytes += documentBytes;
      documents++;
    }
    await pending;
    pending = collection.insertMany(batch, { ordered: false });
  }
  await pending;
  return { ns: `${db.databaseName}.${definition.name}`, documents, bytes };
}

/** A stable 31-bit hash of a name (FNV-1a). */
function hashName(name: string): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < name.length; i++) hash = Math.imul(hash ^ name.charCodeAt(i), 0x01000193);
  return (hash >>> 0) & 0x7fffffff;
}

/** Fills the cluster at `options.uri` with the generator's dataset and reports what it wrote. */
export async function generateDataset(options: GenerateOptions): Promise<GenerateReport> {
  const sizeMB = options.sizeMB ?? 10;
  const seed = options.seed ?? 1;
  const prefix = options.prefix ?? 'gen_';
  const batchBytes = options.batchBytes ?? 4 * MiB;
  if (!(sizeMB > 0)) throw new RangeError(`sizeMB must be positive, got ${sizeMB}`);
  if (!Number.isSafeInteger(seed)) throw new RangeError(`seed must be an integer, got ${seed}`);

  const databases = [...new Set(COLLECTIONS.map((c) => prefix + c.db))];
  const client = new MongoClient(options.uri);
  try {
    await client.connect();
    await prepareDatabases(client, databases, options.drop ?? false);
    const report: GenerateReport = {
      seed,
      sizeMB,
      databases,
      collections: [],
      views: [],
      indexes: 0,
      totalDocuments: 0,
      totalBytes: 0,
    };
    for (const definition of COLLECTIONS) {
      const db = client.db(prefix + definition.db);
      const targetBytes = definition.share * sizeMB * MiB;
      await createCollection(db, definition, targetBytes);
      const line = await fillCollection(db, definition, targetBytes, seed, batchBytes);
      report.collections.push(line);
      report.indexes += definition.indexes.length;
      report.totalDocuments += line.documents;
      report.totalBytes += line.bytes;
    }
    for (const view of VIEWS) {
      await client.db(prefix + view.db).createCollection(view.name, { viewOn: view.viewOn, pipeline: view.pipeline });
      report.views.push(`${prefix}${view.db}.${view.name}`);
    }
    return report;
  } finally {
    await client.close();
  }
}

function positiveNumber(value: string): number {
  const n = Number(value);
  if (!(n > 0)) throw new InvalidArgumentError('must be a positive number');
  return n;
}

function integer(value: string): number {
  const n = Number(value);
  if (!Number.isSafeInteger(n)) throw new InvalidArgumentError('must be an integer');
  return n;
}

/** The command line: parses flags, generates, prints the report as JSON. */
export async function main(argv: string[]): Promise<void> {
  const program = new Command()
    .name('generate')
    .description('Fill a cluster with a deterministic, realistic dataset')
    .requiredOption('--uri <uri>', 'connection string of the cluster to fill')
    .option('--sizeMB <n>', 'approximate BSON size to write, in MiB', positiveNumber, 10)
    .option('--seed <n>', 'seed: one seed and size always write the same data', integer, 1)
    .option('--prefix <prefix>', 'prefix of the database names', 'gen_')
    .option('--drop', 'drop the generator databases first if they exist', false)
    .parse(argv);
  const flags = program.opts<{ uri: string; sizeMB: number; seed: number; prefix: string; drop: boolean }>();
  const report = await generateDataset(flags);
  process.stdout.write(JSON.stringify(report, null, 2) + '\n');
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  main(process.argv).catch((error: Error) => {
    // One line, and never the URI (it may carry a password).
    process.stderr.write(`generate: ${error.message}\n`);
    process.exit(1);
  });
}
