/**
 * Raw BSON helpers for the hot paths: find a top-level field in a document's bytes, decode only
 * that value, read `_id` and the routing fields of change events, and compare values in
 * MongoDB's canonical order.
 */
export { BsonType, bsonTypeName, type BsonTypeCode } from './element-types.js';
export {
  documentBytes,
  documentEnd,
  elementName,
  encodeFieldName,
  findElement,
  findElements,
  forEachElement,
  valueBytes,
  type FieldName,
  type RawElement,
} from './scan.js';
export { decodeDocument, decodeValue, TYPE_FAITHFUL } from './decode.js';
export { findId, readChangeEvent, readId, type ChangeEventFields, type EventNamespace } from './read.js';
export { canonicalRank, compareBsonValues, compareUtf8 } from './compare.js';
