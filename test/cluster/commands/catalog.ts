/**
 * Namespace commands: `listDatabases`, `listCollections`, `create`, `drop`, `dropDatabase`.
 * (renameCollection, collMod and the index commands live in their own modules.)
 */
import { EJSON } from 'bson';
import { formatDocument } from '../bson-text.js';
import { Query } from '../mingo.js';
import { ServerError } from '../errors.js';
import type { Instance, OpContext } from '../instance.js';
import { type CollectionOptions, type Namespace, View } from '../storage/collection.js';
import { SYSTEM_VIEWS, validateCollectionName } from '../storage/catalog.js';
import { normalizeCollation } from '../storage/collation.js';
import { BUCKETS_PREFIX, checkCollectionTtl, isClustered, parseClusteredIndex } from '../storage/clustered.js';
import { isTimeseriesView } from '../storage/timeseries.js';
import { createTimeseries, describeTimeseries } from './timeseries/catalog.js';
import { databaseSizeOnDisk } from '../storage/stats.js';
import { checkValidator } from '../validation.js';
import { accessControlOf } from '../auth/access.js';
import { Args, bsonTypeName } from './args.js';
import { serialize } from '../raw.js';
import { listCursor, openCursor } from './cursors.js';
import { defineCommand } from './registry.js';

/** Databases a replica-set member always has. */
export const INTERNAL_DATABASES = ['admin', 'config', 'local'];

defineCommand({
  name: 'listDatabases',
  adminOnly: true,
  handler: ({ instance, body, connection }) => {
    const args = new Args('listDatabases', body);
    let names = [...new Set([...instance.catalog.databaseNames(), ...INTERNAL_DATABASES])];
    const access = accessControlOf(instance);
    if (access.enabled) {
      // Without the listDatabases action a user sees the databases it holds privileges on
      // (mongod's authorizedDatabases), unless it asked for all of them.
      const authorizedOnly = args.boolean('authorizedDatabases');
      if (authorizedOnly === true || !access.allowsOnCluster(connection, 'listDatabases')) {
        if (authorizedOnly === false)
          throw new ServerError(
            'Unauthorized',
            'not authorized on admin to execute command { listDatabases: 1, authorizedDatabases: false }',
          );
        names = names.filter((name) => access.hasAnyPrivilegeOn(connection, name));
      }
    }
    let databases = names.sort().map((name) => {
      const sizeOnDisk = databaseSizeOnDisk(instance, name);
      return { name, sizeOnDisk, empty: sizeOnDisk === 0 };
    });
    const filter = args.object('filter');
    if (filter) {
      const query = new Query(filter);
      databases = databases.filter((d) => query.test(d));
    }
    if (args.boolean('nameOnly')) return { databases: databases.map((d) => ({ name: d.name })) };
    const totalSize = databases.reduce((sum, d) => sum + d.sizeOnDisk, 0);
    return { databases, totalSize, totalSizeMb: Math.floor(totalSize / (1024 * 1024)) };
  },
});

/** The `listCollections` entry for a namespace. */
export function describeNamespace(ns: Namespace): Record<string, unknown> {
  if (ns.kind === 'view') {
    const options: Record<string, unknown> = { viewOn: ns.viewOn, pipeline: ns.pipeline };
    if (ns.collation) options.collation = ns.collation;
    return { name: ns.name, type: 'view', options, info: { readOnly: true } };
  }
  const entry: Record<string, unknown> = {
    name: ns.name,
    type: 'collection',
    options: { ...ns.options },
    info: { readOnly: false, uuid: ns.uuid },
  };
  // A clustered collection has no _id index to list.
  if (!isClustered(ns.options)) {
    const idIndex: Record<string, unknown> = { v: 2, key: { _id: 1 }, name: '_id_' };
    if (ns.options.collation) idIndex.collation = ns.options.collation;
    entry.idIndex = idIndex;
  }
  return entry;
}

defineCommand({
  name: 'listCollections',
  handler: ({ instance, body, db }) => {
    const args = new Args('listCollections', body);
    let entries = instance.catalog
      .namespaces(db)
      .map((ns) => (isTimeseriesView(ns) ? describeTimeseries(instance, ns) : describeNamespace(ns)));
    const filter = args.object('filter');
    if (filter) {
      const query = new Query(filter);
      entries = entries.filter((e) => query.test(e));
    }
    if (args.boolean('nameOnly')) entries = entries.map((e) => ({ name: e.name, type: e.type }));
    const cursorOptions = args.object('cursor') ?? {};
    const batchSize = cursorOptions.batchSize === undefined ? undefined : Number(cursorOptions.batchSize);
    return openCursor(
      instance,
      listCursor(
        `${db}.$cmd.listCollections`,
        entries.map((e) => serialize(e)),
      ),
      { batchSize },
    );
  },
});

