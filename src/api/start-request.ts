/**
 * Turning a `POST /api/v1/start` body into a StartRequest (src/domain/start-request.ts): the
 * rules between fields that a JSON schema cannot state. The schema itself (types, allowed values,
 * unknown fields) is in schemas.ts and runs first.
 */
import { CLUSTER_NAMES, type ClusterName } from '../domain/clusters.js';
import {
  BUILD_INDEXES,
  type BuildIndexes,
  type NamespaceFilter,
  type NaturalOrderEntry,
  type ShardingConfig,
  type ShardingEntry,
  type StartRequest,
  type WriteBlocking,
} from '../domain/start-request.js';
import { createNamespaceSelector } from '../plan/namespaces.js';
import { InvalidNamespaceFilter, InvalidRequest } from '../errors/errors.js';

/** The body as the schema guarantees it; rules below check the rest. */
export interface StartBody {
  source: string;
  destination: string;
  buildIndexes?: BuildIndexes;
  reversible?: boolean;
  enableUserWriteBlocking?: boolean | WriteBlocking;
  includeNamespaces?: NamespaceFilter[];
  excludeNamespaces?: NamespaceFilter[];
  sharding?: { createSupportingIndexes?: boolean; shardingEntries: ShardingEntry[] };
  verification?: { enabled?: boolean };
  detectRandomId?: boolean;
  copyInNaturalOrder?: NaturalOrderEntry[];
  preExistingDestinationData?: boolean;
  skipDiskSpaceCheck?: boolean;
}

