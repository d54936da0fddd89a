/**
 * Who this instance is in a migration, from its `--id` and the source (mongosync's rule): on a
 * sharded source, the default id is one instance syncing through the mongos, as before; any other
 * id must be a shard ID of `listShards`, and that instance is one of several, one per shard
 * (refused by name otherwise: InstanceIdNotAllowed lists the shard IDs). A replica set source has
 * one instance, so no id makes it a member.
 *
 * Reversed (an odd number of reverses), the instances keep their ids, the shard IDs of the
 * migration's original source (now the destination), and the new source's shards are divided
 * among them by position: the i-th instance by sorted id takes the i-th new-source shard by sorted
 * ID (a reversible migration has as many shards on each side: src/plan/preflight.ts).
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
  /** Every instance's id: the shard IDs of the migration's original source, `listShards` order. */
  members: string[];
}

/** This instance's membership, or undefined when it runs alone (see the module comment). */
export async function resolveMembership(source: Cluster, id: string, originalSource: Cluster = source): Promise<Membership | undefined> {
  if (id === DEFAULT_INSTANCE_ID) return undefined;
  const topology = await onCluster(originalSource.endpoint, 'hello', clusterTopology(originalSource.client));
  if (topology !== 'sharded') return undefined;
  const original = await onCluster(originalSource.endpoint, 'listShards', listShards(originalSource.client));
  const index = original.findIndex((each) => each.id === id);
  if (index < 0) {
    throw new InstanceIdNotAllowed(
      `--id "${id}" is not a shard of the source ${nameCluster(originalSource.endpoint)}: its shards are ` +
        `${original.map((each) => `"${each.id}"`).join(', ')}. Run one Ferry per source shard with --id <shard ID>, ` +
        `or a single Ferry with the default id "${DEFAULT_INSTANCE_ID}"`,
    );
  }
  const members = original.map((each) => each.id);
  if (originalSource === source) return { shard: original[index]!, shardUri: shardUri(source.endpoint.uri, original[index]!), members };
  const shards = await onCluster(source.endpoint, 'listShards', listShards(source.client));
  const shard = shardAtPosition(members, id, shards);
  if (shard === undefined) {
    throw new InstanceIdNotAllowed(
      `the reversed sync's source ${nameCluster(source.endpoint)} has ${shards.length} shard(s), the migration ` +
        `${members.length} instances (${members.join(', ')}): each instance needs one shard of it`,
    );
  }
  return { shard, shardUri: shardUri(source.endpoint.uri, shard), members };
}

/**
 * Reversed: the new source's shard of instance `id` of `members`, the i-th instance by sorted id
 * taking the i-th shard by sorted ID; undefined unless there are as many shards as instances.
 */
export function shardAtPosition(members: readonly string[], id: string, shards: readonly ShardDescription[]): ShardDescription | undefined {
  if (shards.length !== members.length) return undefined;
  const sorted = [...shards].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  return sorted[[...members].sort().indexOf(id)];
}
