/**
 * Checks `--hotDocIDs` values: mongosync's form, one JSON object per collection,
 * `{"db": "<db>", "collection": "<coll>", "ids": [{"_id": <canonical extended JSON>}, ...]}`.
 * `_id`s are read as canonical extended JSON, so `{"$numberLong": "7"}` stays a 64-bit integer
 * and `{"$oid": "..."}` an ObjectId.
 */
import { EJSON } from 'bson';
import type { HotDocuments } from '../domain/hot-documents.js';
import { InvalidConfiguration } from '../errors/errors.js';

const FIELDS = ['db', 'collection', 'ids'];

function checkEntry(entry: Record<string, unknown>, where: string): HotDocuments {
  const unknown = Object.keys(entry).find((key) => !FIELDS.includes(key));
  if (unknown !== undefined) throw new InvalidConfiguration(`${where}: unknown field "${unknown}" (expected db, collection, ids)`);
  const { db, collection, ids } = entry;
  if (typeof db !== 'string' || db.length === 0) throw new InvalidConfiguration(`${where}: "db" must be a non-empty string`);
  if (typeof collection !== 'string' || collection.length === 0) {
    throw new InvalidConfiguration(`${where}: "collection" must be a non-empty string`);
  }
  if (!Array.isArray(ids) || ids.length === 0) {
    throw new InvalidConfiguration(`${where}: "ids" must be a non-empty array of {"_id": <value>}`);
  }
  const values = ids.map((item: unknown, index) => {
    if (item === null || typeof item !== 'object' || Array.isArray(item) || !('_id' in item) || Object.keys(item).length !== 1) {
      throw new InvalidConfiguration(`${where}: ids[${index}] must be {"_id": <canonical extended JSON>}, got ${JSON.stringify(item)}`);
    }
    try {
      return (EJSON.deserialize(item as Record<string, unknown>, { relaxed: false }) as { _id: unknown })._id;
    } catch (error) {
      throw new InvalidConfiguration(`${where}: ids[${index}] is not valid extended JSON: ${(error as Error).message}`);
    }
  });
  return { db, coll: collection, ids: values };
}

/** The checked entries; `where` names the option's origin in errors. */
export function checkHotDocuments(entries: readonly Record<string, unknown>[], where = '--hotDocIDs'): HotDocuments[] {
  return entries.map((entry, index) => checkEntry(entry, entries.length > 1 ? `${where}[${index}]` : where));
}
