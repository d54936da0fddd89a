/**
 * The engine's own driver clients, one per cluster, for planning, metadata and commands (copy
 * workers have their own). Connection strings hold credentials: they are passed to the driver
 * and nowhere else.
 */
import { MongoClient } from 'mongodb';
import type { ClusterEndpoint } from '../domain/clusters.js';

/** How long a cluster may take to be found before an operation fails (the driver's default is 30 s). */
export const SERVER_SELECTION_TIMEOUT_MS = 15_000;

/** How long startup waits for a cluster when looking for an earlier sync's metadata. */
export const RECOVERY_LOOKUP_TIMEOUT_MS = 5_000;

export function createClient(endpoint: ClusterEndpoint, serverSelectionTimeoutMS = SERVER_SELECTION_TIMEOUT_MS): MongoClient {
  return new MongoClient(endpoint.uri, { appName: 'ferry', serverSelectionTimeoutMS });
}
