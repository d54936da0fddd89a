/**
 * Checks, before a sync starts, that the two clusters can serve the start request. Read-only:
 * `hello` (reachability and kind of cluster: `msg: "isdbgrid"` is a mongos, `setName` a replica
 * set member; a connection string with `replicaSet` is also asked directly at its first host,
 * since a client of such a string never reaches a mongos; and that the two are not one cluster),
 * `balancerStatus` on a sharded cluster, the source's catalog of the collections `sharding` lists
 * (sharding-rules.ts), `listDatabases` and `listCollections` on the source (a filter that selects
 * nothing there is said in progress warnings), the metadata of other instances on the destination
 * (no uncommitted sync of theirs may overlap: overlap.ts), `listDatabases` and `listCollections`
 * on the destination, and, unless `skipDiskSpaceCheck`, `collStats` of the selected source
 * collections and `dbStats` on the destination. Fails with the first problem found, as a named
 * FerryError.
 *
 * The destination rule is mongosync's: without `preExistingDestinationData` the destination must
 * hold no namespace at all (a collection or view in any database but admin, local, config and
 * Ferry's metadata), even an empty one; with it, none of the namespaces the sync selects may exist
 * there (other data may).
 */
import type { MongoClient } from 'mongodb';
import {
  hello,
  listDatabaseNames,
  sameCluster,
  serverVersion,
  shardCount,
  shardedClusterId,
  topologyOf,
  type HelloReply,
  type Topology,
} from '../cluster/commands.js';
import { collectionFootprint, freeDiskBytes } from '../cluster/monitoring.js';
import { retryTransient } from '../cluster/retry.js';
import { isReservedCollection, isReservedDatabase } from '../domain/namespaces.js';
import { connect, firstHostWithoutReplicaSet } from '../cluster/connect.js';
import { asClusterError } from '../cluster/errors.js';
import { balancerStatus } from '../cluster/sharding.js';
import { DEFAULT_INSTANCE_ID, nameCluster, type ClusterEndpoint, type ClusterName } from '../domain/clusters.js';
import type { StartRequest } from '../domain/start-request.js';
import {
  BalancerRunning,
  ChangeStreamsUnavailable,
  DestinationNotEmpty,
  InsufficientDestinationDiskSpace,
  InstanceIdNotAllowed,
  ReplicaSetOptionOnMongos,
  OverlappingSync,
  SameCluster,
  ReversibleNotSupported,
  ShardingNotAllowed,
  ShardingRequired,
  UnsupportedTopology,
} from '../errors/errors.js';
import { createNamespaceSelector, selectorFor } from './namespaces.js';
import { findOverlap, selectedNamespaces } from './overlap.js';
import { ResumeStore } from '../meta/resume.js';
import { MetadataStore } from '../meta/store.js';
import { checkShardingEntries } from './sharding-rules.js';

export interface PreflightOptions {
  clusters: Record<ClusterName, ClusterEndpoint>;
  /**
   * This instance's `--id` (other instances' syncs on the destination must not overlap its own).
   * Default: the single instance's (`DEFAULT_INSTANCE_ID`).
   */
  id?: string;
  /**
   * Several instances, one per source shard (src/coordination/): every instance's id, this one's
   * among them. Their syncs are parts of this one: they do not overlap it, and what they already
   * wrote to the destination does not make it non-empty. Absent: this instance runs alone.
   */
  fellows?: readonly string[];
}

/** Most namespaces named in a DestinationNotEmpty description. */
const NAMESPACES_NAMED = 5;

const describe = nameCluster;

/** Runs a command, turning driver failures into ClusterUnreachable / ClusterCommandFailed. */
async function ask<T>(endpoint: ClusterEndpoint, what: string, run: () => Promise<T>): Promise<T> {
  try {
    // Reads only: a passing failure (a step-down, a dropped connection) is asked again, not a refused start.
    return await retryTransient(run);
  } catch (error) {
    throw asClusterError(endpoint, what, error);
  }
}

