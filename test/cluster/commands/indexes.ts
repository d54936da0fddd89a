/**
 * Index commands: `createIndexes` (checked and stored as mongod does, built over existing
 * documents, the collection created implicitly), `listIndexes` (a cursor of specifications) and
 * `dropIndexes` (by name, key pattern, list of names or `'*'`). Each change is recorded as mongod's
 * oplog records it, so change streams report createIndexes/dropIndexes events.
 */
import { UUID } from 'bson';
import { ServerError } from '../errors.js';
import { serialize } from '../raw.js';
import type { Collection } from '../storage/collection.js';
import { normalizeCollation } from '../storage/collation.js';
import { clusteredIndexListing, isClustered } from '../storage/clustered.js';
import { timeseriesView } from '../storage/timeseries.js';
import { createIndexesTimeseries, dropIndexesTimeseries, listIndexesTimeseries } from './timeseries/indexes.js';
import { compareWithExisting, normalizeIndexSpec } from '../storage/index-spec.js';
import type { IndexSpec } from '../storage/indexes.js';
import { describeValue } from '../storage/keys.js';
import { sameKeyPattern } from '../query/find.js';
import { Args } from './args.js';
import { listCursor, openCursor } from './cursors.js';
import { defineCommand } from './registry.js';

/** mongod's limit on indexes per collection (the `_id` index included). */
const MAX_INDEXES = 64;

function viewError(db: string, name: string): ServerError {
  return new ServerError('CommandNotSupportedOnView', `Namespace ${db}.${name} is a view, not a collection`);
}

/** Errors from building an index over existing documents, as mongod words them. */
function buildFailure(collection: Collection, e: unknown): unknown {
  if (!(e instanceof ServerError)) return e;
  return new ServerError(
    e.code,
    `Index build failed: ${new UUID().toString()}: Collection ${collection.ns} ( ${collection.uuid.toString()} ) :: caused by :: ${e.message}`,
    e.extra,
  );
}

defineCommand({
  name: 'createIndexes',
  handler: (ctx) => {
    const { instance, body, db, op } = ctx;
    const args = new Args('createIndexes', body);
    const name = args.requiredString('createIndexes');
    const series = timeseriesView(instance.catalog, db, name);
    if (series) return createIndexesTimeseries(ctx, series);
    const requested = args.array('indexes');
    if (requested === undefined)
      throw new ServerError('IDLFailedToParse', "BSON field 'createIndexes.indexes' is missing but a required field");
    if (requested.length === 0) throw new ServerError('BadValue', 'Must specify at least one index to create');
    if (instance.catalog.get(db, name)?.kind === 'view') throw viewError(db, name);
    const existing = instance.catalog.collection(db, name);
    const collation = existing?.options.collation as Record<string, unknown> | undefined;
    const specs = requested.map((r) => normalizeIndexSpec(r as Record<string, unknown>, collation, (c) => normalizeCollation(c)));
    // Two requested indexes may not clash with each other either.
    specs.forEach((spec, i) => {
      if (specs.slice(0, i).some((s) => s.name === spec.name)) {
        throw new ServerError('IndexKeySpecsConflict', `Index with name: ${spec.name} already exists with a different key spec`);
      }
    });
    const toBuild = specs.filter(
      (spec) => compareWithExisting(spec, existing ? existing.indexes.map((i) => i.spec) : [idIndexSpec()]) === 'new',
    );
    const before = existing ? existing.indexes.length : 1;
    if (toBuild.length === 0 && existing) {
      return { numIndexesBefore: before, numIndexesAfter: before, note: 'all indexes already exist' };
    }
    if (before + toBuild.length > MAX_INDEXES) {
      throw new ServerError(
        'CannotCreateIndex',
        `add index fails, too many indexes for ${db}.${name} key:${describeValue(toBuild[0].key)}`,
      );
    }
    instance.assertWritable(op, db);
    const collection = existing ?? instance.createCollection(op, db, name);
    const empty = collection.count === 0;
    const built: IndexSpec[] = [];
    try {
      for (const spec of toBuild) {
        collection.addIndex(spec);
        built.push(spec);
      }
    } catch (e) {
      // An index build is all or nothing: drop what this command added.
      for (const spec of built)
        collection.indexes.splice(
          collection.indexes.findIndex((i) => i.name === spec.name),
          1,
        );
      throw buildFailure(collection, e);
    }
    // mongod builds on an empty collection in one step (one createIndexes entry per index) and on
    // a non-empty one in two phases (startIndexBuild, then commitIndexBuild with every index).
    if (empty) {
      for (const spec of built) {
        instance.record(op, { op: 'c', ns: `${db}.$cmd`, ui: collection.uuid, o: { createIndexes: name, ...spec }, size: 128 });
      }
    } else {
      const indexBuildUUID = new UUID();
      instance.record(op, {
        op: 'c',
        ns: `${db}.$cmd`,
        ui: collection.uuid,
        o: { startIndexBuild: name, indexBuildUUID, indexes: built },
        size: 128,
      });
      instance.record(op, {
        op: 'c',
        ns: `${db}.$cmd`,
        ui: collection.uuid,
        o: { commitIndexBuild: name, indexBuildUUID, indexes: built },
        size: 128,
      });
    }
    return {
      numIndexesBefore: before,
      numIndexesAfter: collection.indexes.length,
      createdCollectionAutomatically: !existing,
      commitQuorum: 'votingMembers',
    };
  },
});

