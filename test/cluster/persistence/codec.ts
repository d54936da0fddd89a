/**
 * Payloads of a data directory's records (records.ts): namespaces as stored documents (a
 * collection's options and index specifications as they are listed, so any collection kind
 * persists without code of its own), documents as their raw BSON, oplog entries as their fields
 * plus their raw documents.
 */
import { BSON, type Timestamp, UUID } from 'bson';
import type { Collection, Namespace } from '../storage/collection.js';
import type { OplogEntry } from '../oplog.js';
import { findElement, typed } from '../raw.js';
import { BsonWriter } from '../changestream/bson-writer.js';

/** How stored definitions are decoded: as command bodies are (decodeBody), so values look alike. */
const AS_BODY = { validation: { utf8: false } } as const;

/** A namespace as the data directory stores it. */
export type NamespaceMeta =
  | {
      kind: 'collection';
      db: string;
      name: string;
      uuid: UUID;
      options: Record<string, unknown>;
      indexes: Record<string, unknown>[];
    }
  | { kind: 'view'; db: string; name: string; viewOn: string; pipeline: Record<string, unknown>[]; collation?: Record<string, unknown> };

/** The key a namespace is stored under: a collection's UUID (kept across renames), a view's name. */
export function namespaceKey(ns: Namespace): string {
  return ns.kind === 'collection' ? Buffer.from(ns.uuid.buffer).toString('hex') : `view:${ns.db}.${ns.name}`;
}

export function namespaceMeta(ns: Namespace): NamespaceMeta {
  if (ns.kind === 'view') {
    return {
      kind: 'view',
      db: ns.db,
      name: ns.name,
      viewOn: ns.viewOn,
      pipeline: ns.pipeline,
      ...(ns.collation ? { collation: ns.collation } : {}),
    };
  }
  return {
    kind: 'collection',
    db: ns.db,
    name: ns.name,
    uuid: ns.uuid,
    options: ns.options,
    indexes: ns.indexes.map((index) => index.spec),
  };
}

/** A namespace record's payload. */
export function encodeNamespace(key: string, meta: NamespaceMeta): Buffer {
  return Buffer.from(BSON.serialize({ key, meta }, { ignoreUndefined: true }));
}

export function decodeNamespace(payload: Buffer): { key: string; meta: NamespaceMeta } {
  return BSON.deserialize(payload, AS_BODY) as { key: string; meta: NamespaceMeta };
}

export function encodeKey(key: string): Buffer {
  return Buffer.from(BSON.serialize({ key }));
}

export function decodeKey(payload: Buffer): string {
  return (BSON.deserialize(payload) as { key: string }).key;
}

/** A collection's UUID bytes (a view, not a copy). */
function uuidBytes(collection: Collection): Buffer {
  const bytes = collection.uuid.buffer;
  return Buffer.from(bytes.buffer, bytes.byteOffset, 16);
}

/** A document-put payload: the collection's UUID, then the document. */
export function documentPut(collection: Collection, raw: Buffer): Buffer[] {
  return [uuidBytes(collection), raw];
}

/** A document-delete payload: the collection's UUID, then `{_id}` with the stored `_id`'s bytes. */
export function documentDelete(collection: Collection, raw: Buffer): Buffer[] {
  const el = findElement(raw, '_id')!;
  const id = Buffer.allocUnsafe(4 + el.end - el.start + 1);
  id.writeInt32LE(id.length, 0);
  raw.copy(id, 4, el.start, el.end);
  id[id.length - 1] = 0;
  return [uuidBytes(collection), id];
}

/** Splits a document record's payload into the collection UUID (hex) and the document. */
export function splitDocument(payload: Buffer): { uuid: string; doc: Buffer } {
  return { uuid: payload.toString('hex', 0, 16), doc: payload.subarray(16) };
}

/** Bits of an oplog record saying which raw documents follow its fields. */
const RAW_O = 1;
const RAW_PRE = 2;
const RAW_POST = 4;

