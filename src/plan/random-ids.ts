/**
 * mongosync's `detectRandomId`: a large collection whose `_id`s do not follow the order documents
 * were inserted in (random UUIDs or hashes) is cheaper to read in natural order, sequentially, than
 * through the `_id` index, one scattered page per document. The check reads the first `_id`s in
 * natural order and measures how well their `_id` order follows it (Spearman's rank correlation):
 * ObjectIds and counters come out near 1, random values near 0.
 */
import type { Collection } from 'mongodb';
import { compareBsonValues, readId } from '../bson/index.js';
import { aggregateRaw } from '../cluster/raw-cursor.js';

/** `_id`s read in natural order for the check. */
export const RANDOM_ID_SAMPLE = 1000;
/** Below this rank correlation between insertion order and `_id` order, `_id`s count as random. */
export const RANDOM_ID_MAX_CORRELATION = 0.5;

/** Spearman's rank correlation between the position of each `_id` and its rank in `_id` order (unique values). */
export function idOrderCorrelation(ids: readonly unknown[]): number {
  const n = ids.length;
  if (n < 3) return 1;
  const ranks = new Array<number>(n);
  ids
    .map((id, position) => ({ id, position }))
    .sort((a, b) => compareBsonValues(a.id, b.id))
    .forEach((entry, rank) => (ranks[entry.position] = rank));
  let squares = 0;
  for (let position = 0; position < n; position++) squares += (position - ranks[position]!) ** 2;
  return 1 - (6 * squares) / (n * (n * n - 1));
}

/** Whether the collection's `_id`s look random against their natural order. */
export async function hasRandomIds(collection: Collection): Promise<boolean> {
  const ids: unknown[] = [];
  // A pipeline starting with $limit scans the collection in natural order.
  for await (const raw of aggregateRaw(collection, [{ $limit: RANDOM_ID_SAMPLE }, { $project: { _id: 1 } }])) ids.push(readId(raw));
  return Math.abs(idOrderCorrelation(ids)) < RANDOM_ID_MAX_CORRELATION;
}
