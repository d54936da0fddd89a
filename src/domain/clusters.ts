/**
 * The two clusters Ferry is started with. Start requests name them `cluster0` and `cluster1`,
 * after the `--cluster0` / `--cluster1` flags, as mongosync does.
 */

export const CLUSTER_NAMES = ['cluster0', 'cluster1'] as const;
export type ClusterName = (typeof CLUSTER_NAMES)[number];

export interface ClusterEndpoint {
  name: ClusterName;
  /** The connection string as given. Holds credentials: never log or report it. */
  uri: string;
  /** First `host:port` of the connection string (the SRV name for `mongodb+srv`), no credentials. */
  address: string;
}

/** `cluster0: host:port`, the form of `directionMapping` in progress. */
export function describeCluster(endpoint: ClusterEndpoint): string {
  return `${endpoint.name}: ${endpoint.address}`;
}

/** `cluster0 (host:port)`, how errors and logs name a cluster. */
export function nameCluster(endpoint: ClusterEndpoint): string {
  return `${endpoint.name} (${endpoint.address})`;
}

/**
 * The instance id a single instance runs with (`--id`'s default; mongosync's coordinator). One
 * instance syncing a sharded cluster must keep it, as with mongosync, whose `--id` names a
 * source shard when several instances share the work.
 */
export const DEFAULT_INSTANCE_ID = 'coordinator';
