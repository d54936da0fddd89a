/**
 * The parts of a raw CRUD change event (insert, update, replace, delete) that applying it needs,
 * read by one scan of its top-level elements: the namespace, the `_id` element of `documentKey`
 * (as bytes, ready to be copied into a statement) and `fullDocument` (bytes, or null when an
 * update's looked-up document no longer existed). Nothing is deserialized.
 */
import { BsonType, decodeValue, findElement, findElements, type RawElement, bsonTypeName } from '../bson/index.js';
import { encodeFieldName } from '../bson/scan.js';
import { idKey } from './document-key.js';
import { MissingBsonField, UnexpectedBsonType } from '../errors/errors.js';

export const CRUD_OPERATIONS = ['insert', 'update', 'replace', 'delete'] as const;
export type CrudOperation = (typeof CRUD_OPERATIONS)[number];

export function isCrudOperation(operationType: string): operationType is CrudOperation {
  return (CRUD_OPERATIONS as readonly string[]).includes(operationType);
}

export interface CrudEvent {
  operationType: CrudOperation;
  db: string;
  coll: string;
  /** The `_id` element of `documentKey`: type byte, name and value. */
  idElement: Uint8Array;
  /** Canonical key of the `_id` value (document-key.ts). */
  key: string;
  /** The document after the change; null for an update whose document was gone at lookup; undefined for deletes. */
  fullDocument: Uint8Array | null | undefined;
  /** The collection's UUID as the event names it (absent from streams without expanded events). */
  collectionUUID?: unknown;
  /** An update's `updateDescription` (bytes of the sub-document): which fields it changed. */
  updateDescription?: Uint8Array;
  /**
   * The `documentKey` (bytes of the sub-document) when it holds more than `_id`: the event comes
   * from a collection sharded on the source, and these are the document's shard-key values then.
   */
  documentKey?: Uint8Array;
}

const FIELDS = ['operationType', 'ns', 'documentKey', 'fullDocument', 'collectionUUID', 'updateDescription'].map(encodeFieldName);
const NS_FIELDS = ['db', 'coll'].map(encodeFieldName);
const ID = encodeFieldName('_id');

function string(buf: Uint8Array, element: RawElement | undefined, field: string): string {
  if (element === undefined) throw new MissingBsonField({ field: field });
  if (element.type !== BsonType.string)
    throw new UnexpectedBsonType({ field: field, expected: 'a string', actual: bsonTypeName(element.type) });
  return decodeValue(buf, element) as string;
}

/** Reads the CRUD event at `offset` of `buf`; throws if it is not one or lacks a field it needs. */
export function readCrudEvent(buf: Uint8Array, offset = 0): CrudEvent {
  const [operationType, ns, documentKey, fullDocument, collectionUUID, updateDescription] = findElements(buf, FIELDS, offset);
  const type = string(buf, operationType, 'operationType');
  if (!isCrudOperation(type))
    throw new UnexpectedBsonType({
      field: 'operationType',
      expected: 'insert, update, replace or delete',
      actual: bsonTypeName(BsonType.string),
    });
  if (ns === undefined) throw new MissingBsonField({ field: 'ns' });
  const [db, coll] = findElements(buf, NS_FIELDS, ns.valueOffset);
  if (documentKey === undefined) throw new MissingBsonField({ field: 'documentKey' });
  if (documentKey.type !== BsonType.document)
    throw new UnexpectedBsonType({ field: 'documentKey', expected: 'a document', actual: bsonTypeName(documentKey.type) });
  const id = findElement(buf, ID, documentKey.valueOffset);
  if (id === undefined) throw new MissingBsonField({ field: 'documentKey._id' });
  let document: Uint8Array | null | undefined;
  if (fullDocument === undefined || fullDocument.type === BsonType.null) {
    document = fullDocument === undefined ? undefined : null;
  } else if (fullDocument.type === BsonType.document) {
    document = buf.subarray(fullDocument.valueOffset, fullDocument.valueEnd);
  } else {
    throw new UnexpectedBsonType({ field: 'fullDocument', expected: 'a document or null', actual: bsonTypeName(fullDocument.type) });
  }
  if ((type === 'insert' || type === 'replace') && !document) throw new MissingBsonField({ field: 'fullDocument' });
  const event: CrudEvent = {
    operationType: type,
    db: string(buf, db, 'ns.db'),
    coll: string(buf, coll, 'ns.coll'),
    idElement: buf.subarray(id.nameOffset - 1, id.valueEnd),
    key: idKey(buf, id),
    fullDocument: document,
  };
  if (collectionUUID !== undefined) event.collectionUUID = decodeValue(buf, collectionUUID);
  // More than `_id`: its element ends before the document does (less its terminating byte).
  if (id.valueEnd < documentKey.valueEnd - 1 || id.nameOffset - 1 > documentKey.valueOffset + 4) {
    event.documentKey = buf.subarray(documentKey.valueOffset, documentKey.valueEnd);
  }
  if (updateDescription !== undefined && updateDescription.type === BsonType.document) {
    event.updateDescription = buf.subarray(updateDescription.valueOffset, updateDescription.valueEnd);
  }
  return event;
}
