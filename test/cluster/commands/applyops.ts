/**
 * `applyOps` (admin): applies oplog entries in order, as mongod's applyOps command does
 * (oplogApplicationMode kApplyOpsCmd, `alwaysUpsert` on): inserts and updates upsert, deletes of
 * missing documents succeed, updates are `$v: 2` deltas, `$set`/`$unset` modifiers or whole
 * replacements, `c` entries run their command (a `create` with `ui` keeps that UUID:
 * mongorestore --preserveUUID), nested `applyOps` (transactions) recurse, `n` is a no-op.
 * Collections are found by `ui` when given, else by `ns`. Each applied operation is a write of
 * this node: it reaches the oplog and change streams. Reply `{applied, results}`.
 */
import { BSON, type UUID } from 'bson';
import { ServerError } from '../errors.js';
import type { Instance, OpContext } from '../instance.js';
import type { Collection } from '../storage/collection.js';
import { applyDiff } from '../storage/oplog-documents.js';
import { prepareForInsert, promoted, serialize, typed } from '../raw.js';
import { rawArgumentDocuments } from './crud.js';
import { type CommandContext, defineCommand, lookupCommand } from './registry.js';

function splitNs(ns: string): [string, string] {
  const dot = ns.indexOf('.');
  if (dot <= 0) throw new ServerError('InvalidNamespace', `Invalid namespace: ${ns}`);
  return [ns.slice(0, dot), ns.slice(dot + 1)];
}

function collectionByUuid(instance: Instance, uuid: UUID): Collection | undefined {
  for (const db of instance.catalog.databaseNames()) {
    for (const ns of instance.catalog.namespaces(db)) if (ns.kind === 'collection' && ns.uuid.equals(uuid)) return ns;
  }
  return undefined;
}

interface Operation {
  op: string;
  ns: string;
  ui?: UUID;
  o: Record<string, unknown>;
  o2?: Record<string, unknown>;
}

/** The collection an operation writes: by `ui` when given (it must exist), else by `ns` (created if missing). */
function target(instance: Instance, op: OpContext, entry: Operation): Collection {
  if (entry.ui) {
    const found = collectionByUuid(instance, entry.ui);
    if (!found)
      throw new ServerError(
        'NamespaceNotFound',
        `Failed to apply operation due to missing collection (${entry.ui.toHexString()}): ${entry.ns}`,
      );
    return found;
  }
  const [db, name] = splitNs(entry.ns);
  return instance.collectionForWrite(op, db, name);
}

/** Applies `$set`/`$unset` modifiers (the pre-5.0 update format) to a document in place. */
function applyModifiers(doc: Record<string, unknown>, update: Record<string, unknown>): Record<string, unknown> {
  const description = { updatedFields: {} as Record<string, unknown>, removedFields: [] as string[] };
  const walk = (path: string, create: boolean): [Record<string, unknown>, string] | undefined => {
    const parts = path.split('.');
    let node: Record<string, unknown> = doc;
    for (const part of parts.slice(0, -1)) {
      if (typeof node[part] !== 'object' || node[part] === null) {
        if (!create) return undefined;
        node[part] = {};
      }
      node = node[part] as Record<string, unknown>;
    }
    return [node, parts[parts.length - 1]];
  };
  for (const [path, value] of Object.entries((update.$set ?? {}) as Record<string, unknown>)) {
    const [node, leaf] = walk(path, true)!;
    node[leaf] = value;
    description.updatedFields[path] = value;
  }
  for (const path of Object.keys((update.$unset ?? {}) as Record<string, unknown>)) {
    const found = walk(path, false);
    if (found) delete found[0][found[1]];
    description.removedFields.push(path);
  }
  return description;
}

function applyUpdate(instance: Instance, op: OpContext, entry: Operation): void {
  const collection = target(instance, op, entry);
  const id = entry.o2?._id;
  if (id === undefined) throw new ServerError('FailedToParse', "Missing '_id' in 'o2' of an update");
  const existing = collection.get(id);
  const keys = Object.keys(entry.o);
  const isDelta = Number(entry.o.$v) === 2 && typeof entry.o.diff === 'object';
  const isModifiers = !isDelta && keys.length > 0 && keys.every((k) => k.startsWith('$'));
  let doc: Record<string, unknown>;
  let description: Record<string, unknown> | undefined;
  if (isDelta || isModifiers) {
    // alwaysUpsert: a missing document starts as its _id.
    doc = existing ? (BSON.deserialize(existing.raw, typed) as Record<string, unknown>) : { _id: id };
    description = isDelta ? applyDiff(doc, entry.o.diff as Record<string, unknown>) : applyModifiers(doc, entry.o);
  } else {
    doc = { _id: id, ...entry.o };
  }
  const raw = serialize(doc);
  if (existing) instance.updateDocument(op, collection, existing, raw, description);
  else instance.insertDocument(op, collection, prepareForInsert(raw).doc, id);
}

