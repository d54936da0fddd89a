/**
 * Shard-key changes in change events.
 *
 * `mayChangeShardKey`: whether an update event may have changed a document's shard key on a sharded destination,
 * read from its raw `updateDescription` (`updatedFields`, whose names are the dotted paths set;
 * `removedFields` and `truncatedArrays`, the paths removed or cut): a path touches a key field
 * when it is that field, a document holding it, or a part of it. Without an `updateDescription`
 * nothing says the key stayed: it may have changed.
 *
 * `mayArriveFromAnotherShard`: whether an insert event, read on one shard, may be the arriving
 * half of a document moved from another shard. mongos runs an update that changes a document's
 * shard key to another shard's range as a delete on the old shard and an insert on the new one in
 * one distributed transaction (the client's, or its own for a retryable write); each shard's
 * stream shows its half with the transaction's `lsid` and `txnNumber` and its commit time as
 * `clusterTime`, which the halves share. An insert outside a transaction never is one.
 */
import { BsonType, findElement, findElements, forEachElement, decodeValue, elementName } from '../bson/index.js';
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

const TXN_NUMBER = encodeFieldName('txnNumber');

/**
 * Whether the insert event `event` (raw) with `documentKey` (its bytes) may be the arriving half of
 * a cross-shard move (see the module comment): in a transaction, into a collection sharded on the
 * source (its `documentKey` holds the shard key besides `_id`).
 */
export function mayArriveFromAnotherShard(event: Uint8Array, documentKey: Uint8Array): boolean {
  if (findElement(event, TXN_NUMBER) === undefined) return false;
  let fields = 0;
  forEachElement(documentKey, () => void fields++);
  return fields > 1;
}
