/**
 * Checks, before a sync starts, that the two clusters can serve the start request. Read-only:
 * `hello` (reachability and kind of cluster: `msg: "isdbgrid"` is a mongos, `setName` a replica
 * set member), `listDatabases`, `listCollections` and a one-document `find` per selected
 * namespace on the destination. Fails with the first problem found, as a named FerryError.
 */
import type { MongoClient } from 'mongodb';
import { hello, listDatabaseNames, serverVersion, shardCount, topologyOf, type Topology } from '../cluster/commands.js';
import { connect } from '../cluster/connect.js';
import { asClusterError } from '../cluster/errors.js';
import { nameCluster, type ClusterEndpoint, type ClusterName } from '../domain/clusters.js';
import type { StartRequest } from '../domain/start-request.js';
import {
  ChangeStreamsUnavailable,
  DestinationNotEmpty,
  ReversibleNotSupported,
  ShardingNotAllowed,
  ShardingRequired,
  UnsupportedTopology,
} from '../errors/errors.js';
import { createNamespaceSelector } from './namespaces.js';

export interface PreflightOptions {
  clusters: Record<ClusterName, ClusterEndpoint>;
}

/** Most namespaces named in a DestinationNotEmpty description. */
const NAMESPACES_NAMED = 5;

const describe = nameCluster;

/** Runs a command, turning driver failures into ClusterUnreachable / ClusterCommandFailed. */
async function ask<T>(endpoint: ClusterEndpoint, what: string, run: () => Promise<T>): Promise<T> {
  try {
    return await run();
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
  if (source === 'sharded' && destination === 'replicaSet') {
    throw new UnsupportedTopology(`syncing a sharded cluster (${sourceName}) to a replica set (${destinationName}) is not supported`);
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

/** Namespaces the request selects that already hold a document on the destination. */
async function occupiedNamespaces(client: MongoClient, endpoint: ClusterEndpoint, request: StartRequest): Promise<string[]> {
  const selector = createNamespaceSelector(request.includeNamespaces, request.excludeNamespaces);
  const databases = await ask(endpoint, 'listDatabases', () => listDatabaseNames(client));
  const occupied: string[] = [];
  for (const db of databases) {
    if (!selector.selectsDatabase(db)) continue;
    const collections = await ask(endpoint, `listCollections on ${db}`, () =>
      client.db(db).listCollections({ type: 'collection' }, { nameOnly: true }).toArray(),
    );
    for (const { name: coll } of collections) {
      if (!selector.selects(db, coll)) continue;
      const found = await ask(endpoint, `find on ${db}.${coll}`, () =>
        client
          .db(db)
          .collection(coll)
          .findOne({}, { projection: { _id: 1 } }),
      );
      if (found !== null) occupied.push(`${db}.${coll}`);
    }
  }
  return occupied;
}

/** Checks everything; throws the first problem as a FerryError. Never writes. */
export async function runPreflight(request: StartRequest, options: PreflightOptions): Promise<void> {
  const source = options.clusters[request.source];
  const destination = options.clusters[request.destination];
  const sourceClient = connect(source);
  const destinationClient = connect(destination);
  try {
    const helloOf = (endpoint: ClusterEndpoint, client: MongoClient) => ask(endpoint, 'hello', () => hello(client));
    const [sourceHello, destinationHello] = await Promise.all([helloOf(source, sourceClient), helloOf(destination, destinationClient)]);
    const [sourceTopology, destinationTopology] = [topologyOf(sourceHello), topologyOf(destinationHello)];
    checkTopologies(request, sourceTopology, destinationTopology, options.clusters);
    if (request.reversible) {
      const [sourceFacts, destinationFacts] = await Promise.all([
        reversibleFacts(source, sourceClient, sourceTopology),
        reversibleFacts(destination, destinationClient, destinationTopology),
      ]);
      checkReversible(request, { source: sourceFacts, destination: destinationFacts }, options.clusters);
    }

    const occupied = await occupiedNamespaces(destinationClient, destination, request);
    if (occupied.length > 0) {
      const named = occupied.slice(0, NAMESPACES_NAMED).join(', ');
      const more = occupied.length > NAMESPACES_NAMED ? ` and ${occupied.length - NAMESPACES_NAMED} more` : '';
      throw new DestinationNotEmpty(
        `destination ${describe(destination)} already holds documents in ${occupied.length} ` +
          `selected namespace(s): ${named}${more}; drop them or exclude them from the sync`,
      );
    }
  } finally {
    await Promise.allSettled([sourceClient.close(), destinationClient.close()]);
  }
}