/** The rules between the two kinds of cluster and the request (spec §4.1 rule 4, reference.md). */
export function checkTopologies(
  request: StartRequest,
  source: Topology,
  destination: Topology,
  clusters: PreflightOptions['clusters'],
): void {
  const sourceName = describe(clusters[request.source]);
  const destinationName = describe(clusters[request.destination]);
  if (source === 'standalone') {
    throw new ChangeStreamsUnavailable(
      `source ${sourceName} is a standalone server; change streams need a replica set or a sharded cluster`,
    );
  }
  if (destination === 'standalone') {
    throw new UnsupportedTopology(`destination ${destinationName} is a standalone server; it must be a replica set or a sharded cluster`);
  }
  const toSharded = source === 'replicaSet' && destination === 'sharded';
  if (toSharded && request.sharding === undefined) {
    throw new ShardingRequired('syncing a replica set to a sharded cluster needs "sharding" in the start request');
  }
  if (!toSharded && request.sharding !== undefined) {
    throw new ShardingNotAllowed(`"sharding" applies only to a replica set → sharded cluster sync; this is ${source} → ${destination}`);
  }
  if (toSharded && request.reversible) {
    throw new ReversibleNotSupported('a replica set → sharded cluster sync cannot be reversible');
  }
}

/**
 * `reversible` with several instances, one per source shard (ReversibleNotSupported unless the
 * destination is sharded: reversed, each instance applies the change events of one shard of the
 * new source, so it needs a shard for every instance; `checkReversible` then asks as many shards
 * on each side, as mongosync's reverse does). Refused at `start`, with nothing written, rather than
 * at `reverse` after the commit.
 */
export function severalInstancesNotReversible(
  members: readonly string[],
  destination: string,
): InstanceType<typeof ReversibleNotSupported> {
  return new ReversibleNotSupported(
    `a migration run by several instances (one per source shard: ${members.join(', ')}) can be reversible only to a sharded ` +
      `cluster with as many shards (reversed, each instance syncs one of its shards); ${destination} is not sharded. ` +
      'Start it without "reversible", or with one instance (the default --id)',
  );
}

/**
 * mongosync's rule for one instance on a sharded cluster: no `--id` but the default (several
 * instances, one per source shard, each name theirs).
 */
export function checkInstanceId(id: string, topologies: Record<ClusterName, Topology>, clusters: PreflightOptions['clusters']): void {
  if (id === DEFAULT_INSTANCE_ID) return;
  const sharded = (Object.keys(topologies) as ClusterName[]).filter((name) => topologies[name] === 'sharded');
  if (sharded.length === 0) return;
  throw new InstanceIdNotAllowed(
    `--id "${id}": one Ferry instance syncing a sharded cluster (${sharded.map((name) => describe(clusters[name])).join(', ')}) ` +
      `must run with the default id "${DEFAULT_INSTANCE_ID}", as mongosync requires; restart Ferry without --id`,
  );
}

/** Refuses a sharded cluster whose balancer runs (or is finishing a round): chunks must not move under a sync. */
async function checkBalancer(endpoint: ClusterEndpoint, client: MongoClient, role: 'source' | 'destination'): Promise<void> {
  const status = await ask(endpoint, 'balancerStatus', () => balancerStatus(client));
  if (status.mode === 'off' && !status.inBalancerRound) return;
  const state = status.mode === 'off' ? 'is finishing a balancing round' : `is running (mode "${status.mode}")`;
  throw new BalancerRunning(
    `the balancer of the ${role} ${describe(endpoint)} ${state}: chunks must not move during a sync. Stop it on its mongos with ` +
      '`db.adminCommand({balancerStop: 1})` (sh.stopBalancer()), wait for running migrations to finish, then start again',
  );
}

/** Whether a connection string with `replicaSet` leads to a mongos, asked of its first host directly (false when it cannot tell). */
async function replicaSetOptionOnMongos(endpoint: ClusterEndpoint): Promise<boolean> {
  const direct = firstHostWithoutReplicaSet(endpoint.uri);
  if (direct === undefined) return false;
  const client = connect(direct);
  try {
    return topologyOf(await hello(client)) === 'sharded';
  } catch {
    return false; // unreachable: the regular hello says so
  } finally {
    await client.close().catch(() => undefined);
  }
}

/**
 * `hello` of one cluster; ReplicaSetOptionOnMongos when its connection string has `replicaSet`
 * and leads to a mongos (the direct probe answers long before the regular one times out).
 */
