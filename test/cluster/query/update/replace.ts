/**
 * Whole-document results (replacement updates, pipeline updates, upserted documents): mongod's
 * rules for `_id` (kept from the original when missing, may not change, always first) and for
 * top-level field names.
 */
import { ServerError } from '../../errors.js';
import { compareValues } from '../../bson-order.js';
import { describeElement } from '../../storage/keys.js';
import { BsonType, DocNode, Leaf, type Slot, slotType, typedOf } from './tree.js';

/** mongod's storageValidIdField: an `_id` may not be a regex, an array or undefined. */
export function checkIdType(id: Slot): void {
  const type = slotType(id);
  if (type === 0x0b || type === BsonType.Array || type === BsonType.Undefined) {
    const name = type === 0x0b ? 'regex' : type === BsonType.Array ? 'array' : 'undefined';
    throw new ServerError('InvalidIdField', `The '_id' value cannot be of type ${name}`);
  }
}

/** Top-level `$`-prefixed names cannot be stored through an update. */
export function checkTopLevelNames(doc: DocNode): void {
  for (const name of doc.names) {
    if (name.startsWith('$')) {
      throw new ServerError(
        'DollarPrefixedFieldName',
        `The dollar ($) prefixed field '${name}' in '${name}' is not allowed in the context of an update's replacement document. Consider using an aggregation pipeline with $replaceWith.`,
      );
    }
  }
}

/** Moves `_id` to the front (mongod stores it first). */
export function idFirst(doc: DocNode): void {
  const at = doc.names.indexOf('_id');
  if (at > 0) {
    const [value] = doc.values.splice(at, 1);
    doc.names.splice(at, 1);
    doc.names.unshift('_id');
    doc.values.unshift(value);
  }
}

/**
 * The stored form of a whole new document that replaces one whose `_id` is `originalId`: a
 * missing `_id` is taken from the original, a different one is refused. Pipeline results may
 * carry top-level `$` names (`allowDollarNames`); replacement documents may not.
 */
export function replaceWhole(replacement: DocNode, originalId: Leaf, allowDollarNames: boolean): DocNode {
  if (!allowDollarNames) checkTopLevelNames(replacement);
  const at = replacement.names.indexOf('_id');
  if (at < 0) {
    replacement.names.unshift('_id');
    replacement.values.unshift(originalId);
    return replacement;
  }
  const id = replacement.values[at];
  if (compareValues(typedOf(id), originalId.typed()) !== 0) {
    throw new ServerError(
      'ImmutableField',
      `After applying the update, the (immutable) field '_id' was found to have been altered to ${describeElement('_id', typedOf(id))}`,
    );
  }
  idFirst(replacement);
  return replacement;
}
