/**
 * The steps every updating command shares (`update`, `findAndModify`): apply a compiled update to
 * one stored document or build the upserted one, check the result's size and the collection's
 * validator, and write it through the instance so it reaches the oplog.
 */
import { ServerError } from '../errors.js';
import type { OpContext, Instance } from '../instance.js';
import type { Collection, DocEntry } from '../storage/collection.js';
import type { CompiledUpdate, WriteClock } from '../query/update/compile.js';
import { MAX_BSON_OBJECT_SIZE } from './handshake.js';
import { ownedCopy } from '../storage/memory.js';
import { type DocNode, type Leaf, slotType, typeName } from '../query/update/tree.js';

/** One write's instant: `$currentDate` values shared by every document it changes. */
export function writeClock(instance: Instance): WriteClock {
  return { now: new Date(), timestamp: instance.clusterTime() };
}

function checkSize(raw: Buffer): void {
  if (raw.length > MAX_BSON_OBJECT_SIZE) {
    throw new ServerError('BSONObjectTooLarge', `Resulting document after update is larger than ${MAX_BSON_OBJECT_SIZE}`);
  }
}

export interface WriteTarget {
  instance: Instance;
  op: OpContext;
  collection: Collection;
  bypassDocumentValidation: boolean;
}

/** Updates one stored document; returns its new bytes, or undefined when nothing changed. */
export function updateEntry(
  target: WriteTarget,
  entry: DocEntry,
  update: CompiledUpdate,
  filter: Record<string, unknown> | undefined,
  clock: WriteClock,
): Buffer | undefined {
  const result = update.apply(entry.raw, filter, clock);
  if (!result) return undefined;
  checkSize(result.raw);
  target.instance.validateForWrite?.(target.collection, result.raw, target.bypassDocumentValidation, entry.raw);
  const raw = ownedCopy(result.raw);
  target.instance.updateDocument(target.op, target.collection, entry, raw, result.description as Record<string, unknown> | undefined);
  return raw;
}

/** Inserts the document an upsert builds from its query and update; returns it and its `_id`. */
export function insertUpserted(
  target: Omit<WriteTarget, 'collection'> & { db: string; collectionName: string },
  update: CompiledUpdate,
  query: Buffer,
  clock: WriteClock,
): { raw: Buffer; id: unknown } {
  const doc = update.upsertDocument(query, clock);
  checkSize(doc.raw);
  const collection = target.instance.collectionForWrite(target.op, target.db, target.collectionName);
  target.instance.validateForWrite?.(collection, doc.raw, target.bypassDocumentValidation);
  target.instance.insertDocument(target.op, collection, ownedCopy(doc.raw), doc.id);
  return doc;
}

/** The raw value of a statement field, or undefined. */
export function statementField(statement: DocNode, name: string): Leaf | undefined {
  const i = statement.indexOf(name);
  return i < 0 ? undefined : (statement.values[i] as Leaf);
}

/** Checks a statement field is a document (mongod's IDL type error otherwise). */
export function requireObject(field: string, leaf: Leaf | undefined, required: boolean): Leaf | undefined {
  if (leaf === undefined) {
    if (required) throw new ServerError('IDLFailedToParse', `BSON field '${field}' is missing but a required field`);
    return undefined;
  }
  if (slotType(leaf) !== 0x03) {
    throw new ServerError('TypeMismatch', `BSON field '${field}' is the wrong type '${typeName(leaf.type)}', expected type 'object'`);
  }
  return leaf;
}
