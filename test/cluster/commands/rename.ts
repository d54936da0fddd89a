/**
 * `renameCollection` (admin command), with mongod's checks and oplog entries.
 * Within a database the collection keeps its UUID and one `{renameCollection, to, stayTemp,
 * dropTarget?: <uuid>}` entry is recorded (`o2: {numRecords}` when a target was dropped).
 * Across databases mongod copies: it creates `<targetDb>.tmpXXXXX.renameCollection` (new UUID),
 * copies the indexes and every document into it (each an ordinary oplog entry), renames it
 * to the target within the target database, then drops the source; the same is recorded here,
 * so change streams see what they see on mongod.
 */
import { ServerError } from '../errors.js';
import type { Instance, OpContext } from '../instance.js';
import type { Collection } from '../storage/collection.js';
import { validateCollectionName } from '../storage/catalog.js';
import { Args } from './args.js';
import { dropNamespace } from './catalog.js';
import { defineCommand } from './registry.js';

interface Target {
  db: string;
  coll: string;
}

function parseNamespace(ns: string, which: 'source' | 'target'): Target {
  const dot = ns.indexOf('.');
  const db = dot > 0 ? ns.slice(0, dot) : '';
  const coll = dot > 0 ? ns.slice(dot + 1) : '';
  try {
    if (!db || !coll) throw new Error('invalid');
    validateCollectionName(db, coll);
  } catch {
    throw new ServerError('InvalidNamespace', `Invalid ${which} namespace: ${ns}`);
  }
  return { db, coll };
}

/** mongod's namespace rules for a rename (validateNamespacesForRenameCollection). */
function checkNamespaces(source: Target, target: Target): void {
  const isOplog = (t: Target) => t.db === 'local' && t.coll === 'oplog.rs';
  if (isOplog(source)) throw new ServerError('IllegalOperation', "can't rename live oplog while replicating");
  if (isOplog(target)) throw new ServerError('IllegalOperation', "can't rename to live oplog while replicating");
  for (const special of ['system.views', 'system.js', 'system.users']) {
    if (source.coll === special || target.coll === special) {
      throw new ServerError('IllegalOperation', `renaming ${special} collection or renaming to ${special} is not allowed`);
    }
  }
  if (source.db === 'admin' && source.coll === 'system.version') {
    throw new ServerError('IllegalOperation', 'renaming the server configuration collection (admin.system.version) is not allowed');
  }
  for (const [which, t] of [
    ['source', source],
    ['target', target],
  ] as const) {
    if (t.coll.startsWith('system.')) {
      throw new ServerError('IllegalOperation', `error with ${which} namespace: Invalid system namespace: ${t.db}.${t.coll}`);
    }
  }
}

/** Moves a collection to a new name in its own database and records the rename. */
function renameWithinDatabase(instance: Instance, op: OpContext, collection: Collection, to: Target, stayTemp: boolean): void {
  const from = collection.ns;
  const existing = instance.catalog.get(to.db, to.coll);
  const dropped = existing?.kind === 'collection' ? existing : undefined;
  const o: Record<string, unknown> = { renameCollection: from, to: `${to.db}.${to.coll}`, stayTemp };
  if (dropped) o.dropTarget = dropped.uuid;
  if (dropped) instance.catalog.remove(to.db, to.coll);
  instance.catalog.move(collection, to.db, to.coll);
  instance.record(op, {
    op: 'c',
    ns: `${collection.db}.$cmd`,
    ui: collection.uuid,
    o,
    ...(dropped ? { o2: { numRecords: dropped.count } } : {}),
    size: 128,
  });
}

function temporaryName(instance: Instance, db: string): string {
  const alphabet = '0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ';
  for (;;) {
    let name = 'tmp';
    for (let i = 0; i < 5; i++) name += alphabet[Math.floor(Math.random() * alphabet.length)];
    name += '.renameCollection';
    if (!instance.catalog.get(db, name)) return name;
  }
}

/** mongod's cross-database rename: copy into a temporary collection, rename it, drop the source. */
function renameAcrossDatabases(instance: Instance, op: OpContext, source: Collection, to: Target, stayTemp: boolean): void {
  const tmpName = temporaryName(instance, to.db);
  const tmp = instance.createCollection(op, to.db, tmpName, { ...source.options });
  for (const index of source.indexes) {
    if (index.name === '_id_') continue;
    tmp.addIndex({ ...index.spec });
    instance.record(op, { op: 'c', ns: `${to.db}.$cmd`, ui: tmp.uuid, o: { createIndexes: tmpName, ...index.spec }, size: 128 });
  }
  // Validation is disabled while copying, as in mongod (DisableDocumentValidation).
  for (const entry of source.byRid.values()) instance.insertDocument(op, tmp, entry.raw, entry.id);
  renameWithinDatabase(instance, op, tmp, to, stayTemp);
  dropNamespace(instance, op, source);
}

defineCommand({
  name: 'renameCollection',
  adminOnly: true,
  handler: ({ instance, body, op }) => {
    const args = new Args('renameCollection', body);
    const from = args.requiredString('renameCollection');
    const toNs = args.requiredString('to');
    const dropTarget = body.dropTarget !== undefined && body.dropTarget !== false && body.dropTarget !== 0;
    const stayTemp = args.boolean('stayTemp') ?? false;
    const source = parseNamespace(from, 'source');
    const target = parseNamespace(toNs, 'target');
    if (from === toNs) throw new ServerError('IllegalOperation', "Can't rename a collection to itself");
    checkNamespaces(source, target);
    instance.assertWritable(op, source.db);
    instance.assertWritable(op, target.db);

    const sourceNs = instance.catalog.get(source.db, source.coll);
    if (!sourceNs) throw new ServerError('NamespaceNotFound', `Source collection ${from} does not exist`);
    if (sourceNs.kind === 'view') throw new ServerError('CommandNotSupportedOnView', `cannot rename view: ${from}`);
    const targetNs = instance.catalog.get(target.db, target.coll);
    if (targetNs?.kind === 'view') throw new ServerError('NamespaceExists', `a view already exists with that name: ${toNs}`);
    if (targetNs && !dropTarget) throw new ServerError('NamespaceExists', 'target namespace exists');

    if (source.db === target.db) renameWithinDatabase(instance, op, sourceNs, target, stayTemp);
    else renameAcrossDatabases(instance, op, sourceNs, target, stayTemp);
    return {};
  },
});
