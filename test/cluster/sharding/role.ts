/**
 * The role a replica-set node plays in a sharded cluster (mongod's `--shardsvr` / `--configsvr`).
 * A shard gets its sharding state and internal commands; a config server is an ordinary node
 * whose `config` database holds the sharding catalog, written by the router.
 */
import type { Instance } from '../instance.js';
import { ShardState, type ShardRoleOptions } from './shard-state.js';
import { installShardCommandHandling } from './shard-views.js';
import './shard-commands.js';
import '../txn/prepare.js';

export type ClusterRole = 'shardsvr' | 'configsvr';

export interface ClusterRoleOptions extends ShardRoleOptions {
  /** What the node is in a sharded cluster; undefined: a plain replica set (the default). */
  clusterRole?: ClusterRole;
}

/** Gives a node its role; nothing for a plain replica set. */
export function installClusterRole(instance: Instance, options: ClusterRoleOptions): void {
  if (options.clusterRole !== 'shardsvr') return;
  const state = new ShardState(instance, options);
  installShardCommandHandling();
  instance.stopping.signal.addEventListener('abort', () => state.stop());
}
