/**
 * `--cluster0` / `--cluster1`: the connection strings of the two clusters, checked at startup.
 */
import { addressOf } from '../cluster/connect.js';
import type { ClusterEndpoint, ClusterName } from '../domain/clusters.js';
import { InvalidConfiguration } from '../errors/errors.js';

/**
 * Checks a connection string with the driver's own parser (the one that will connect later), so
 * a bad scheme, host, port or option is reported at startup rather than at the first `start`.
 * Constructing a MongoClient opens no connection.
 */
export function parseClusterUri(name: ClusterName, uri: string): ClusterEndpoint {
  let address: string | undefined;
  try {
    address = addressOf(uri);
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    throw new InvalidConfiguration(`--${name} is not a valid MongoDB connection string: ${reason}`);
  }
  if (address === undefined) throw new InvalidConfiguration(`--${name} names no host`);
  return { name, uri, address };
}
