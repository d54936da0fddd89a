/**
 * The `POST /api/v1/start` request in its typed, normalized form: what every layer of Ferry
 * imports. The rules that turn a body into one (schema, rules between fields) are the API's
 * (src/api/start-request.ts); nothing here checks anything.
 */
import type { ClusterName } from './clusters.js';

/** `buildIndexes` values, as mongosync accepts them; the first is the default. */
export const BUILD_INDEXES = ['afterDataCopy', 'beforeDataCopy', 'excludeHashed', 'excludeHashedAfterCopy', 'never'] as const;
export type BuildIndexes = (typeof BUILD_INDEXES)[number];

/**
 * `enableUserWriteBlocking` in its string form. The older boolean form maps `true` to
 * `sourceAndDestination` and `false` to `none`; absent means `destinationOnly` (mongosync's default).
 */
export const WRITE_BLOCKING_MODES = ['sourceAndDestination', 'destinationOnly', 'none'] as const;
export type WriteBlocking = (typeof WRITE_BLOCKING_MODES)[number];

/** A regular expression as given in a filter entry. */
export interface RegexFilter {
  /** The pattern, in MongoDB `$regex` syntax. */
  pattern: string;
  /** Option letters among `i`, `m`, `s`, `x`, `u`, in any order. Default: none. */
  options?: string;
}

/** One element of `includeNamespaces` or `excludeNamespaces`. */
export interface NamespaceFilter {
  /** Exact database name. */
  database?: string;
  /** Databases whose names match this expression. */
  databaseRegex?: RegexFilter;
  /** Exact collection names within the matched databases. */
  collections?: string[];
  /** Collections of the matched databases whose names match this expression. */
  collectionsRegex?: RegexFilter;
}

export interface ShardingEntry {
  database: string;
  collection: string;
  /** Shard key fields in order, each `{field: 1}` or `{field: "hashed"}`. */
  shardCollection: { key: Record<string, 1 | 'hashed'>[] };
}

export interface ShardingConfig {
  /** Create a supporting index for a shard key that has none on the source. Default false. */
  createSupportingIndexes: boolean;
  /** Collections to shard; others sync unsharded. May be empty. */
  shardingEntries: ShardingEntry[];
}

/** A validated start request with every default filled in. */
export interface StartRequest {
  source: ClusterName;
  destination: ClusterName;
  buildIndexes: BuildIndexes;
  /** Default false. */
  reversible: boolean;
  enableUserWriteBlocking: WriteBlocking;
  includeNamespaces?: NamespaceFilter[];
  excludeNamespaces?: NamespaceFilter[];
  /** Required for replica set → sharded cluster, refused otherwise (checked in preflight). */
  sharding?: ShardingConfig;
  /** Embedded verification; default enabled. */
  verification: { enabled: boolean };
}

/**
 * What each write-blocking mode blocks (`setUserWriteBlockMode`, MongoDB 6.0+), as mongosync's
 * `enableUserWriteBlocking` defines it:
 * - `destinationOnly` (default) and `sourceAndDestination`: the destination is blocked for the
 *   whole sync (from start until the commit completes), so no application writes there early;
 * - `sourceAndDestination`: the source is blocked too when commit is received, so no write can
 *   come after the commit point (it stays blocked after commit: the application has moved);
 * - `none`: nothing is blocked.
 */
export function blocksDestination(mode: WriteBlocking): boolean {
  return mode !== 'none';
}

/** Whether a mode blocks the source once commit is received (see `blocksDestination`). */
export function blocksSource(mode: WriteBlocking): boolean {
  return mode === 'sourceAndDestination';
}

/**
 * The request of the sync that runs the other way once `request`'s sync is reversed: the same
 * options, source and destination swapped (`reverse` needs a reversible sync, which has neither
 * filters nor `sharding`, so nothing else depends on the direction).
 */
export function reversedRequest(request: StartRequest): StartRequest {
  return { ...request, source: request.destination, destination: request.source };
}

/** The privileges on a cluster that write blocking needs of Ferry's user there (the built-in restore or root role has both). */
export const WRITE_BLOCKING_PRIVILEGES = ['bypassWriteBlockingMode', 'setUserWriteBlockMode'] as const;