function idIndexSpec(): IndexSpec {
  return { v: 2, key: { _id: 1 }, name: '_id_' };
}

defineCommand({
  name: 'listIndexes',
  handler: (ctx) => {
    const { instance, body, db } = ctx;
    const args = new Args('listIndexes', body);
    const name = args.requiredString('listIndexes');
    const series = timeseriesView(instance.catalog, db, name);
    if (series) return listIndexesTimeseries(ctx, series);
    if (instance.catalog.get(db, name)?.kind === 'view') throw viewError(db, name);
    const collection = instance.catalog.collection(db, name);
    if (!collection) throw new ServerError('NamespaceNotFound', `ns does not exist: ${db}.${name}`);
    const cursorOptions = args.object('cursor') ?? {};
    const batchSize = cursorOptions.batchSize === undefined ? undefined : Number(cursorOptions.batchSize);
    const docs = listedIndexes(collection).map((spec) => serialize(spec));
    return openCursor(instance, listCursor(`${db}.$cmd.listIndexes.${name}`, docs), { batchSize });
  },
});

/**
 * The specifications `listIndexes` shows: a clustered collection's clustered index stands in for
 * the `_id` index (a buckets collection lists neither), as mongod's list_indexes.cpp does.
 */
function listedIndexes(collection: Collection): Record<string, unknown>[] {
  const specs = collection.indexes.map((index) => ({ ...index.spec }) as Record<string, unknown>);
  if (!isClustered(collection.options)) return specs;
  const clustered = clusteredIndexListing(collection.options);
  const secondary = specs.filter((spec) => spec.name !== '_id_');
  return clustered ? [clustered, ...secondary] : secondary;
}

/** The indexes a `dropIndexes` request names (throws mongod's errors for bad requests). */
function indexesToDrop(collection: Collection, index: unknown): { specs: IndexSpec[]; all: boolean } {
  const secondary = collection.indexes.filter((i) => i.name !== '_id_');
  if (index === '*') return { specs: secondary.map((i) => i.spec), all: true };
  const byName = (name: string): IndexSpec => {
    if (name === '_id_') throw new ServerError('InvalidOptions', 'cannot drop _id index');
    if (name === '*') throw new ServerError('BadValue', "The index name '*' is not valid in a list of index names");
    const found = collection.indexes.find((i) => i.name === name);
    if (!found) throw new ServerError('IndexNotFound', `index not found with name [${name}]`);
    return found.spec;
  };
  if (typeof index === 'string') return { specs: [byName(index)], all: false };
  if (Array.isArray(index)) {
    if (index.some((n) => typeof n !== 'string'))
      throw new ServerError('TypeMismatch', "BSON field 'dropIndexes.index' is the wrong type, expected types '[string, object, array]'");
    return { specs: (index as string[]).map(byName), all: false };
  }
  if (typeof index === 'object' && index !== null) {
    const key = index as Record<string, unknown>;
    const found = collection.indexes.filter((i) => sameKeyPattern(i.spec.key, key));
    if (found.length === 0) throw new ServerError('IndexNotFound', `can't find index with key: ${describeValue(key)}`);
    if (found.length > 1) {
      throw new ServerError(
        'AmbiguousIndexKeyPattern',
        `${found.length} indexes found for key: ${describeValue(key)}, identify by name instead. Conflicting indexes: ${found.map((i) => describeValue(i.spec)).join(', ')}`,
      );
    }
    if (found[0].name === '_id_') throw new ServerError('InvalidOptions', 'cannot drop _id index');
    return { specs: [found[0].spec], all: false };
  }
  throw new ServerError('TypeMismatch', "BSON field 'dropIndexes.index' is the wrong type, expected types '[string, object, array]'");
}

defineCommand({
  name: 'dropIndexes',
  aliases: ['deleteIndexes'],
  handler: (ctx) => {
    const { instance, body, db, op } = ctx;
    const command = Object.keys(body)[0];
    const args = new Args(command, body);
    const name = args.requiredString(command);
    const series = timeseriesView(instance.catalog, db, name);
    if (series && body.index !== undefined) return dropIndexesTimeseries(ctx, series, command);
    if (body.index === undefined)
      throw new ServerError('IDLFailedToParse', `BSON field '${command}.index' is missing but a required field`);
    if (instance.catalog.get(db, name)?.kind === 'view') throw viewError(db, name);
    const collection = instance.catalog.collection(db, name);
    if (!collection) throw new ServerError('NamespaceNotFound', `ns not found ${db}.${name}`);
    const { specs, all } = indexesToDrop(collection, body.index);
    const nIndexesWas = collection.indexes.length;
    if (specs.length > 0) instance.assertWritable(op, db);
    for (const spec of specs) {
      collection.indexes.splice(
        collection.indexes.findIndex((i) => i.name === spec.name),
        1,
      );
      instance.record(op, {
        op: 'c',
        ns: `${db}.$cmd`,
        ui: collection.uuid,
        o: { dropIndexes: name, index: spec.name },
        o2: { ...spec },
        size: 128,
      });
    }
    return all ? { nIndexesWas, msg: 'non-_id indexes dropped for collection' } : { nIndexesWas };
  },
});