async function helloOf(endpoint: ClusterEndpoint, client: MongoClient): Promise<HelloReply> {
  const refusal = () =>
    new ReplicaSetOptionOnMongos(
      `${describe(endpoint)} is a mongos (a sharded cluster), but its connection string has the replicaSet option, with ` +
        'which no client can use it; remove replicaSet from the connection string to sync the cluster through its mongos',
    );
  const probe = replicaSetOptionOnMongos(endpoint);
  const regular = ask(endpoint, 'hello', () => hello(client));
  const first = await Promise.race([
    probe.then((mongos) => ({ probe: mongos })),
    regular.then(
      (reply) => ({ reply }),
      (error: unknown) => ({ error }),
    ),
  ]);
  if ('probe' in first) {
    if (first.probe) throw refusal();
    return regular;
  }
  if ('reply' in first) return first.reply;
  if (await probe) throw refusal();
  throw first.error;
}

/** What the reversible rules look at on each cluster. */
export interface ReversibleFacts {
  topology: Topology;
  /** `buildInfo` `versionArray`: major first. */
  version: number[];
  /** Shards of a sharded cluster. */
  shards?: number;
}

/** mongosync's reverse needs MongoDB 6.0 or later on both clusters (`setUserWriteBlockMode`, `forceNonUnique`). */
const REVERSIBLE_MIN_MAJOR = 6;

/**
 * The rules a `reversible` sync adds, where mongosync's reverse refuses (reference.md, mongosync's
 * `reverse` requirements): both clusters MongoDB 6.0 or later, of the same major version, and,
 * when sharded, with as many shards. (Replica set → sharded is refused by `checkTopologies`.)
 */
export function checkReversible(
  request: StartRequest,
  facts: Record<'source' | 'destination', ReversibleFacts>,
  clusters: PreflightOptions['clusters'],
): void {
  if (!request.reversible) return;
  const name = { source: describe(clusters[request.source]), destination: describe(clusters[request.destination]) };
  for (const side of ['source', 'destination'] as const) {
    const major = facts[side].version[0] ?? 0;
    if (major < REVERSIBLE_MIN_MAJOR) {
      throw new ReversibleNotSupported(
        `${side} ${name[side]} runs MongoDB ${facts[side].version.join('.')}; a reversible sync needs 6.0 or later on both clusters`,
      );
    }
  }
  const [sourceMajor, destinationMajor] = [facts.source.version[0], facts.destination.version[0]];
  if (sourceMajor !== destinationMajor) {
    throw new ReversibleNotSupported(
      `a reversible sync needs both clusters on the same major version: ${name.source} runs ${sourceMajor}, ` +
        `${name.destination} ${destinationMajor}`,
    );
  }
  const { shards: sourceShards } = facts.source;
  const { shards: destinationShards } = facts.destination;
  if (facts.source.topology === 'sharded' && facts.destination.topology === 'sharded' && sourceShards !== destinationShards) {
    throw new ReversibleNotSupported(
      `a reversible sync between sharded clusters needs as many shards on each: ${name.source} has ${sourceShards}, ` +
        `${name.destination} ${destinationShards}`,
    );
  }
}

/** What `checkReversible` needs of one cluster. */
async function reversibleFacts(endpoint: ClusterEndpoint, client: MongoClient, topology: Topology): Promise<ReversibleFacts> {
  const version = await ask(endpoint, 'buildInfo', () => serverVersion(client));
  if (topology !== 'sharded') return { topology, version };
  return { topology, version, shards: await ask(endpoint, 'listShards', () => shardCount(client)) };
}

/**
 * Namespaces on a cluster (collections and views, not system ones), those `selects` keeps.
 * `listCollections` with `nameOnly` (no locks taken) in each database but the reserved ones.
 */
async function namespacesOn(
  client: MongoClient,
  endpoint: ClusterEndpoint,
  selects: (db: string, coll: string) => boolean,
  onlyCollections = false,
): Promise<string[]> {
  const databases = await ask(endpoint, 'listDatabases', () => listDatabaseNames(client));
  const found: string[] = [];
  for (const db of databases) {
    if (isReservedDatabase(db)) continue;
    const entries = await ask(endpoint, `listCollections on ${db}`, () =>
      client
        .db(db)
        .listCollections(onlyCollections ? { type: 'collection' } : {}, { nameOnly: true })
        .toArray(),
    );
    for (const { name } of entries) if (!isReservedCollection(name) && selects(db, name)) found.push(`${db}.${name}`);
  }
  return found.sort();
}

function named(namespaces: string[]): string {
  const shown = namespaces.slice(0, NAMESPACES_NAMED).join(', ');
  return namespaces.length > NAMESPACES_NAMED ? `${shown} and ${namespaces.length - NAMESPACES_NAMED} more` : shown;
}

