/**
 * Statistics commands: `collStats` (deprecated in mongod 6.2 but still served), `dbStats` and
 * `serverStatus`, with mongod's field names. Figures come from storage/stats.ts and the
 * node's counters; sections mongod fills from WiredTiger internals are left out (see README).
 */
import { readFileSync, statfsSync } from 'node:fs';
import { Long, Timestamp } from 'bson';
import { ServerError } from '../errors.js';
import type { Instance } from '../instance.js';
import { validateCollectionName, validateDatabaseName } from '../storage/catalog.js';
import { collectionStorageStats, databaseStats } from '../storage/stats.js';
import { Args } from './args.js';
import { defineCommand } from './registry.js';
import { helloReply, SERVER_VERSION } from './handshake.js';

function readScale(args: Args): number {
  const scale = args.number('scale') ?? 1;
  if (scale < 1) throw new ServerError('BadValue', 'scale has to be >= 1');
  return Math.trunc(scale);
}

defineCommand({
  name: 'collStats',
  handler: ({ instance, body, db }) => {
    const args = new Args('collStats', body);
    const name = args.requiredString('collStats');
    validateCollectionName(db, name);
    const scale = readScale(args);
    const ns = instance.catalog.get(db, name);
    if (ns?.kind === 'view') throw new ServerError('CommandNotSupportedOnView', `Namespace ${db}.${name} is a view, not a collection`);
    if (!ns) {
      // mongod answers ok with empty figures for a collection that does not exist.
      return {
        ns: `${db}.${name}`,
        size: 0,
        count: 0,
        numOrphanDocs: 0,
        storageSize: 0,
        totalSize: 0,
        nindexes: 0,
        totalIndexSize: 0,
        indexDetails: {},
        indexSizes: {},
        scaleFactor: scale,
      };
    }
    return { ns: `${db}.${name}`, ...collectionStorageStats(ns, scale, instance) };
  },
});

function fileSystem(): { fsUsedSize: number; fsTotalSize: number } {
  try {
    const fs = statfsSync('/');
    const total = fs.blocks * fs.bsize;
    return { fsUsedSize: total - fs.bfree * fs.bsize, fsTotalSize: total };
  } catch {
    return { fsUsedSize: 0, fsTotalSize: 0 };
  }
}

defineCommand({
  name: 'dbStats',
  aliases: ['dbstats'],
  handler: ({ instance, body, db }) => {
    const args = new Args('dbStats', body);
    validateDatabaseName(db);
    const scale = readScale(args);
    const fs = fileSystem();
    return {
      db,
      ...databaseStats(instance, db, scale),
      fsUsedSize: Math.floor(fs.fsUsedSize / scale),
      fsTotalSize: Math.floor(fs.fsTotalSize / scale),
    };
  },
});

const MB = 1024 * 1024;

function memory(): { resident: number; virtual: number } {
  const rss = process.memoryUsage().rss;
  let virtualBytes = rss;
  try {
    // /proc/self/statm: total program size in pages first.
    virtualBytes = Number(readFileSync('/proc/self/statm', 'utf8').split(' ')[0]) * 4096;
  } catch {
    // not Linux: report the resident size
  }
  return { resident: Math.round(rss / MB), virtual: Math.round(virtualBytes / MB) };
}

/** mongod's UserWriteBlockState in serverStatus.repl: 1 disabled, 2 enabled. */
function userWriteBlockMode(instance: Instance): number {
  return instance.userWritesBlocked ? 2 : 1;
}

/** The hello fields mongod repeats in serverStatus.repl. */
const REPL_FIELDS = [
  'topologyVersion',
  'hosts',
  'setName',
  'setVersion',
  'isWritablePrimary',
  'secondary',
  'primary',
  'me',
  'electionId',
  'lastWrite',
];

function replSection(instance: Instance): Record<string, unknown> {
  const hello = helloReply(instance, 0, false);
  return {
    ...Object.fromEntries(REPL_FIELDS.map((field) => [field, hello[field]])),
    primaryOnlyServices: {},
    rbid: 1,
    userWriteBlockMode: userWriteBlockMode(instance),
  };
}

/** Every serverStatus section this node reports, by name, and whether it is shown by default. */
function sections(instance: Instance): Record<string, { byDefault: boolean; build: () => unknown }> {
  const counters = instance.counters;
  const longs = (o: Record<string, number>) => Object.fromEntries(Object.entries(o).map(([k, v]) => [k, Long.fromNumber(v)]));
  return {
    asserts: { byDefault: true, build: () => ({ regular: 0, warning: 0, msg: 0, user: 0, tripwire: 0, rollovers: 0 }) },
    connections: {
      byDefault: true,
      build: () => ({
        current: counters.connectionsCurrent,
        available: 1_000_000 - counters.connectionsCurrent,
        totalCreated: counters.connectionsTotalCreated,
        rejected: 0,
        active: counters.connectionsCurrent,
      }),
    },
    mem: { byDefault: true, build: () => ({ bits: 64, ...memory(), supported: true }) },
    metrics: {
      byDefault: true,
      build: () => ({
        commands: counters.commandMetrics(),
        ttl: longs({ deletedDocuments: counters.ttlDeletedDocuments, passes: counters.ttlPasses, subPasses: counters.ttlPasses }),
      }),
    },
    opcounters: { byDefault: true, build: () => longs(counters.opcounters) },
    opcountersRepl: { byDefault: true, build: () => longs({ insert: 0, query: 0, update: 0, delete: 0, getmore: 0, command: 0 }) },
    repl: { byDefault: true, build: () => replSection(instance) },
    storageEngine: {
      byDefault: true,
      build: () => ({
        name: 'wiredTiger',
        supportsCommittedReads: true,
        oldestRequiredTimestampForCrashRecovery: instance.oplog.oldest() ?? new Timestamp({ t: 0, i: 0 }),
        supportsPendingDrops: true,
        dropPendingIdents: Long.fromNumber(0),
        supportsSnapshotReadConcern: true,
        readOnly: false,
        persistent: instance.dataDirectory !== undefined,
        backupCursorOpen: false,
      }),
    },
    oplog: {
      byDefault: false,
      build: () => ({
        latestOptime: instance.oplog.newest()?.ts ?? instance.clusterTime(),
        earliestOptime: instance.oplog.oldest() ?? instance.clusterTime(),
      }),
    },
  };
}

defineCommand({
  name: 'serverStatus',
  aliases: ['serverstatus'],
  handler: ({ instance, body }) => {
    const uptimeMillis = Date.now() - instance.startedAt.getTime();
    const reply: Record<string, unknown> = {
      host: instance.host,
      version: SERVER_VERSION,
      process: 'mongod',
      pid: Long.fromNumber(process.pid),
      uptime: Math.floor(uptimeMillis / 1000),
      uptimeMillis: Long.fromNumber(uptimeMillis),
      uptimeEstimate: Long.fromNumber(Math.floor(uptimeMillis / 1000)),
      localTime: new Date(),
    };
    for (const [name, section] of Object.entries(sections(instance))) {
      const wanted = body[name];
      // {section: 0} leaves a default section out; {section: 1} asks for an optional one.
      const include = wanted === undefined ? section.byDefault : Boolean(wanted) && wanted !== 0;
      if (include) reply[name] = section.build();
    }
    return reply;
  },
});
