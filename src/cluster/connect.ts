/**
 * The one way Ferry opens a connection to a cluster: every client (the sync's own, preflight's,
 * recovery's, each copy and apply worker thread's) is made here, with one timeout policy.
 * Connection strings hold credentials: they go to the driver and nowhere else.
 */
import { MongoClient } from 'mongodb';
import { ConnectionString } from 'mongodb-connection-string-url';
import type { ClusterEndpoint } from '../domain/clusters.js';

/**
 * How long a cluster may take to be found, and a connection to be opened, before an operation
 * fails (the driver's default is 30 s): an unreachable cluster is reported as ClusterUnreachable
 * after this long, and a retried operation (retry.ts) waits at most this long per attempt. A
 * connection string's own `serverSelectionTimeoutMS` or `connectTimeoutMS` wins over it.
 */
export const CLUSTER_TIMEOUT_MS = 10_000;

/** Ferry's timeouts for the options the connection string leaves unset (the driver lets its options object win over the string's). */
function defaultTimeouts(uri: string): { serverSelectionTimeoutMS?: number; connectTimeoutMS?: number } {
  // The driver reads URI options case-insensitively.
  const given = new Set([...new ConnectionString(uri).searchParams.keys()].map((key) => key.toLowerCase()));
  return {
    ...(given.has('serverselectiontimeoutms') ? {} : { serverSelectionTimeoutMS: CLUSTER_TIMEOUT_MS }),
    ...(given.has('connecttimeoutms') ? {} : { connectTimeoutMS: CLUSTER_TIMEOUT_MS }),
  };
}

/** A cluster Ferry works with: where it is, and the client to reach it. */
export interface Cluster {
  readonly endpoint: ClusterEndpoint;
  readonly client: MongoClient;
}

export interface ConnectOptions {
  /** Who connects, shown in the server's logs and `currentOp`. Default `ferry`. */
  appName?: string;
  /** Connections per server at most (the driver's default is 100). */
  maxPoolSize?: number;
}

/** A client of the cluster at `target` (an endpoint, or a worker thread's connection string); it connects on first use. */
export function connect(target: ClusterEndpoint | string, options: ConnectOptions = {}): MongoClient {
  const uri = typeof target === 'string' ? target : target.uri;
  return new MongoClient(uri, {
    appName: options.appName ?? 'ferry',
    ...defaultTimeouts(uri),
    ...(options.maxPoolSize === undefined ? {} : { maxPoolSize: options.maxPoolSize }),
  });
}

/** The cluster at `endpoint` with a client of its own. */
export function openCluster(endpoint: ClusterEndpoint, options?: ConnectOptions): Cluster {
  return { endpoint, client: connect(endpoint, options) };
}

/**
 * The first `host:port` of a connection string (the SRV name for `mongodb+srv`), parsed by the
 * driver's own parser (the one that will connect later; constructing a client opens nothing).
 * Throws the driver's error for a string it cannot parse.
 */
export function addressOf(uri: string): string | undefined {
  const { srvHost, hosts } = new MongoClient(uri).options;
  return srvHost ?? hosts[0]?.toString();
}

/**
 * The same connection string, to its first host alone (`directConnection`) and without its
 * `replicaSet` option; undefined when it has no `replicaSet` option, or is an SRV string (whose
 * hosts come from DNS). A client of a string with `replicaSet` never selects a mongos (the driver
 * drops a member that is not of the set), so the only way to learn that such a string leads to a
 * mongos is to ask its host directly.
 */
export function firstHostWithoutReplicaSet(uri: string): string | undefined {
  const parsed = new ConnectionString(uri);
  if (parsed.isSRV || !parsed.searchParams.has('replicaSet') || parsed.hosts.length === 0) return undefined;
  parsed.hosts = [parsed.hosts[0]!];
  parsed.searchParams.delete('replicaSet');
  parsed.searchParams.set('directConnection', 'true');
  return parsed.toString();
}
