/**
 * mongosync's `--hotDocIDs`: documents the operator knows are updated very often (counters,
 * sequence documents). Their change events are not applied one by one, which would keep one lane
 * busy with a single document's history; the commit copies each of them from the source once
 * every event through the commit point is applied (src/commit/hot-documents.ts).
 */

/** The hot documents of one collection, by `_id` (BSON values, types kept). */
export interface HotDocuments {
  db: string;
  coll: string;
  ids: unknown[];
}
