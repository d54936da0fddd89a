/**
 * Change events: what one oplog entry looks like to a stream, with mongod's fields, field order
 * and presence rules per event type (src/mongo/db/pipeline/change_stream_event_transform.cpp):
 *
 *   [txnNumber, lsid]   transactions only, first
 *   [to]                rename only, before _id
 *   _id, operationType, clusterTime, [collectionUUID (showExpandedEvents)], wallTime,
 *   [fullDocument], ns, [documentKey], [operationDescription (showExpandedEvents)],
 *   [updateDescription], [stateBeforeChange], [nsType], [fullDocumentBeforeChange]
 *
 * A collection stream is invalidated by a drop or rename of its collection, a database stream by
 * dropDatabase: the event is followed by an `invalidate` event at the same time.
 * Events are written as BSON directly; stored documents are embedded as their raw bytes.
 */
import type { UUID } from 'bson';
import { ServerError } from '../errors.js';
import type { OplogEntry } from '../oplog.js';
import { findElement, serialize } from '../raw.js';
import { BsonWriter } from './bson-writer.js';
import type { ChangeStreamSpec } from './spec.js';
import { watchesCollection, watchesDatabase } from './spec.js';
import { encodeToken, type ResumeTokenData } from './token.js';

export interface ChangeEvent {
  token: ResumeTokenData;
  /** The event as BSON. */
  bytes: Buffer;
  /** The stream ends after this event. */
  invalidate: boolean;
}

/** Looks up the current version of a document (fullDocument: 'updateLookup'); null if gone. */
export type DocumentLookup = (db: string, coll: string, uuid: UUID | undefined, id: unknown) => Buffer | null;

/** Events only `showExpandedEvents` streams see. */
const EXPANDED_ONLY = new Set(['create', 'createIndexes', 'dropIndexes', 'modify']);

interface Described {
  operationType: string;
  db: string;
  coll?: string;
  /** rename: the target namespace. */
  to?: { db: string; coll: string };
  operationDescription?: Record<string, unknown>;
  stateBeforeChange?: Record<string, unknown>;
  nsType?: string;
  /** The event is shown only to database and cluster streams (views). */
  notForCollectionStreams?: boolean;
  /** The event makes a stream of this scope end. */
  invalidates: boolean;
}

function splitNs(ns: string): [string, string] {
  const dot = ns.indexOf('.');
  return [ns.slice(0, dot), ns.slice(dot + 1)];
}

function without(o: Record<string, unknown>, ...names: string[]): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(o)) if (!names.includes(key)) out[key] = value;
  return out;
}

/** What a DDL oplog entry (op 'c', `o` as mongod's oplog has it) means for `spec`'s stream. */
function describeCommand(entry: OplogEntry, spec: ChangeStreamSpec): Described | undefined {
  const o = entry.o as Record<string, unknown>;
  const [db] = splitNs(entry.ns);
  const scope = spec.scope;
  const isThisCollection = (d: string, c: string) => scope.kind === 'collection' && scope.db === d && scope.coll === c;
  if (typeof o.drop === 'string') {
    if (!watchesCollection(scope, db, o.drop)) return undefined;
    // A view is dropped without a collection UUID (mongod: a delete from system.views).
    return {
      operationType: 'drop',
      db,
      coll: o.drop,
      notForCollectionStreams: entry.ui === undefined,
      invalidates: isThisCollection(db, o.drop),
    };
  }
  if (typeof o.renameCollection === 'string') {
    const [fromDb, fromColl] = splitNs(o.renameCollection);
    const [toDb, toColl] = splitNs(String(o.to));
    if (!watchesCollection(scope, fromDb, fromColl) && !watchesCollection(scope, toDb, toColl)) return undefined;
    const to = { db: toDb, coll: toColl };
    const operationDescription = { ...without(o, 'renameCollection', 'stayTemp'), to };
    return {
      operationType: 'rename',
      db: fromDb,
      coll: fromColl,
      to,
      operationDescription,
      invalidates: isThisCollection(fromDb, fromColl) || isThisCollection(toDb, toColl),
    };
  }
  if (o.dropDatabase !== undefined) {
    if (!watchesDatabase(scope, db)) return undefined;
    return { operationType: 'dropDatabase', db, invalidates: scope.kind === 'database' };
  }
  if (typeof o.create === 'string') {
    if (!watchesCollection(scope, db, o.create)) return undefined;
    const view = typeof o.viewOn === 'string';
    // A view on a buckets collection is a time-series collection (nsType as mongod 8.1+ reports it).
    const timeseries = view && (o.viewOn as string).startsWith('system.buckets.');
    return {
      operationType: 'create',
      db,
      coll: o.create,
      operationDescription: without(o, 'create'),
      nsType: timeseries ? 'timeseries' : view ? 'view' : 'collection',
      notForCollectionStreams: view,
      invalidates: false,
    };
  }
  if (typeof o.createIndexes === 'string') {
    if (!watchesCollection(scope, db, o.createIndexes)) return undefined;
    return {
      operationType: 'createIndexes',
      db,
      coll: o.createIndexes,
      operationDescription: { indexes: [without(o, 'createIndexes')] },
      invalidates: false,
    };
  }
  if (typeof o.commitIndexBuild === 'string') {
    if (!watchesCollection(scope, db, o.commitIndexBuild)) return undefined;
    return {
      operationType: 'createIndexes',
      db,
      coll: o.commitIndexBuild,
      operationDescription: { indexes: o.indexes },
      invalidates: false,
    };
  }
  if (typeof o.dropIndexes === 'string') {
    if (!watchesCollection(scope, db, o.dropIndexes)) return undefined;
    const spec2 = without(entry.o2 ?? {}, 'dropIndexes');
    return { operationType: 'dropIndexes', db, coll: o.dropIndexes, operationDescription: { indexes: [spec2] }, invalidates: false };
  }
  if (typeof o.collMod === 'string') {
    if (!watchesCollection(scope, db, o.collMod)) return undefined;
    // A view's modify (mongod: an update of system.views) has no UUID and no state before.
    if (entry.ui === undefined) {
      return {
        operationType: 'modify',
        db,
        coll: o.collMod,
        operationDescription: without(o, 'collMod'),
        notForCollectionStreams: true,
        invalidates: false,
      };
    }
    const o2 = entry.o2 ?? {};
    return {
      operationType: 'modify',
      db,
      coll: o.collMod,
      operationDescription: without(o, 'collMod'),
      stateBeforeChange: { collectionOptions: o2.collectionOptions_old, indexOptions: o2.indexOptions_old },
      invalidates: false,
    };
  }
  return undefined;
}