/** A command entry as the command it records (oplog forms differ for index builds). */
function commandOf(o: Record<string, unknown>): Record<string, unknown> {
  const [name] = Object.keys(o);
  if (name === 'createIndexes') {
    const { createIndexes, ...spec } = o;
    return { createIndexes, indexes: [spec] };
  }
  if (name === 'commitIndexBuild') return { createIndexes: o.commitIndexBuild, indexes: o.indexes };
  // The oplog names the dropped target by its UUID; the command takes a flag.
  if (name === 'renameCollection' && o.dropTarget !== undefined && typeof o.dropTarget !== 'boolean') return { ...o, dropTarget: true };
  return o;
}

async function applyCommand(ctx: CommandContext, raw: Buffer, entry: Operation): Promise<void> {
  const [name] = Object.keys(entry.o);
  if (name === 'startIndexBuild' || name === 'abortIndexBuild') return; // the commit builds it
  if (name === 'applyOps') {
    await applyAll(
      ctx,
      (entry.o.applyOps as Record<string, unknown>[]).map((nested) => serialize(nested)),
    );
    return;
  }
  const [db] = splitNs(entry.ns);
  const handler = lookupCommand(name);
  if (!handler) throw new ServerError('BadValue', `Unknown command in applyOps: ${name}`);
  // Commands take their arguments decoded as requests are (numbers promoted).
  const command = BSON.deserialize(raw, promoted) as { o: Record<string, unknown> };
  const body = { ...commandOf(command.o), $db: name === 'renameCollection' ? 'admin' : db };
  const op: OpContext = { ...ctx.op, collectionUuid: name === 'create' ? entry.ui : undefined };
  await handler.handler({ ...ctx, db: body.$db as string, body, raw: serialize(body), sequences: new Map(), op });
}

async function applyAll(ctx: CommandContext, rawOps: Buffer[]): Promise<boolean[]> {
  const { instance, op } = ctx;
  const results: boolean[] = [];
  for (const raw of rawOps) {
    const entry = BSON.deserialize(raw, typed) as Operation;
    if (typeof entry.op !== 'string') throw new ServerError('FailedToParse', "BSON field 'applyOps.op' is missing but a required field");
    if (entry.op !== 'n' && typeof entry.ns !== 'string')
      throw new ServerError('FailedToParse', "BSON field 'applyOps.ns' is missing but a required field");
    if (entry.op !== 'n' && (typeof entry.o !== 'object' || entry.o === null)) {
      throw new ServerError('FailedToParse', "BSON field 'applyOps.o' is missing but a required field");
    }
    switch (entry.op) {
      case 'i': {
        const collection = target(instance, op, entry);
        const prepared = prepareForInsert(serialize(entry.o));
        const existing = collection.get(prepared.id);
        if (existing) instance.updateDocument(op, collection, existing, prepared.doc, undefined);
        else instance.insertDocument(op, collection, prepared.doc, prepared.id);
        break;
      }
      case 'u':
        applyUpdate(instance, op, entry);
        break;
      case 'd': {
        const collection = target(instance, op, entry);
        const existing = collection.get(entry.o._id);
        if (existing) instance.deleteDocument(op, collection, existing);
        break;
      }
      case 'c':
        await applyCommand(ctx, raw, entry);
        break;
      case 'n':
        break;
      default:
        throw new ServerError('BadValue', `Unrecognized op type: ${entry.op}`);
    }
    results.push(true);
  }
  return results;
}

defineCommand({
  name: 'applyOps',
  handler: async (ctx) => {
    if (!Array.isArray(ctx.body.applyOps)) {
      throw new ServerError('TypeMismatch', "BSON field 'applyOps.applyOps' is the wrong type, expected type 'array'");
    }
    const results = await applyAll(ctx, rawArgumentDocuments(ctx, 'applyOps'));
    return { applied: results.length, results };
  },
});