// mongod refuses these in database names (documented naming restrictions; the strictest, Windows', set).
const FORBIDDEN_IN_DATABASE = /[/\\. "$*<>:|?\0]/;

function checkDatabaseName(name: string, where: string): void {
  if (FORBIDDEN_IN_DATABASE.test(name)) {
    throw new InvalidRequest(`${where}: "${name}" is not a valid database name (it may not contain /\\. "$*<>:|? or NUL)`);
  }
}

function checkCollectionName(name: string, where: string): void {
  if (name.includes('$') || name.includes('\0')) {
    throw new InvalidRequest(`${where}: "${name}" is not a valid collection name (it may not contain $ or NUL)`);
  }
}

/**
 * Checks the names in filter entries, then lets the namespace selector compile the entries (it
 * refuses an entry naming no database and a regular expression it cannot run), so that what
 * passes here is exactly what the sync will be able to match on.
 */
function checkFilters(request: StartRequest): void {
  for (const field of ['includeNamespaces', 'excludeNamespaces'] as const) {
    request[field]?.forEach((entry, index) => {
      const where = `${field}[${index}]`;
      if (entry.database !== undefined) checkDatabaseName(entry.database, `${where}.database`);
      entry.collections?.forEach((name, i) => checkCollectionName(name, `${where}.collections[${i}]`));
    });
  }
  try {
    createNamespaceSelector(request.includeNamespaces, request.excludeNamespaces);
  } catch (error) {
    if (error instanceof InvalidNamespaceFilter) throw new InvalidRequest(error.message);
    throw error;
  }
}

function checkSharding(sharding: NonNullable<StartBody['sharding']>): ShardingConfig {
  const seen = new Set<string>();
  sharding.shardingEntries.forEach((entry, index) => {
    const where = `sharding.shardingEntries[${index}]`;
    checkDatabaseName(entry.database, `${where}.database`);
    checkCollectionName(entry.collection, `${where}.collection`);
    const namespace = `${entry.database}.${entry.collection}`;
    if (seen.has(namespace)) throw new InvalidRequest(`${where}: ${namespace} is listed twice`);
    seen.add(namespace);
    const fields = new Set<string>();
    const hashed = entry.shardCollection.key.filter((part) => Object.values(part)[0] === 'hashed').length;
    if (hashed > 1)
      throw new InvalidRequest(`${where}.shardCollection.key: at most one field can be hashed (mongod's rule), found ${hashed}`);
    entry.shardCollection.key.forEach((part, i) => {
      const [field] = Object.keys(part);
      if (field === undefined || field.startsWith('$')) {
        throw new InvalidRequest(`${where}.shardCollection.key[${i}]: "${field}" is not a valid shard key field`);
      }
      if (fields.has(field)) throw new InvalidRequest(`${where}.shardCollection.key[${i}]: field "${field}" repeats`);
      fields.add(field);
    });
  });
  return {
    createSupportingIndexes: sharding.createSupportingIndexes ?? false,
    shardingEntries: sharding.shardingEntries.map((entry) => structuredClone(entry)),
  };
}

function writeBlocking(value: StartBody['enableUserWriteBlocking']): WriteBlocking {
  if (value === true) return 'sourceAndDestination';
  if (value === false) return 'none';
  return value ?? 'destinationOnly';
}

/**
 * Applies the rules between fields to a body that passed the schema and returns the normalized
 * request. Throws InvalidRequest naming the first problem. Rules that need the clusters
 * (sharding versus topology, empty destination) belong to preflight.
 */
export function checkStartRequest(body: StartBody): StartRequest {
  for (const field of ['source', 'destination'] as const) {
    if (!CLUSTER_NAMES.includes(body[field] as ClusterName)) {
      throw new InvalidRequest(`${field}: "${body[field]}" is not a configured cluster (use ${CLUSTER_NAMES.join(' or ')})`);
    }
  }
  if (body.source === body.destination) {
    throw new InvalidRequest(`source and destination must be different clusters (both are "${body.source}")`);
  }
  const request: StartRequest = {
    source: body.source as ClusterName,
    destination: body.destination as ClusterName,
    buildIndexes: body.buildIndexes ?? BUILD_INDEXES[0],
    reversible: body.reversible ?? false,
    enableUserWriteBlocking: writeBlocking(body.enableUserWriteBlocking),
    verification: { enabled: body.verification?.enabled ?? true },
    detectRandomId: body.detectRandomId ?? true,
    preExistingDestinationData: body.preExistingDestinationData ?? false,
    skipDiskSpaceCheck: body.skipDiskSpaceCheck ?? false,
  };
  if (body.copyInNaturalOrder !== undefined) {
    body.copyInNaturalOrder.forEach((entry, index) => {
      const where = `copyInNaturalOrder[${index}]`;
      if (entry.database !== '.') checkDatabaseName(entry.database, `${where}.database`);
      entry.collections?.forEach((coll, i) => checkCollectionName(coll, `${where}.collections[${i}]`));
    });
    request.copyInNaturalOrder = structuredClone(body.copyInNaturalOrder);
  }
  if (request.preExistingDestinationData) {
    // mongosync's rules for a destination holding other data.
    if (body.includeNamespaces === undefined && body.excludeNamespaces === undefined) {
      throw new InvalidRequest(
        'preExistingDestinationData: a destination with data of its own needs a namespace filter (includeNamespaces or excludeNamespaces)',
      );
    }
    if (request.reversible)
      throw new InvalidRequest('preExistingDestinationData: a sync into a destination with data of its own cannot be reversible');
    if (body.enableUserWriteBlocking !== undefined && request.enableUserWriteBlocking !== 'none') {
      throw new InvalidRequest(
        'preExistingDestinationData: write blocking is cluster-wide and would block the applications already using the destination; ' +
          'leave enableUserWriteBlocking out (or "none") and stop writes yourself at cut-over',
      );
    }
    request.enableUserWriteBlocking = 'none';
  }
  if (body.includeNamespaces !== undefined) request.includeNamespaces = structuredClone(body.includeNamespaces);
  if (body.excludeNamespaces !== undefined) request.excludeNamespaces = structuredClone(body.excludeNamespaces);
  checkFilters(request);
  if (body.sharding !== undefined) request.sharding = checkSharding(body.sharding);

  if (request.reversible) {
    if (request.includeNamespaces !== undefined || request.excludeNamespaces !== undefined) {
      throw new InvalidRequest('reversible: a reversible sync cannot be filtered (remove includeNamespaces/excludeNamespaces)');
    }
    if (request.buildIndexes === 'never') {
      throw new InvalidRequest('reversible: a reversible sync needs indexes on the destination (buildIndexes "never" is not allowed)');
    }
    if (request.enableUserWriteBlocking !== 'sourceAndDestination') {
      throw new InvalidRequest(
        'reversible: reversing needs write blocking on both clusters (set enableUserWriteBlocking to true or "sourceAndDestination")',
      );
    }
  }
  return request;
}