function writeNs(w: BsonWriter, name: string, db: string, coll: string | undefined): void {
  w.startDocument(name).string('db', db);
  if (coll !== undefined) w.string('coll', coll);
  w.end();
}

function writeSession(w: BsonWriter, entry: OplogEntry): void {
  if (entry.txnOpIndex === undefined) return;
  if (entry.txnNumber) w.long('txnNumber', entry.txnNumber);
  if (entry.lsid) w.value('lsid', entry.lsid);
}

function writeHeader(
  w: BsonWriter,
  entry: OplogEntry,
  token: ResumeTokenData,
  operationType: string,
  spec: ChangeStreamSpec,
  uuid: UUID | undefined,
): void {
  w.startDocument('_id').string('_data', encodeToken(token)._data).end();
  w.string('operationType', operationType);
  w.timestamp('clusterTime', entry.ts);
  if (spec.showExpandedEvents && uuid) w.value('collectionUUID', uuid);
  w.date('wallTime', entry.wall);
}

function tokenFor(entry: OplogEntry, uuid: UUID | undefined, fromInvalidate = false, documentKey?: Buffer): ResumeTokenData {
  return { clusterTime: entry.ts, event: true, txnOpIndex: entry.txnOpIndex ?? 0, fromInvalidate, uuid, documentKey };
}

/** A document `{_id: <element>}` around a raw `_id` element. */
function idDocument(element: Buffer): Buffer {
  const doc = Buffer.allocUnsafe(element.length + 5);
  doc.writeInt32LE(doc.length, 0);
  element.copy(doc, 4);
  doc[doc.length - 1] = 0;
  return doc;
}

/** The document key is `{_id}` alone (not a sharded collection's shard key fields and `_id`). */
function idOnly(key: Record<string, unknown> | undefined): boolean {
  if (!key) return true;
  let fields = 0;
  for (const name in key) if (name !== '_id' || ++fields > 1) return false;
  return true;
}

function invalidateEvent(entry: OplogEntry, uuid: UUID | undefined): ChangeEvent {
  const token = tokenFor(entry, uuid, true);
  const w = new BsonWriter(128).startDocument();
  w.startDocument('_id').string('_data', encodeToken(token)._data).end();
  w.string('operationType', 'invalidate');
  w.timestamp('clusterTime', entry.ts);
  w.date('wallTime', entry.wall);
  return { token, bytes: w.end().finish(), invalidate: true };
}

/** mongod's error when a required pre- or post-image is missing. */
function imageNotFound(which: 'pre' | 'post', entry: OplogEntry): ServerError {
  const events = which === 'pre' ? 'update, delete and replace events' : 'update events';
  return new ServerError(
    'NoMatchingDocument',
    `Change stream was configured to require a ${which}-image for all ${events}, but the ${which}-image was not found for event: ${entry.ns} at ${entry.ts.toString()}`,
  );
}

