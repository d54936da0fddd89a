/**
 * Where a collection sharded on the destination is split before the copy, so that the copy loads
 * every shard from its first byte (a destination balancer must stay off during a sync, so nothing
 * would move the data later): `chunks` ranges of about equal share of the documents, laid out
 * over the shards in turn. mongosync makes twice as many chunks as the destination has shards;
 * so does Ferry (`chunksFor`).
 *
 * - A key whose first field is hashed: its chunks are ranges of 64-bit hash values, which are
 *   uniform whatever the data, so the points are mongod's own for an empty collection
 *   (InitialSplitPolicy: evenly spaced, symmetric around 0), with MinKey for the other fields.
 * - A ranged key: the quantiles of a sample of the source's shard-key values (`$sample`), so a
 *   skewed distribution still gives chunks of similar document counts; a hashed field after the
 *   first is MinKey in every point (its hash is not known without computing it).
 *
 * Both are pure functions of their inputs (the sampler is apart), and the points are strictly
 * increasing: equal sample values never make an empty chunk.
 */
import { Long, MinKey, type Document } from 'bson';
import type { Collection } from 'mongodb';
import { compareBsonValues } from '../bson/index.js';
import { hasLeadingHashedField, shardKeyFields, shardKeyOf, type ShardKeyPattern } from '../cluster/shard-key.js';

/** Chunks per destination shard, as mongosync pre-splits. */
export const CHUNKS_PER_SHARD = 2;

/** How many chunks a collection is split into on a destination of `shards` shards. */
export function chunksFor(shards: number): number {
  return Math.max(1, shards * CHUNKS_PER_SHARD);
}

/** Sample documents per chunk, so that the quantiles are stable. */
const SAMPLES_PER_CHUNK = 100;

const MIN_KEY = new MinKey();

/** mongod's split points of an empty collection with a leading hashed field, for `chunks` chunks. */
export function hashedSplitValues(chunks: number): Long[] {
  if (chunks <= 1) return [];
  const max = 2n ** 63n - 1n;
  const interval = (max / BigInt(chunks)) * 2n;
  const points: bigint[] = [];
  let current = 0n;
  if (chunks % 2 === 0) {
    points.push(0n);
    current += interval;
  } else {
    current += interval / 2n;
  }
  for (let i = 0; i < Math.floor((chunks - 1) / 2); i++) {
    points.push(current, -current);
    current += interval;
  }
  return points.sort((a, b) => (a < b ? -1 : a > b ? 1 : 0)).map((point) => Long.fromBigInt(point));
}

/** A key document from values in the pattern's order. */
function keyDocument(pattern: ShardKeyPattern, values: readonly unknown[]): Document {
  const doc: Document = {};
  shardKeyFields(pattern).forEach(({ path }, i) => (doc[path] = values[i]));
  return doc;
}

function compareTuples(a: readonly unknown[], b: readonly unknown[]): number {
  for (let i = 0; i < a.length; i++) {
    const order = compareBsonValues(a[i], b[i]);
    if (order !== 0) return order;
  }
  return 0;
}

/**
 * The split points (key documents) of a collection with `pattern`, for `chunks` chunks, from
 * `sample`: each sampled document's shard-key values in the pattern's order (a missing field as
 * null). A leading hashed field needs no sample.
 */
export function planSplitPoints(pattern: ShardKeyPattern, chunks: number, sample: readonly (readonly unknown[])[]): Document[] {
  const fields = shardKeyFields(pattern);
  if (hasLeadingHashedField(pattern)) {
    return hashedSplitValues(chunks).map((value) => keyDocument(pattern, [value, ...fields.slice(1).map(() => MIN_KEY)]));
  }
  // Hashed fields after the first: MinKey (a bound below every hash of the prefix's value).
  const tuples = sample.map((values) => fields.map((field, i) => (field.hashed ? MIN_KEY : (values[i] ?? null))));
  const sorted = [...tuples].sort(compareTuples);
  const points: unknown[][] = [];
  for (let i = 1; i < chunks && sorted.length > 1; i++) {
    // Never at the smallest value: the first chunk must hold a sampled document.
    const candidate = sorted[Math.max(1, Math.floor((i * sorted.length) / chunks))]!;
    const previous = points.at(-1) ?? sorted[0]!;
    if (compareTuples(candidate, previous) > 0) points.push([...candidate]);
  }
  return points.map((values) => keyDocument(pattern, values));
}

/**
 * A sample of a source collection's shard-key values for `planSplitPoints` (`$sample`, projected
 * to the key's fields, decoded type-faithfully): nothing when the key is hashed first, or one
 * chunk is wanted.
 */
export async function sampleShardKeys(
  collection: Collection,
  pattern: ShardKeyPattern,
  chunks: number,
  readOptions: Document,
): Promise<unknown[][]> {
  if (chunks <= 1 || hasLeadingHashedField(pattern)) return [];
  const fields = shardKeyFields(pattern);
  const projection: Document = Object.fromEntries(fields.map(({ path }) => [path, 1]));
  if (projection._id === undefined) projection._id = 0;
  const sample: unknown[][] = [];
  const cursor = collection.aggregate([{ $sample: { size: chunks * SAMPLES_PER_CHUNK } }, { $project: projection }], {
    allowDiskUse: true,
    ...readOptions,
  });
  for await (const doc of cursor) sample.push(Object.values(shardKeyOf(doc, pattern)));
  return sample;
}
