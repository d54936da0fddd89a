/**
 * BSON element type bytes, as numbered by the BSON specification (bsonspec.org, "spec.html").
 * Deprecated types are kept: a migration must carry whatever the source holds.
 */
export const BsonType = {
  double: 0x01,
  string: 0x02,
  document: 0x03,
  array: 0x04,
  binary: 0x05,
  undefined: 0x06,
  objectId: 0x07,
  boolean: 0x08,
  date: 0x09,
  null: 0x0a,
  regex: 0x0b,
  dbPointer: 0x0c,
  code: 0x0d,
  symbol: 0x0e,
  codeWithScope: 0x0f,
  int32: 0x10,
  timestamp: 0x11,
  int64: 0x12,
  decimal128: 0x13,
  minKey: 0xff,
  maxKey: 0x7f,
} as const;

export type BsonTypeCode = (typeof BsonType)[keyof typeof BsonType];

const NAMES = new Map<number, string>(Object.entries(BsonType).map(([name, code]) => [code, name]));

/** The specification's name of a type byte (`"int32"`), or `"0x.."` for a byte no type has. */
export function bsonTypeName(type: number): string {
  return NAMES.get(type) ?? `0x${type.toString(16).padStart(2, '0')}`;
}
