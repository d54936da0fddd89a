/**
 * The delta between two versions of a document, computed as mongod does for pipeline-style
 * updates (doc_diff::computeOplogDiff): fields compared in order, objects and arrays diffed
 * recursively, an array that shrank reported as truncated. When the delta would be larger than
 * the new document, mongod logs a replacement instead (reported here as undefined).
 */
import type { UpdateDescription } from './log.js';
import { BsonType, DocNode, type Slot, binaryEqual, slotBytes, slotType, typedOf } from './tree.js';

interface DocDiff {
  kind: 'doc';
  deletes: string[];
  updates: [string, Slot][];
  inserts: [string, Slot][];
  children: [string, Diff][];
}

interface ArrayDiff {
  kind: 'array';
  updates: [number, Slot][];
  resize?: number;
  children: [number, Diff][];
}

type Diff = DocDiff | ArrayDiff;

/** Bytes mongod's serialized diff would take (the `{u: ..., i: ..., d: ..., s<f>: ...}` form). */
function diffSize(diff: Diff): number {
  let size = 5;
  const section = (entries: number) => (entries > 0 ? 1 + 2 + 5 : 0);
  if (diff.kind === 'doc') {
    size += section(diff.deletes.length) + diff.deletes.reduce((n, f) => n + Buffer.byteLength(f) + 3, 0);
    size += section(diff.updates.length) + diff.updates.reduce((n, [f, v]) => n + Buffer.byteLength(f) + 2 + slotBytes(v).length, 0);
    size += section(diff.inserts.length) + diff.inserts.reduce((n, [f, v]) => n + Buffer.byteLength(f) + 2 + slotBytes(v).length, 0);
    size += diff.children.reduce((n, [f, d]) => n + Buffer.byteLength(f) + 3 + diffSize(d), 0);
  } else {
    size += 4; // a: true
    size += diff.updates.reduce((n, [i, v]) => n + String(i).length + 3 + slotBytes(v).length, 0);
    if (diff.resize !== undefined) size += 7;
    size += diff.children.reduce((n, [i, d]) => n + String(i).length + 3 + diffSize(d), 0);
  }
  return size;
}

function isContainerPair(pre: Slot, post: Slot): boolean {
  const type = slotType(pre);
  return type === slotType(post) && (type === BsonType.Object || type === BsonType.Array);
}

function asNode(slot: Slot, isArray: boolean): DocNode {
  return slot instanceof DocNode ? slot : DocNode.parse(slot.bytes, isArray);
}

/** A sub-diff, or undefined when logging the whole new value is smaller. */
function subDiff(pre: Slot, post: Slot): Diff | undefined {
  const isArray = slotType(pre) === BsonType.Array;
  const diff = isArray ? arrayDiff(asNode(pre, true), asNode(post, true)) : docDiff(asNode(pre, false), asNode(post, false));
  return diffSize(diff) < slotBytes(post).length ? diff : undefined;
}

function docDiff(pre: DocNode, post: DocNode): DocDiff {
  const diff: DocDiff = { kind: 'doc', deletes: [], updates: [], inserts: [], children: [] };
  const deletes = new Set<string>();
  let i = 0;
  let j = 0;
  while (i < pre.length && j < post.length) {
    const name = pre.names[i];
    const preValue = pre.values[i];
    if (name === post.names[j] && binaryEqual(preValue, post.values[j])) {
      i++;
      j++;
      continue;
    }
    if (name === post.names[j]) {
      const postValue = post.values[j];
      const sub = isContainerPair(preValue, postValue) ? subDiff(preValue, postValue) : undefined;
      if (sub) diff.children.push([name, sub]);
      else diff.updates.push([name, postValue]);
      i++;
      j++;
    } else {
      deletes.add(name); // inserted again later if the new document still has it
      i++;
    }
  }
  for (; i < pre.length; i++) diff.deletes.push(pre.names[i]);
  for (; j < post.length; j++) {
    diff.inserts.push([post.names[j], post.values[j]]);
    deletes.delete(post.names[j]);
  }
  diff.deletes.push(...deletes);
  return diff;
}

function arrayDiff(pre: DocNode, post: DocNode): ArrayDiff {
  const diff: ArrayDiff = { kind: 'array', updates: [], children: [] };
  const common = Math.min(pre.length, post.length);
  for (let k = 0; k < common; k++) {
    const a = pre.values[k];
    const b = post.values[k];
    if (binaryEqual(a, b)) continue;
    const sub = isContainerPair(a, b) ? subDiff(a, b) : undefined;
    if (sub) diff.children.push([k, sub]);
    else diff.updates.push([k, b]);
  }
  for (let k = common; k < post.length; k++) diff.updates.push([k, post.values[k]]);
  if (pre.length > post.length) diff.resize = post.length;
  return diff;
}

function describeInto(diff: Diff, prefix: string, out: UpdateDescription): void {
  if (diff.kind === 'doc') {
    for (const field of diff.deletes) out.removedFields.push(prefix + field);
    for (const [field, value] of diff.updates) out.updatedFields[prefix + field] = typedOf(value);
    for (const [field, value] of diff.inserts) out.updatedFields[prefix + field] = typedOf(value);
    for (const [field, sub] of diff.children) describeInto(sub, `${prefix}${field}.`, out);
    return;
  }
  const field = prefix.slice(0, -1);
  if (diff.resize !== undefined) out.truncatedArrays.push({ field, newSize: diff.resize });
  for (const [index, value] of diff.updates) out.updatedFields[`${prefix}${index}`] = typedOf(value);
  for (const [index, sub] of diff.children) describeInto(sub, `${prefix}${index}.`, out);
}

/** Bytes mongod adds to a delta oplog entry beyond the diff itself. */
const DELTA_ENTRY_PADDING = 15;

/**
 * The change-stream description of going from `pre` to `post`, or undefined when mongod would
 * log a replacement (the delta is not smaller than the new document).
 */
export function describeDiff(pre: DocNode, post: DocNode, postSize: number): UpdateDescription | undefined {
  const diff = docDiff(pre, post);
  if (diffSize(diff) + DELTA_ENTRY_PADDING >= postSize) return undefined;
  const out: UpdateDescription = { updatedFields: {}, removedFields: [], truncatedArrays: [] };
  describeInto(diff, '', out);
  return out;
}
