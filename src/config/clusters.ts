/**
 * The two clusters Ferry is started with. Start requests name them `cluster0` and `cluster1`,
 * after the `--cluster0` / `--cluster1` flags, as mongosync does.
 */
import { MongoClient } from 'mongodb';
import { ConfigError } from './errors.js';

export const CLUSTER_NAMES = ['cluster0', 'cluster1'] as const;
export type ClusterName = (typeof CLUSTER_NAMES)[number];

export interface ClusterEndpoint {
  name: ClusterName;
  /** The connection string as given. Holds credentials: never log or report it. */
  uri: string;
  /** First `host:port` of the connection string (the SRV name for `mongodb+srv`), no credentials. */
  address: string;
}

/**
 * Checks a connection string with the driver's own parser (the one that will connect later), so
 * a bad scheme, host, port or option is reported at startup rather than at the first `start`.
 * Constructing a MongoClient opens no connection.
 */
export function parseClusterUri(name: ClusterName, uri: string): ClusterEndpoint {
  let client: MongoClient;
  try {
    client = new MongoClient(uri);
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    throw new ConfigError(`--${name} is not a valid MongoDB connection string: ${reason}`);
  }
  const { srvHost, hosts } = client.options;
  const address = srvHost ?? hosts[0]?.toString();
  if (address === undefined) throw new ConfigError(`--${name} names no host`);
  return { name, uri, address };
}

/** `cluster0: host:port`, the form of `directionMapping` in progress. */
export function describeCluster(endpoint: ClusterEndpoint): string {
  return `${endpoint.name}: ${endpoint.address}`;
}
