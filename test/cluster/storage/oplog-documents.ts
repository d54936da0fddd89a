/**
 * The oplog as mongod lists it in `local.oplog.rs` (7.0 entry format): `{op, ns, ui, o, o2, ts,
 * t, v, wall}` per write, updates as `$v: 2` delta diffs (`{u, d, s<field>, a, l, u<index>}`), a
 * committed transaction as one `applyOps` command entry on `admin.$cmd` with the session fields
 * and `prevOpTime`. The test cluster's oplog keeps change-stream descriptions of updates; this
 * module turns them back into diffs, and applies diffs (for `applyOps`).
 *
 * A dotted path component that is a number is read as an array index (the description does not
 * say whether the parent is an array or a document with a numeric field name).
 */
import { BSON, Long, Timestamp } from 'bson';
import type { OplogEntry } from '../oplog.js';
import { serialize, typed } from '../raw.js';
import { isDocument } from './keys.js';

/** mongod's term (one election, ever) and oplog format version. */
const TERM = Long.fromNumber(1);
const VERSION = Long.fromNumber(2);

type Diff = Record<string, unknown>;

function isIndex(part: string): boolean {
  return /^\d+$/.test(part);
}

/** The diff node for `parts` below `root` (created on the way), marking arrays where an index follows. */
function diffNode(root: Diff, parts: string[]): Diff {
  let node = root;
  for (const part of parts) {
    if (isIndex(part)) node.a = true;
    const key = `s${part}`;
    node = (node[key] ??= {}) as Diff;
  }
  return node;
}

/** A change-stream update description as mongod's `$v: 2` delta (doc_diff.h). */
export function descriptionToDiff(description: Record<string, unknown>): Diff {
  const diff: Diff = {};
  const removed = (description.removedFields ?? []) as string[];
  for (const path of removed) {
    const parts = path.split('.');
    const leaf = parts.pop()!;
    const node = diffNode(diff, parts);
    ((node.d ??= {}) as Diff)[leaf] = false;
  }
  for (const [path, value] of Object.entries((description.updatedFields ?? {}) as Record<string, unknown>)) {
    const parts = path.split('.');
    const leaf = parts.pop()!;
    const node = diffNode(diff, parts);
    if (isIndex(leaf)) {
      node.a = true;
      node[`u${leaf}`] = value;
    } else ((node.u ??= {}) as Diff)[leaf] = value;
  }
  for (const { field, newSize } of (description.truncatedArrays ?? []) as { field: string; newSize: number }[]) {
    const node = diffNode(diff, field.split('.'));
    node.a = true;
    node.l = newSize;
  }
  return diff;
}

/**
 * Applies a `$v: 2` diff to a document decoded with exact types, in place: `d` deletes, `u`
 * updates in place (or appends), `i` appends, `s<field>` descends; on arrays `l` resizes,
 * `u<i>` sets and `s<i>` descends (doc_diff_applier.cpp). Returns the change as an update
 * description (paths updated and removed) for the change stream.
 */
export function applyDiff(
  target: Record<string, unknown> | unknown[],
  diff: Diff,
  prefix = '',
  description = { updatedFields: {} as Record<string, unknown>, removedFields: [] as string[] },
) {
  const path = (name: string) => (prefix ? `${prefix}.${name}` : name);
  if (Array.isArray(target)) {
    if (typeof diff.l === 'number') {
      target.length = diff.l;
      for (let i = 0; i < target.length; i++) if (target[i] === undefined) target[i] = null;
    }
    for (const [key, value] of Object.entries(diff)) {
      if (key === 'a' || key === 'l') continue;
      const index = Number(key.slice(1));
      if (key[0] === 'u') {
        while (target.length < index) target.push(null);
        target[index] = value;
        description.updatedFields[path(String(index))] = value;
      } else if (key[0] === 's') {
        const child = target[index];
        if (child !== null && typeof child === 'object')
          applyDiff(child as Record<string, unknown>, value as Diff, path(String(index)), description);
      }
    }
    return description;
  }
  for (const name of Object.keys((diff.d ?? {}) as Diff)) {
    delete target[name];
    description.removedFields.push(path(name));
  }
  for (const section of ['u', 'i']) {
    for (const [name, value] of Object.entries((diff[section] ?? {}) as Diff)) {
      target[name] = value;
      description.updatedFields[path(name)] = value;
    }
  }
  for (const [key, value] of Object.entries(diff)) {
    if (key[0] !== 's' || key.length < 2) continue;
    const name = key.slice(1);
    const sub = value as Diff;
    if (target[name] === undefined || target[name] === null || typeof target[name] !== 'object') target[name] = sub.a === true ? [] : {};
    if (isDocument(target[name]) || Array.isArray(target[name]))
      applyDiff(target[name] as Record<string, unknown>, sub, path(name), description);
  }
  return description;
}

/** One write of the oplog as mongod lists it (no `ts`, `t`, `v`, `wall`: an entry inside applyOps has none). */
function operation(entry: OplogEntry): Record<string, unknown> {
  const doc: Record<string, unknown> = { op: entry.op, ns: entry.ns };
  if (entry.ui) doc.ui = entry.ui;
  // Stored documents are raw bytes: decoded with their exact types to be embedded.
  const o = Buffer.isBuffer(entry.o) ? BSON.deserialize(entry.o, typed) : entry.o;
  doc.o = entry.op === 'u' && !entry.replace ? { $v: 2, diff: descriptionToDiff(o as Record<string, unknown>) } : o;
  if (entry.o2 !== undefined && entry.op !== 'd') doc.o2 = entry.o2;
  return doc;
}

/**
 * The oplog entries as mongod's `local.oplog.rs` documents, oldest first: each write on its own, a
 * transaction (entries sharing a timestamp and a `txnOpIndex`) as one `applyOps` entry.
 */
export function* oplogDocuments(entries: Iterable<OplogEntry>): Iterable<{ ts: Timestamp; raw: Buffer }> {
  let transaction: OplogEntry[] = [];
  const flush = function* () {
    if (transaction.length === 0) return;
    const first = transaction[0];
    const doc: Record<string, unknown> = {};
    if (first.lsid) doc.lsid = first.lsid;
    if (first.txnNumber !== undefined) doc.txnNumber = first.txnNumber;
    Object.assign(doc, {
      op: 'c',
      ns: 'admin.$cmd',
      o: { applyOps: transaction.map(operation) },
      ts: first.ts,
      t: TERM,
      v: VERSION,
      wall: first.wall,
      prevOpTime: { ts: new Timestamp({ t: 0, i: 0 }), t: Long.fromNumber(-1) },
    });
    transaction = [];
    yield { ts: first.ts, raw: serialize(doc) };
  };
  for (const entry of entries) {
    if (entry.txnOpIndex !== undefined) {
      if (transaction.length > 0 && !transaction[0].ts.equals(entry.ts)) yield* flush();
      transaction.push(entry);
      continue;
    }
    yield* flush();
    const doc: Record<string, unknown> = {};
    if (entry.lsid && entry.txnNumber !== undefined) Object.assign(doc, { lsid: entry.lsid, txnNumber: entry.txnNumber });
    Object.assign(doc, operation(entry), { ts: entry.ts, t: TERM, v: VERSION, wall: entry.wall });
    if (entry.lsid && entry.txnNumber !== undefined) {
      doc.stmtId = 0;
      doc.prevOpTime = { ts: new Timestamp({ t: 0, i: 0 }), t: Long.fromNumber(-1) };
    }
    yield { ts: entry.ts, raw: serialize(doc) };
  }
  yield* flush();
}
