/**
 * Turning mingo's results (plain JS, numbers promoted) back into BSON without losing types: a
 * value equal to the one at the same place in the original document keeps the original bytes
 * (so a Double 2.0 stays a double, an Int64 stays a long); only values the pipeline computed are
 * encoded from JS (integral numbers as int32/int64, others as double — see the README).
 */
import { compareValues } from '../bson-order.js';
import { DocNode, Leaf, type Slot, BsonType, promotedOf, slotType } from './update/tree.js';

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return (
    typeof v === 'object' &&
    v !== null &&
    !Array.isArray(v) &&
    !(v instanceof Date) &&
    !(v instanceof RegExp) &&
    (v as { _bsontype?: string })._bsontype === undefined
  );
}

/** True when a promoted value is exactly the promoted form of the original slot. */
function samePromoted(value: unknown, original: unknown): boolean {
  if (value === original) return true;
  if (typeof value !== typeof original || value === null || original === null) return false;
  if (typeof value !== 'object') return Number.isNaN(value) && Number.isNaN(original);
  if (Array.isArray(value)) {
    return Array.isArray(original) && value.length === original.length && value.every((v, i) => samePromoted(v, original[i]));
  }
  if (value instanceof Date) return original instanceof Date && value.getTime() === original.getTime();
  if (isPlainObject(value)) {
    if (!isPlainObject(original)) return false;
    const a = Object.keys(value);
    const b = Object.keys(original);
    return a.length === b.length && a.every((k, i) => k === b[i] && samePromoted(value[k], original[k]));
  }
  const t = (value as { _bsontype?: string })._bsontype;
  return t !== undefined && t === (original as { _bsontype?: string })._bsontype && compareValues(value, original) === 0;
}

/**
 * Encodes `value` (a mingo result) as a slot, reusing `original`'s bytes wherever the value is
 * unchanged; objects and arrays are rebuilt field by field against their originals.
 */
export function reencode(value: unknown, original: Slot | undefined): Slot {
  if (original !== undefined) {
    const type = slotType(original);
    const container = type === BsonType.Object || type === BsonType.Array;
    if (container && samePromoted(value, promotedOf(original))) return original;
    if (isPlainObject(value) && type === BsonType.Object) {
      const node = original instanceof DocNode ? original : DocNode.parse(original.bytes);
      const out = DocNode.empty(false);
      for (const [key, v] of Object.entries(value)) {
        if (v === undefined) continue;
        out.names.push(key);
        out.values.push(reencode(v, node.get(key)));
      }
      return out;
    }
    if (Array.isArray(value) && type === BsonType.Array) {
      const node = original instanceof DocNode ? original : DocNode.parse(original.bytes, true);
      return new DocNode(
        true,
        [],
        value.map((v, i) => reencode(v, i < node.length ? node.values[i] : undefined)),
      );
    }
    const leaf = original instanceof DocNode ? undefined : original;
    if (leaf && !leaf.isContainer && samePromoted(value, leaf.promoted())) return leaf;
  }
  return Leaf.of(value);
}

/** Encodes a mingo result document against the original document's tree. */
export function reencodeDocument(value: Record<string, unknown>, original: DocNode | undefined): DocNode {
  const slot = reencode(value, original);
  return slot instanceof DocNode ? slot : DocNode.parse(slot.bytes);
}
