/**
 * Source and destination clusters for end-to-end tests: real deployments when
 * `FERRY_TEST_CLUSTER0_URI` and `FERRY_TEST_CLUSTER1_URI` are set (they must be two different
 * replica sets or sharded clusters, empty of user data the tests could collide with), otherwise
 * two test-cluster nodes in child processes.
 */
import { spawnCluster, type ClusterOptions } from '../cluster/index.js';

export interface ClusterPair {
  cluster0: string;
  cluster1: string;
  /** True when the pair is the project's own test clusters (not a real deployment). */
  local: boolean;
  stop(): Promise<void>;
}

export async function startClusterPair(options: ClusterOptions = {}): Promise<ClusterPair> {
  const real0 = process.env.FERRY_TEST_CLUSTER0_URI;
  const real1 = process.env.FERRY_TEST_CLUSTER1_URI;
  if (real0 && real1) return { cluster0: real0, cluster1: real1, local: false, stop: async () => {} };
  const [a, b] = await Promise.all([spawnCluster(options), spawnCluster(options)]);
  return {
    cluster0: a.uri,
    cluster1: b.uri,
    local: true,
    stop: async () => {
      await Promise.all([a.stop(), b.stop()]);
    },
  };
}