/** Whether `o2` is `{_id}` alone (an insert's, whose `_id` is its document's). */
function onlyId(o2: Record<string, unknown>): boolean {
  let keys = 0;
  for (const key in o2) if (++keys > 1 || key !== '_id') return false;
  return keys === 1;
}

/**
 * An oplog-entry payload: the entry's fields (BSON, written field by field: one is journaled per
 * write), then its raw documents.
 */
export function encodeOplogEntry(entry: OplogEntry): Buffer[] {
  const rawO = Buffer.isBuffer(entry.o) ? entry.o : undefined;
  const w = new BsonWriter(160).startDocument();
  w.timestamp('ts', entry.ts).date('wall', entry.wall).string('op', entry.op).string('ns', entry.ns);
  if (entry.ui) w.binary('ui', 4, entry.ui.buffer);
  if (!rawO) w.value('o', entry.o);
  const idElement = rawO && entry.op === 'i' && entry.o2 && onlyId(entry.o2) ? findElement(rawO, '_id') : undefined;
  if (idElement) w.startDocument('o2').rawElement(rawO!.subarray(idElement.start, idElement.end)).end();
  else if (entry.o2) w.value('o2', entry.o2);
  if (entry.replace !== undefined) w.boolean('replace', entry.replace);
  if (entry.lsid) w.value('lsid', entry.lsid);
  if (entry.txnNumber) w.long('txnNumber', entry.txnNumber);
  if (entry.txnOpIndex !== undefined) w.int32('txnOpIndex', entry.txnOpIndex);
  w.int32('size', entry.size);
  w.int32('raw', (rawO ? RAW_O : 0) | (entry.preImage ? RAW_PRE : 0) | (entry.postImage ? RAW_POST : 0));
  const parts: Buffer[] = [w.end().finish()];
  if (rawO) parts.push(rawO);
  if (entry.preImage) parts.push(entry.preImage);
  if (entry.postImage) parts.push(entry.postImage);
  return parts;
}

/**
 * The entry back. Values are decoded as the live server holds them: typed (wrappers that keep
 * their BSON type) in CRUD entries, whose `o`/`o2` come from stored documents and update
 * descriptions; as command bodies in DDL and no-op entries, which come from requests. `copy`
 * makes a raw document independent of the reader's buffer.
 */
export function decodeOplogEntry(payload: Buffer, copy: (raw: Buffer) => Buffer): OplogEntry {
  const length = payload.readInt32LE(0);
  const head = payload.subarray(0, length);
  const crud = BSON.deserialize(head, typed);
  const fields = (crud.op === 'c' || crud.op === 'n' ? BSON.deserialize(head, AS_BODY) : crud) as Record<string, unknown>;
  let at = length;
  const next = () => {
    const size = payload.readInt32LE(at);
    const raw = copy(payload.subarray(at, at + size));
    at += size;
    return raw;
  };
  const flags = Number(fields.raw);
  const entry: OplogEntry = {
    ts: crud.ts as Timestamp,
    wall: crud.wall as Date,
    op: fields.op as OplogEntry['op'],
    ns: fields.ns as string,
    ui: fields.ui === undefined ? undefined : toUuid(fields.ui),
    o: flags & RAW_O ? next() : fields.o,
    o2: fields.o2 as Record<string, unknown> | undefined,
    replace: fields.replace as boolean | undefined,
    lsid: crud.lsid as OplogEntry['lsid'],
    txnNumber: crud.txnNumber as OplogEntry['txnNumber'],
    txnOpIndex: fields.txnOpIndex === undefined ? undefined : Number(fields.txnOpIndex),
    preImage: flags & RAW_PRE ? next() : undefined,
    postImage: flags & RAW_POST ? next() : undefined,
    size: Number(fields.size),
  };
  return entry;
}

function toUuid(value: unknown): UUID {
  if (value instanceof UUID) return value;
  return new UUID((value as { buffer: Uint8Array }).buffer);
}