/** mongosync's destination rule (see the module comment). */
async function checkDestinationEmpty(client: MongoClient, endpoint: ClusterEndpoint, request: StartRequest): Promise<void> {
  if (request.preExistingDestinationData === true) {
    const selector = createNamespaceSelector(request.includeNamespaces, request.excludeNamespaces);
    const conflicting = await namespacesOn(client, endpoint, (db, coll) => selector.selects(db, coll));
    if (conflicting.length > 0) {
      throw new DestinationNotEmpty(
        `destination ${describe(endpoint)} already has ${conflicting.length} of the namespace(s) this sync selects: ` +
          `${named(conflicting)}; with preExistingDestinationData the selected namespaces must not exist there ` +
          '(drop them or filter them out)',
      );
    }
    return;
  }
  const existing = await namespacesOn(client, endpoint, () => true);
  if (existing.length > 0) {
    throw new DestinationNotEmpty(
      `destination ${describe(endpoint)} is not empty: it has ${existing.length} namespace(s): ${named(existing)}; ` +
        'mongosync (and Ferry) sync only into an empty cluster: drop them, or start with preExistingDestinationData: true ' +
        'and a namespace filter that leaves them out',
    );
  }
}

/**
 * mongosync's disk space check: the selected source collections with their indexes must fit in
 * the free space of the destination's volume. Skipped when the destination does not say how much
 * is free (dbStats without fsTotalSize).
 */
async function checkDiskSpace(
  source: { client: MongoClient; endpoint: ClusterEndpoint },
  destination: { client: MongoClient; endpoint: ClusterEndpoint },
  request: StartRequest,
): Promise<void> {
  const free = await ask(destination.endpoint, 'dbStats (free disk space)', () => freeDiskBytes(destination.client));
  if (free === undefined) return;
  const selector = createNamespaceSelector(request.includeNamespaces, request.excludeNamespaces);
  const selected = await namespacesOn(source.client, source.endpoint, (db, coll) => selector.selects(db, coll), true);
  let needed = 0;
  for (const ns of selected) {
    const dot = ns.indexOf('.');
    needed += await ask(source.endpoint, `collStats on ${ns}`, () =>
      collectionFootprint(source.client, ns.slice(0, dot), ns.slice(dot + 1)),
    );
  }
  if (needed > free) {
    const gib = (bytes: number) => `${(bytes / 1024 ** 3).toFixed(2)} GiB`;
    throw new InsufficientDestinationDiskSpace(
      `destination ${describe(destination.endpoint)} has ${gib(free)} free, and the ${selected.length} selected collection(s) ` +
        `take ${gib(needed)} with their indexes on the source; free space there, or start with skipDiskSpaceCheck: true ` +
        'if its file system does not show the space it really has',
    );
  }
}

/** Refuses a sync from a cluster onto itself, recognised by what the clusters say of themselves (never by their URIs). */
async function refuseSameCluster(
  source: ClusterEndpoint,
  sourceClient: MongoClient,
  sourceHello: HelloReply,
  destination: ClusterEndpoint,
  destinationClient: MongoClient,
  destinationHello: HelloReply,
): Promise<void> {
  let same = sameCluster(sourceHello, destinationHello);
  if (!same && topologyOf(sourceHello) === 'sharded' && topologyOf(destinationHello) === 'sharded') {
    const [a, b] = await Promise.all([shardedClusterId(sourceClient), shardedClusterId(destinationClient)]);
    same = a !== undefined && a === b;
  }
  if (same) {
    throw new SameCluster(
      `source ${describe(source)} and destination ${describe(destination)} are the same cluster ` +
        `(${sourceHello.setName === undefined ? 'one cluster id' : `replica set ${sourceHello.setName}, the same members`}); ` +
        'a sync needs two different clusters',
    );
  }
}

/** What preflight found that does not refuse the start but must be said (progress warnings, the log). */
export interface PreflightFindings {
  warnings: string[];
}

