/**
 * Where an aggregation's rows come from: a collection (through a view's pipeline when the target
 * is a view), with the leading stages the scan can absorb — a first `$sample` picks random
 * documents without decoding any, a first `$match` (and a `$sort` after it) becomes a planned
 * query (`_id` lookups and ranges) — or a first-stage source (`$collStats`, `$indexStats`,
 * `$documents`).
 */
import { ServerError } from '../../errors.js';
import type { Instance } from '../../instance.js';
import type { Collection, DocEntry } from '../../storage/collection.js';
import { collectionStorageStats } from '../../storage/stats.js';
import { matchDocuments } from '../find.js';
import { buildPipeline, checkPipeline, stageOf } from './pipeline.js';
import { type Pull, Row, pullFrom } from './row.js';
import { type MingoOptions, sampleOf, sampleSize } from './stages.js';
import { Collation } from '../../collation/collation.js';

/** A namespace resolved through views: the collection underneath and the view stages to run first. */
export interface ResolvedNamespace {
  collection: Collection | undefined;
  /** The name of the collection underneath (it may not exist). */
  collectionName: string;
  /** View pipelines, innermost first. */
  viewPipeline: unknown[];
  isView: boolean;
}

/** Follows `viewOn` links down to a collection, gathering the views' pipelines. */
export function resolveNamespace(instance: Instance, db: string, name: string): ResolvedNamespace {
  const pipelines: unknown[][] = [];
  let current = name;
  for (let depth = 0; depth < 20; depth++) {
    const ns = instance.catalog.get(db, current);
    if (ns?.kind !== 'view') {
      return {
        collection: ns,
        collectionName: current,
        viewPipeline: pipelines.reverse().flat(),
        isView: depth > 0,
      };
    }
    pipelines.push(ns.pipeline);
    current = ns.viewOn;
  }
  throw new ServerError(165, 'View depth too deep or view cycle detected; maximum depth is 20');
}

export interface AggregationOptions {
  variables?: Record<string, unknown>;
  /** The command's `collation` (as sent); undefined: the collection's or view's default. */
  collation?: unknown;
  /** Told which collection the pipeline reads and when it has read all of it (cursor restore). */
  read?: CollectionRead;
}

/** The collection a pipeline streams from, and whether its scan has ended. */
export interface CollectionRead {
  collection?: Collection;
  finished: boolean;
}

function collStats(instance: Instance, db: string, name: string, collection: Collection | undefined, arg: unknown): Row {
  const spec = (arg ?? {}) as Record<string, unknown>;
  for (const key of Object.keys(spec)) {
    if (!['latencyStats', 'storageStats', 'count', 'queryExecStats'].includes(key)) {
      throw new ServerError(40415, `BSON field '$collStats.${key}' is an unknown field.`);
    }
  }
  const out: Record<string, unknown> = { ns: `${db}.${name}`, host: instance.host, localTime: new Date() };
  if (spec.latencyStats !== undefined) {
    const zero = { latency: 0, ops: 0 };
    out.latencyStats = { reads: zero, writes: zero, commands: zero, transactions: zero };
  }
  if (spec.storageStats !== undefined) {
    if (!collection) {
      throw new ServerError(
        'NamespaceNotFound',
        `Unable to retrieve storageStats in $collStats stage :: caused by :: Collection [${db}.${name}] not found.`,
      );
    }
    const scale = Number((spec.storageStats as { scale?: unknown }).scale ?? 1);
    if (!Number.isInteger(scale) || scale < 1) throw new ServerError('BadValue', 'scale has to be >= 1');
    out.storageStats = collectionStorageStats(collection, scale, instance);
  }
  if (spec.count !== undefined) {
    if (!collection)
      throw new ServerError(
        'NamespaceNotFound',
        `Unable to retrieve count in $collStats stage :: caused by :: Collection [${db}.${name}] not found.`,
      );
    out.count = collection.count;
  }
  if (spec.queryExecStats !== undefined) out.queryExecStats = { collectionScans: { total: 0, nonTailable: 0 } };
  return Row.fromDoc(out);
}

function indexStats(instance: Instance, collection: Collection | undefined): Row[] {
  if (!collection) return [];
  return collection.indexes.map((index) =>
    Row.fromDoc({
      name: index.name,
      key: index.spec.key,
      host: instance.host,
      accesses: { ops: 0, since: instance.startedAt },
      spec: { ...index.spec },
    }),
  );
}

/**
 * The collation a pipeline runs under: the command's, else the collection's default; on a view
 * the view's own, which a command may not override (mongod: OptionNotSupportedOnView).
 */
function effectiveCollation(
  instance: Instance,
  db: string,
  target: string,
  resolved: ResolvedNamespace,
  requested: unknown,
): Collation | undefined {
  if (!resolved.isView) return Collation.effective(requested, resolved.collection?.options.collation);
  const view = instance.catalog.get(db, target);
  const viewDefault = Collation.of(view?.kind === 'view' ? view.collation : undefined);
  if (requested !== undefined && Collation.effective(requested, undefined) !== viewDefault) {
    throw new ServerError('OptionNotSupportedOnView', "Cannot override a view's default collation");
  }
  return viewDefault;
}