/** The system collections clients may create themselves (mongod's isLegalClientSystemNS). */
const CLIENT_SYSTEM_COLLECTIONS = new Set(['system.js', 'system.profile']);

/** Options `create` accepts that the test cluster cannot honour (documented in the README). */
const UNSUPPORTED_OPTIONS = ['encryptedFields'];
const VALIDATION_LEVELS = ['off', 'strict', 'moderate'];
const VALIDATION_ACTIONS = ['error', 'warn'];

/** mongod's IDL error for a value outside an enumeration. */
function badEnum(command: string, field: string, value: unknown): ServerError {
  return new ServerError('BadValue', `Enumeration value '${String(value)}' for field '${command}.${field}' is not a valid value.`);
}

/** Reads `validationLevel` / `validationAction` with mongod's checks. */
export function validationSettings(args: Args): { validationLevel?: string; validationAction?: string } {
  const validationLevel = args.string('validationLevel');
  if (validationLevel !== undefined && !VALIDATION_LEVELS.includes(validationLevel))
    throw badEnum(args.command, 'validationLevel', validationLevel);
  const validationAction = args.string('validationAction');
  if (validationAction !== undefined && !VALIDATION_ACTIONS.includes(validationAction))
    throw badEnum(args.command, 'validationAction', validationAction);
  return { validationLevel, validationAction };
}

/** mongod's check on a capped `size` (in bytes; stored as given since 6.2). */
export function checkCappedSize(size: number): number {
  if (size < 0) throw new ServerError('BadValue', 'size has to be >= 0');
  if (size > 1024 ** 5) throw new ServerError('BadValue', 'size cannot exceed 1 PB');
  return Math.trunc(size);
}

/** mongod's check on a capped `max`; zero or negative means "no limit" (stored as 2^31-1). */
export function checkCappedMax(max: number): number {
  if (max >= 2 ** 31) throw new ServerError('BadValue', 'max in a capped collection has to be < 2^31 or not set');
  return max <= 0 ? 0x7fffffff : Math.trunc(max);
}

/**
 * The collection options of a `create` command in the form mongod stores and lists them
 * (its CollectionOptions order), after mongod's checks.
 */
function collectionOptions(args: Args, name: string): CollectionOptions {
  const body = args.body;
  for (const option of UNSUPPORTED_OPTIONS) {
    if (body[option] !== undefined) {
      throw new ServerError('NotImplemented', `The test cluster does not support '${option}' collections`);
    }
  }
  const clusteredIndex = body.clusteredIndex === undefined ? undefined : parseClusteredIndex(body.clusteredIndex, name);
  if (body.expireAfterSeconds !== undefined && clusteredIndex === undefined && body.timeseries === undefined) {
    throw new ServerError(
      'InvalidOptions',
      "'expireAfterSeconds' is only supported on time-series collections or when the 'clusteredIndex' option is specified",
    );
  }
  if (body.pipeline !== undefined) throw new ServerError('InvalidOptions', "'pipeline' requires 'viewOn' to also be specified");
  const capped = args.boolean('capped') ?? false;
  const size = args.number('size');
  const max = args.number('max');
  if (clusteredIndex !== undefined) {
    // create.cpp: a capped clustered collection needs enableTestCommands, which this server does not have.
    if (capped) throw new ServerError(6127800, "Clustered capped collection only available with 'enableTestCommands' server parameter");
    if (size !== undefined) {
      throw new ServerError(
        6049200,
        "'size' field for capped collections is not allowed on clustered collections. Did you mean 'capped: true' with 'expireAfterSeconds'?",
      );
    }
    if (max !== undefined) {
      throw new ServerError(
        6049204,
        "'max' field for capped collections is not allowed on clustered collections. Did you mean 'capped: true' with 'expireAfterSeconds'?",
      );
    }
  }
  if (capped && size === undefined) throw new ServerError('InvalidOptions', "the 'size' field is required when 'capped' is true");
  if ((size !== undefined || max !== undefined) && !capped) {
    throw new ServerError('InvalidOptions', "the 'capped' field needs to be true when either the 'size' or 'max' fields are present");
  }
  const options: CollectionOptions = {};
  if (capped) {
    options.capped = true;
    options.size = checkCappedSize(size!);
    if (max !== undefined) options.max = checkCappedMax(max);
  }
  const autoIndexId = args.boolean('autoIndexId');
  if (autoIndexId !== undefined) options.autoIndexId = autoIndexId;
  const prePost = args.object('changeStreamPreAndPostImages');
  if (prePost) {
    if (typeof prePost.enabled !== 'boolean') {
      throw new ServerError('IDLFailedToParse', "BSON field 'changeStreamPreAndPostImages.enabled' is missing but a required field");
    }
    if (prePost.enabled) options.changeStreamPreAndPostImages = { enabled: true };
  }
  const storageEngine = args.object('storageEngine');
  if (storageEngine && Object.keys(storageEngine).length > 0) options.storageEngine = storageEngine;
  const indexOptionDefaults = args.object('indexOptionDefaults');
  if (indexOptionDefaults?.storageEngine) options.indexOptionDefaults = indexOptionDefaults;
  const validator = args.object('validator');
  const { validationLevel, validationAction } = validationSettings(args);
  if (validator && Object.keys(validator).length > 0) {
    checkValidator(validator);
    options.validator = validator;
  }
  // Listed only when given: mongod does not fill in the defaults (strict, error).
  if (validationLevel !== undefined) options.validationLevel = validationLevel;
  if (validationAction !== undefined) options.validationAction = validationAction;
  if (body.collation !== undefined) {
    const collation = normalizeCollation(body.collation);
    if (collation) options.collation = collation;
  }
  // Listed after the collation, as mongod's CollectionOptions::appendBSON orders them.
  if (clusteredIndex !== undefined) options.clusteredIndex = clusteredIndex;
  if (body.expireAfterSeconds !== undefined) options.expireAfterSeconds = checkCollectionTtl(body.expireAfterSeconds, 'create');
  return options;
}

