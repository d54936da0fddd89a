/**
 * Whether an update event may have changed a document's shard key on a sharded destination,
 * read from its raw `updateDescription` (`updatedFields`, whose names are the dotted paths set;
 * `removedFields` and `truncatedArrays`, the paths removed or cut): a path touches a key field
 * when it is that field, a document holding it, or a part of it. Without an `updateDescription`
 * nothing says the key stayed: it may have changed.
 */
import { BsonType, findElements, forEachElement, decodeValue, elementName } from '../bson/index.js';
import { encodeFieldName } from '../bson/scan.js';
import type { ShardKeyPattern } from '../cluster/shard-key.js';

const FIELDS = ['updatedFields', 'removedFields', 'truncatedArrays'].map(encodeFieldName);

function touches(path: string, keyPaths: readonly string[]): boolean {
  return keyPaths.some((key) => path === key || key.startsWith(`${path}.`) || path.startsWith(`${key}.`));
}

/** Whether the update described by `updateDescription` (bytes of that sub-document) may change a field of `key`. */
export function mayChangeShardKey(updateDescription: Uint8Array | undefined, key: ShardKeyPattern): boolean {
  if (updateDescription === undefined) return true;
  const keyPaths = Object.keys(key);
  const [updated, removed, truncated] = findElements(updateDescription, FIELDS);
  let changed = false;
  if (updated !== undefined && updated.type === BsonType.document) {
    forEachElement(
      updateDescription,
      (element) => (changed = touches(elementName(updateDescription, element), keyPaths)),
      updated.valueOffset,
    );
  }
  for (const list of [removed, truncated]) {
    if (changed || list === undefined || list.type !== BsonType.array) continue;
    forEachElement(
      updateDescription,
      (element) => {
        const value = decodeValue(updateDescription, element);
        const path = typeof value === 'object' && value !== null ? (value as { field?: unknown }).field : value;
        return (changed = touches(String(path), keyPaths));
      },
      list.valueOffset,
    );
  }
  return changed;
}
