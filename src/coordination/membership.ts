/**
 * Who this instance is in a migration, from its `--id` and the source (mongosync's rule): on a
 * sharded source, the default id is one instance syncing through the mongos, as before; any other
 * id must be a shard ID of `listShards`, and that instance is one of several, one per shard
 * (refused by name otherwise: InstanceIdNotAllowed lists the shard IDs). A replica set source has
 * one instance, so no id makes it a member.
 */
import type { Cluster } from '../cluster/connect.js';
import { onCluster } from '../cluster/errors.js';
import { clusterTopology, listShards, shardUri, type ShardDescription } from '../cluster/sharding.js';
import { DEFAULT_INSTANCE_ID, nameCluster } from '../domain/clusters.js';
import { InstanceIdNotAllowed } from '../errors/errors.js';

export interface Membership {
  /** This instance's shard. */
  shard: ShardDescription;
  /** Its connection string (credentials of the router's: never logged). */
  shardUri: string;
  /** Every shard ID of the source, `listShards` order: one instance each. */
  members: string[];
}

/** This instance's membership, or undefined when it runs alone (see the module comment). */
export async function resolveMembership(source: Cluster, id: string): Promise<Membership | undefined> {
  if (id === DEFAULT_INSTANCE_ID) return undefined;
  const topology = await onCluster(source.endpoint, 'hello', clusterTopology(source.client));
  if (topology !== 'sharded') return undefined;
  const shards = await onCluster(source.endpoint, 'listShards', listShards(source.client));
  const shard = shards.find((each) => each.id === id);
  if (shard === undefined) {
    throw new InstanceIdNotAllowed(
      `--id "${id}" is not a shard of the source ${nameCluster(source.endpoint)}: its shards are ` +
        `${shards.map((each) => `"${each.id}"`).join(', ')}. Run one Ferry per source shard with --id <shard ID>, ` +
        `or a single Ferry with the default id "${DEFAULT_INSTANCE_ID}"`,
    );
  }
  return { shard, shardUri: shardUri(source.endpoint.uri, shard), members: shards.map((each) => each.id) };
}