function writeCrudEvent(entry: OplogEntry, spec: ChangeStreamSpec, lookup: DocumentLookup): ChangeEvent {
  const [db, coll] = splitNs(entry.ns);
  const raw = Buffer.isBuffer(entry.o) ? entry.o : undefined;
  const idElement = entry.op === 'i' && raw && idOnly(entry.o2) ? findElement(raw, '_id') : undefined;
  const keyBytes = idElement ? idDocument(raw!.subarray(idElement.start, idElement.end)) : serialize(entry.o2 ?? {});
  const token = tokenFor(entry, entry.ui, false, keyBytes);
  const w = new BsonWriter(256 + (raw?.length ?? 0)).startDocument();
  writeSession(w, entry);
  let operationType: string;
  if (entry.op === 'i') operationType = 'insert';
  else if (entry.op === 'd') operationType = 'delete';
  else operationType = entry.replace ? 'replace' : 'update';
  writeHeader(w, entry, token, operationType, spec, entry.ui);

  if (operationType === 'insert' || operationType === 'replace') {
    w.rawDocument('fullDocument', raw!);
  } else if (operationType === 'update' && spec.fullDocument !== 'default') {
    let post: Buffer | null = null;
    if (spec.fullDocument === 'updateLookup') post = lookup(db, coll, entry.ui, entry.o2?._id);
    else post = entry.postImage ?? null;
    if (post === null && spec.fullDocument === 'required') throw imageNotFound('post', entry);
    if (post) w.rawDocument('fullDocument', post);
    else w.null('fullDocument');
  }
  writeNs(w, 'ns', db, coll);
  w.rawDocument('documentKey', keyBytes);
  if (operationType === 'update') {
    const d = entry.o as Record<string, unknown>;
    w.startDocument('updateDescription');
    w.value('updatedFields', d.updatedFields ?? {});
    w.value('removedFields', d.removedFields ?? []);
    w.value('truncatedArrays', d.truncatedArrays ?? []);
    if (spec.showExpandedEvents) w.value('disambiguatedPaths', d.disambiguatedPaths ?? {});
    w.end();
  }
  if (spec.fullDocumentBeforeChange !== 'off' && operationType !== 'insert') {
    const pre = entry.preImage ?? null;
    if (pre === null && spec.fullDocumentBeforeChange === 'required') throw imageNotFound('pre', entry);
    if (pre) w.rawDocument('fullDocumentBeforeChange', pre);
    else w.null('fullDocumentBeforeChange');
  }
  return { token, bytes: w.end().finish(), invalidate: false };
}

function writeCommandEvent(entry: OplogEntry, spec: ChangeStreamSpec, d: Described): ChangeEvent[] {
  const token = tokenFor(entry, entry.ui);
  const w = new BsonWriter(256).startDocument();
  writeSession(w, entry);
  if (d.to) writeNs(w, 'to', d.to.db, d.to.coll);
  writeHeader(w, entry, token, d.operationType, spec, entry.ui);
  writeNs(w, 'ns', d.db, d.coll);
  if (spec.showExpandedEvents && d.operationDescription) w.value('operationDescription', d.operationDescription);
  if (spec.showExpandedEvents && d.stateBeforeChange) w.value('stateBeforeChange', d.stateBeforeChange);
  if (spec.showExpandedEvents && d.nsType) w.value('nsType', d.nsType);
  const events: ChangeEvent[] = [{ token, bytes: w.end().finish(), invalidate: false }];
  if (d.invalidates) events.push(invalidateEvent(entry, entry.ui));
  return events;
}

/**
 * A no-op that announces a sharding change: `o2.shardCollection` is the `shardCollection`
 * expanded event, its operationDescription `o2` without that field (mongod's
 * change_stream_event_transform.cpp). Other no-ops produce nothing.
 */
function shardingEvent(entry: OplogEntry, spec: ChangeStreamSpec): ChangeEvent[] {
  const o2 = entry.o2;
  if (!spec.showExpandedEvents || typeof o2?.shardCollection !== 'string') return [];
  const [db, coll] = splitNs(entry.ns);
  if (!watchesCollection(spec.scope, db, coll)) return [];
  return writeCommandEvent(entry, spec, {
    operationType: 'shardCollection',
    db,
    coll,
    operationDescription: without(o2, 'shardCollection'),
    invalidates: false,
  });
}

/** The events `entry` produces on a stream with `spec` (none when it does not concern it). */
export function eventsFor(entry: OplogEntry, spec: ChangeStreamSpec, lookup: DocumentLookup): ChangeEvent[] {
  // Migration writes (and non-primary shards' DDL) are not user changes (mongod: fromMigrate).
  if (entry.fromMigrate && !spec.showMigrationEvents) return [];
  switch (entry.op) {
    case 'n':
      return shardingEvent(entry, spec);
    case 'i':
    case 'u':
    case 'd': {
      const [db, coll] = splitNs(entry.ns);
      return watchesCollection(spec.scope, db, coll) ? [writeCrudEvent(entry, spec, lookup)] : [];
    }
    case 'c': {
      const d = describeCommand(entry, spec);
      if (!d) return [];
      if (EXPANDED_ONLY.has(d.operationType) && !spec.showExpandedEvents) return [];
      if (d.notForCollectionStreams && (spec.scope.kind === 'collection' || !spec.showExpandedEvents)) return [];
      return writeCommandEvent(entry, spec, d);
    }
  }
}