/** The message mongod gives for a `create` whose namespace exists with other options. */
function existsWithOtherOptions(ns: Namespace): ServerError {
  const shown = ns.kind === 'collection' ? { uuid: ns.uuid, ...ns.options } : { viewOn: ns.viewOn, pipeline: ns.pipeline };
  return new ServerError('NamespaceExists', `namespace ${ns.ns} already exists, but with different options: ${formatDocument(shown)}`);
}

function sameOptions(a: unknown, b: unknown): boolean {
  return (
    EJSON.stringify(a as Record<string, unknown>, { relaxed: false }) === EJSON.stringify(b as Record<string, unknown>, { relaxed: false })
  );
}

/** Creates a view after checking its definition (no cycles, target in the same database). */
export function createView(
  instance: Instance,
  op: OpContext,
  db: string,
  name: string,
  viewOn: string,
  pipeline: Record<string, unknown>[],
  collation?: Record<string, unknown>,
): View {
  instance.assertWritable(op, db);
  if (viewOn.startsWith(BUCKETS_PREFIX)) {
    throw new ServerError(
      'InvalidNamespace',
      'Cannot create view on a system.buckets namespace except by creating a time-series collection',
    );
  }
  checkViewGraph(instance, db, name, viewOn);
  const view = new View(db, name, viewOn, pipeline, collation);
  instance.catalog.addView(view);
  instance.record(op, { op: 'c', ns: `${db}.$cmd`, o: { create: name, viewOn, pipeline, ...(collation ? { collation } : {}) }, size: 128 });
  return view;
}

/** A view may not (transitively) depend on itself. */
export function checkViewGraph(instance: Instance, db: string, name: string, viewOn: string): void {
  const path = [`${db}.${name}`];
  for (let target: string | undefined = viewOn; target;) {
    path.push(`${db}.${target}`);
    if (target === name) throw new ServerError('GraphContainsCycle', `View cycle detected: [ ${path.join(' => ')} ]`);
    const next = instance.catalog.get(db, target);
    target = next?.kind === 'view' ? next.viewOn : undefined;
  }
}

/** Reads and checks a view pipeline argument (an array of stage documents). */
export function viewPipeline(command: string, value: unknown): Record<string, unknown>[] {
  if (value === undefined) return [];
  if (!Array.isArray(value)) {
    throw new ServerError(
      'TypeMismatch',
      `BSON field '${command}.pipeline' is the wrong type '${bsonTypeName(value)}', expected type 'array'`,
    );
  }
  for (const stage of value) {
    if (typeof stage !== 'object' || stage === null || Array.isArray(stage) || Object.keys(stage).length !== 1) {
      throw new ServerError(40323, 'A pipeline stage specification object must contain exactly one field.');
    }
    const stageName = Object.keys(stage)[0];
    if (stageName === '$out' || stageName === '$merge') {
      throw new ServerError('OptionNotSupportedOnView', `${stageName} cannot be used in a view definition`);
    }
    if (stageName === '$changeStream') {
      throw new ServerError('OptionNotSupportedOnView', '$changeStream cannot be used in a view definition');
    }
  }
  return value as Record<string, unknown>[];
}