/** Checks everything; throws the first problem as a FerryError, and returns what must be said. Never writes. */
export async function runPreflight(request: StartRequest, options: PreflightOptions): Promise<PreflightFindings> {
  const source = options.clusters[request.source];
  const destination = options.clusters[request.destination];
  const sourceClient = connect(source);
  const destinationClient = connect(destination);
  try {
    const [sourceHello, destinationHello] = await Promise.all([helloOf(source, sourceClient), helloOf(destination, destinationClient)]);
    const [sourceTopology, destinationTopology] = [topologyOf(sourceHello), topologyOf(destinationHello)];
    checkTopologies(request, sourceTopology, destinationTopology, options.clusters);
    // An instance of several has had its id checked against the source's shards (src/coordination/membership.ts).
    checkInstanceId(
      options.fellows === undefined ? (options.id ?? DEFAULT_INSTANCE_ID) : DEFAULT_INSTANCE_ID,
      { [request.source]: sourceTopology, [request.destination]: destinationTopology } as Record<ClusterName, Topology>,
      options.clusters,
    );
    await refuseSameCluster(source, sourceClient, sourceHello, destination, destinationClient, destinationHello);
    if (request.reversible && options.fellows !== undefined && destinationTopology !== 'sharded') {
      throw severalInstancesNotReversible(options.fellows, describe(destination));
    }
    if (request.reversible) {
      const [sourceFacts, destinationFacts] = await Promise.all([
        reversibleFacts(source, sourceClient, sourceTopology),
        reversibleFacts(destination, destinationClient, destinationTopology),
      ]);
      checkReversible(request, { source: sourceFacts, destination: destinationFacts }, options.clusters);
    }
    if (sourceTopology === 'sharded') await checkBalancer(source, sourceClient, 'source');
    if (destinationTopology === 'sharded') await checkBalancer(destination, destinationClient, 'destination');
    if (request.sharding !== undefined) {
      const selector = createNamespaceSelector(request.includeNamespaces, request.excludeNamespaces);
      await ask(source, 'reading the collections to shard', () => checkShardingEntries(sourceClient, request.sharding!, selector));
    }

    const selected = await ask(source, 'listing the selected namespaces', () => selectedNamespaces(sourceClient, selectorFor(request)));
    // Only a filter naming what to sync can be wrong this way (a whole-cluster sync of an empty source is not). Not
    // refused: as with mongosync, namespaces created later that match are synced; but never a silent sync of nothing.
    const warnings: string[] = [];
    if (selected.length === 0 && (request.includeNamespaces?.length ?? 0) > 0) {
      warnings.push(
        `includeNamespaces selected no collection or view on the source ${describe(source)} when the sync started` +
          `${request.excludeNamespaces === undefined ? '' : ' (after excludeNamespaces)'}: nothing was there to copy. ` +
          'Namespaces created later that match are synced; if that is not what you meant, check the database and ' +
          'collection names (they are case-sensitive) against the source, pause, and start again with the right ones',
      );
    }
    const overlap = await ask(destination, "reading other instances' metadata", () =>
      findOverlap(destinationClient, options.id ?? DEFAULT_INSTANCE_ID, request, selected, options.fellows ?? []),
    );
    if (overlap !== undefined) {
      const named = overlap.namespaces.slice(0, NAMESPACES_NAMED).join(', ');
      const more = overlap.namespaces.length > NAMESPACES_NAMED ? ` and ${overlap.namespaces.length - NAMESPACES_NAMED} more` : '';
      throw new OverlappingSync(
        `the sync of instance "${overlap.instance}" (state ${overlap.state}) to ${describe(destination)} covers namespaces ` +
          `this request selects too: ${named}${more}. Two syncs must not write the same namespaces of one destination; ` +
          'narrow the filters so they do not overlap, or wait until that sync has committed',
      );
    }

    const fellowsStarted =
      options.fellows !== undefined &&
      (await ask(destination, "reading other instances' metadata", () => fellowSyncs(destinationClient, options.fellows!))) > 0;
    if (!fellowsStarted) await checkDestinationEmpty(destinationClient, destination, request);
    if (request.skipDiskSpaceCheck !== true) {
      await checkDiskSpace({ client: sourceClient, endpoint: source }, { client: destinationClient, endpoint: destination }, request);
    }
    return { warnings };
  } finally {
    await Promise.allSettled([sourceClient.close(), destinationClient.close()]);
  }
}

/** How many of the fellow instances of a migration have a sync recorded on the destination, not committed. */
async function fellowSyncs(destination: MongoClient, fellows: readonly string[]): Promise<number> {
  const docs = await new ResumeStore(new MetadataStore(destination, fellows[0]!)).all();
  return docs.filter((doc) => fellows.includes(String(doc._id)) && doc.state !== 'COMMITTED').length;
}