/** Every document of a collection as rows, natural order. */
function scanRows(collection: Collection | undefined): Pull {
  const pull = matchDocuments(collection, {});
  return () => {
    const m = pull();
    return m && Row.fromRaw(m.entry.raw);
  };
}

/**
 * Runs a pipeline (already free of `$changeStream`) on a namespace of `db` (a collection or view
 * name) or, for `target === 1`, on no collection. Returns the rows it yields.
 */
export function aggregate(instance: Instance, db: string, target: string | 1, pipeline: unknown[], options: AggregationOptions = {}): Pull {
  checkPipeline(pipeline);
  const mingo: MingoOptions = {
    variables: options.variables,
    collectionResolver: (name: string) => {
      const rows: Record<string, unknown>[] = [];
      const pull = aggregate(instance, db, name, []);
      for (let row = pull(); row; row = pull()) rows.push(row.doc);
      return rows;
    },
  };
  const [firstName, firstArg] = pipeline.length > 0 ? stageOf(pipeline[0]) : ['', undefined];

  if (target === 1) {
    if (firstName !== '$documents') {
      throw new ServerError(
        'InvalidNamespace',
        `{aggregate: 1} is not valid for '${firstName || 'an empty pipeline'}'; a collection is required.`,
      );
    }
    if (!Array.isArray(firstArg)) throw new ServerError(5858203, 'an array is expected');
    const rows = firstArg.map((d) => Row.fromDoc(d as Record<string, unknown>));
    return buildPipeline(pullFrom(rows), pipeline.slice(1), mingo);
  }

  const resolved = resolveNamespace(instance, db, target);
  const collection = resolved.collection;
  mingo.collation = effectiveCollation(instance, db, target, resolved, options.collation);
  if (firstName === '$collStats') {
    if (resolved.isView) throw new ServerError('CommandNotSupportedOnView', `Namespace ${db}.${target} is a view, not a collection`);
    return buildPipeline(pullFrom([collStats(instance, db, target, collection, firstArg)]), pipeline.slice(1), mingo);
  }
  if (firstName === '$indexStats') {
    if (resolved.isView) throw new ServerError('CommandNotSupportedOnView', `Namespace ${db}.${target} is a view, not a collection`);
    return buildPipeline(pullFrom(indexStats(instance, collection)), pipeline.slice(1), mingo);
  }
  if (firstName === '$documents') throw new ServerError(40602, '$documents is only valid with {aggregate: 1}');

  const stages = [...resolved.viewPipeline, ...pipeline];
  let source: Pull;
  let rest = stages;
  const [leadName, leadArg] = stages.length > 0 ? stageOf(stages[0]) : ['', undefined];
  if (leadName === '$sample') {
    // Random documents straight from storage: nothing is decoded.
    const size = sampleSize(leadArg);
    const entries = collection ? sampleEntries(collection, size) : [];
    source = pullFrom(entries.map((e) => Row.fromRaw(e.raw)));
    rest = stages.slice(1);
  } else if (leadName === '$match' && leadArg !== null && typeof leadArg === 'object' && !Array.isArray(leadArg)) {
    // The scan plans the first $match (and a $sort right after it) like a find.
    const [nextName, nextArg] = stages.length > 1 ? stageOf(stages[1]) : ['', undefined];
    const sortSpec = nextName === '$sort' ? (nextArg as Record<string, unknown>) : undefined;
    const pull = matchDocuments(collection, {
      filter: leadArg as Record<string, unknown>,
      sort: sortSpec,
      variables: options.variables,
      collation: mingo.collation,
    });
    source = () => {
      const m = pull();
      return m && Row.fromRaw(m.entry.raw, m.doc);
    };
    rest = stages.slice(sortSpec ? 2 : 1);
  } else {
    source = scanRows(collection);
  }
  const read = options.read;
  if (read && collection) {
    read.collection = collection;
    const scan = source;
    source = () => {
      const row = scan();
      if (!row) read.finished = true;
      return row;
    };
  }
  return buildPipeline(source, rest, mingo);
}

/**
 * `size` stored documents picked uniformly without replacement. A small sample (where mongod uses
 * a random cursor: under 5% of the documents) draws random record ids and keeps those still
 * stored, so that a planner's sample of a large collection does not list all of it; otherwise, or
 * when too many record ids are gone, every entry is listed and shuffled.
 */
function sampleEntries(collection: Collection, size: number): DocEntry[] {
  const low = collection.byRid.minKey();
  const high = collection.byRid.maxKey();
  if (size * 20 < collection.count && low !== undefined && high !== undefined) {
    const picked = new Map<number, DocEntry>();
    const span = high - low + 1;
    for (let attempts = 0; picked.size < size && attempts < size * 8; attempts++) {
      const rid = low + Math.floor(Math.random() * span);
      if (picked.has(rid)) continue;
      const entry = collection.byRid.get(rid);
      if (entry !== undefined) picked.set(rid, entry);
    }
    if (picked.size === size) return [...picked.values()];
  }
  return sampleOf([...collection.byRid.values()], size);
}