defineCommand({
  name: 'create',
  handler: (ctx) => {
    const { instance, body, db, op } = ctx;
    const args = new Args('create', body);
    const name = args.requiredString('create');
    validateCollectionName(db, name);
    if (body.timeseries !== undefined) return createTimeseries(ctx, name);
    if (name.startsWith('system.') && !CLIENT_SYSTEM_COLLECTIONS.has(name)) {
      throw new ServerError('InvalidNamespace', `Invalid system namespace: ${db}.${name}`);
    }
    const existing = instance.catalog.get(db, name);
    if (args.has('viewOn')) {
      const viewOn = args.requiredString('viewOn');
      if (viewOn.length === 0) throw new ServerError('BadValue', "'viewOn' cannot be empty.");
      const pipeline = viewPipeline('create', body.pipeline);
      const collation = body.collation === undefined ? undefined : normalizeCollation(body.collation);
      for (const option of [
        'capped',
        'size',
        'max',
        'validator',
        'validationLevel',
        'validationAction',
        'storageEngine',
        'indexOptionDefaults',
        'idIndex',
        'autoIndexId',
        'changeStreamPreAndPostImages',
        'clusteredIndex',
        'expireAfterSeconds',
        'timeseries',
        ...UNSUPPORTED_OPTIONS,
      ]) {
        if (body[option] !== undefined) throw new ServerError('InvalidOptions', `option not supported on a view: ${option}`);
      }
      if (existing) {
        // Since 7.0 an identical create succeeds.
        if (
          existing.kind === 'view' &&
          existing.viewOn === viewOn &&
          sameOptions(existing.pipeline, pipeline) &&
          sameOptions(existing.collation ?? {}, collation ?? {})
        )
          return {};
        throw existsWithOtherOptions(existing);
      }
      createView(instance, op, db, name, viewOn, pipeline, collation);
      return {};
    }
    const options = collectionOptions(args, name);
    if (existing) {
      if (existing.kind === 'collection' && sameOptions(existing.options, options)) return {};
      throw existsWithOtherOptions(existing);
    }
    const reply: Record<string, unknown> = {};
    if (options.autoIndexId !== undefined) reply.note = 'The autoIndexId option is deprecated and will be removed in a future release';
    instance.createCollection(op, db, name, options);
    return reply;
  },
});

/** Drops one namespace and records it (`o2.numRecords` as mongod's oplog has it). */
export function dropNamespace(instance: Instance, op: OpContext, ns: Namespace): number {
  instance.assertWritable(op, ns.db);
  instance.catalog.remove(ns.db, ns.name);
  if (ns.kind === 'view') {
    instance.record(op, { op: 'c', ns: `${ns.db}.$cmd`, o: { drop: ns.name }, size: 64 });
    return 0;
  }
  instance.record(op, { op: 'c', ns: `${ns.db}.$cmd`, ui: ns.uuid, o: { drop: ns.name }, o2: { numRecords: ns.count }, size: 64 });
  return ns.indexes.length;
}

/** Collections mongod refuses to drop. */
function checkDroppable(db: string, name: string): void {
  if (db === 'admin' && name === 'system.version') {
    throw new ServerError('IllegalOperation', 'dropping the server configuration collection (admin.system.version) is not allowed.');
  }
  if (db === 'local' && name === 'oplog.rs') throw new ServerError('IllegalOperation', "can't drop live oplog while replicating");
}

defineCommand({
  name: 'drop',
  handler: ({ instance, body, db, op }) => {
    const name = new Args('drop', body).requiredString('drop');
    validateCollectionName(db, name);
    checkDroppable(db, name);
    const ns = instance.catalog.get(db, name);
    // Since 7.0 dropping a missing collection succeeds (and says nothing more).
    if (!ns) return {};
    if (name === SYSTEM_VIEWS) {
      // Dropping system.views drops every view of the database with it.
      for (const other of instance.catalog.namespaces(db)) if (other.kind === 'view') dropNamespace(instance, op, other);
    }
    const nIndexesWas = dropNamespace(instance, op, ns);
    if (isTimeseriesView(ns)) {
      // A time-series collection is its view and its buckets: both go (the view first, as mongod).
      const buckets = instance.catalog.get(db, ns.viewOn);
      if (buckets) dropNamespace(instance, op, buckets);
    }
    return ns.kind === 'view' ? { ns: `${db}.${name}` } : { nIndexesWas, ns: `${db}.${name}` };
  },
});

defineCommand({
  name: 'dropDatabase',
  handler: ({ instance, db, op }) => {
    if (INTERNAL_DATABASES.includes(db)) {
      throw new ServerError('IllegalOperation', `Dropping the '${db}' database is prohibited.`);
    }
    const namespaces = instance.catalog.namespaces(db);
    if (namespaces.length === 0) return {};
    instance.assertWritable(op, db);
    // Views first, as mongod drops system.views (and with it every view) before the collections.
    for (const ns of namespaces) if (ns.kind === 'view') dropNamespace(instance, op, ns);
    for (const ns of namespaces) if (ns.kind === 'collection') dropNamespace(instance, op, ns);
    instance.record(op, { op: 'c', ns: `${db}.$cmd`, o: { dropDatabase: 1 }, size: 64 });
    return { dropped: db };
  },
});
