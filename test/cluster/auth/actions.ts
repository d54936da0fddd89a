/**
 * The privileges each command needs, after mongod's `checkAuthForCommand` implementations:
 * an action on a collection, a database or the cluster. Commands not listed here need only an
 * authenticated user (sessions, transactions, cursors of one's own); see README.
 */
import type { Resource } from './roles.js';

export interface Requirement {
  action: string;
  resource: Resource;
}

function namespaceOf(db: string, value: unknown): Resource {
  return { db, collection: typeof value === 'string' ? value : '' };
}

function splitNamespace(ns: unknown): Resource {
  const s = typeof ns === 'string' ? ns : '';
  const dot = s.indexOf('.');
  return dot < 0 ? { db: s, collection: '' } : { db: s.slice(0, dot), collection: s.slice(dot + 1) };
}

const CLUSTER: Resource = { cluster: true };

/** The collection an `$out` or `$merge` stage writes to. */
function outputOf(db: string, stage: Record<string, unknown>): Resource | undefined {
  const spec =
    stage.$out ??
    (stage.$merge === undefined ? undefined : typeof stage.$merge === 'string' ? stage.$merge : (stage.$merge as { into?: unknown }).into);
  if (spec === undefined) return undefined;
  if (typeof spec === 'string') return { db, collection: spec };
  const target = spec as { db?: string; coll?: string };
  return { db: target.db ?? db, collection: target.coll ?? '' };
}

/** Commands that need one cluster-wide action named like the command. */
const CLUSTER_ACTIONS: Record<string, string> = {
  serverStatus: 'serverStatus',
  getParameter: 'getParameter',
  setParameter: 'setParameter',
  setUserWriteBlockMode: 'setUserWriteBlockMode',
  appendOplogNote: 'appendOplogNote',
  replSetGetStatus: 'replSetGetStatus',
  replSetGetConfig: 'replSetGetConfig',
  getCmdLineOpts: 'getCmdLineOpts',
  hostInfo: 'hostInfo',
  currentOp: 'inprog',
  killOp: 'killop',
  shutdown: 'shutdown',
  fsync: 'fsync',
  getLog: 'getLog',
  top: 'top',
  setFeatureCompatibilityVersion: 'setFeatureCompatibilityVersion',
};

function withBypass(requirements: Requirement[], body: Record<string, unknown>, resource: Resource): Requirement[] {
  if (body.bypassDocumentValidation === true) requirements.push({ action: 'bypassDocumentValidation', resource });
  return requirements;
}

function hasUpsert(statements: unknown): boolean {
  return Array.isArray(statements) && statements.some((s) => (s as { upsert?: unknown })?.upsert === true);
}

/**
 * What a command needs, or undefined when any authenticated user may run it.
 * `statements` gives the update statements when they came in a document sequence.
 */
export function requirementsOf(
  command: string,
  db: string,
  body: Record<string, unknown>,
  statements?: { upsert?: boolean }[],
): Requirement[] | undefined {
  const clusterAction = CLUSTER_ACTIONS[command];
  if (clusterAction) return [{ action: clusterAction, resource: CLUSTER }];
  const ns = namespaceOf(db, body[command]);
  const database: Resource = { db, collection: '' };
  switch (command) {
    case 'find':
    case 'count':
    case 'distinct':
      return [{ action: 'find', resource: ns }];
    case 'aggregate': {
      const pipeline = Array.isArray(body.pipeline) ? (body.pipeline as Record<string, unknown>[]) : [];
      const first = pipeline[0] ?? {};
      if ('$changeStream' in first) {
        const spec = (first.$changeStream ?? {}) as { allChangesForCluster?: boolean };
        const resource: Resource = spec.allChangesForCluster ? { db: '', collection: '' } : ns;
        return [
          { action: 'changeStream', resource },
          { action: 'find', resource },
        ];
      }
      if ('$collStats' in first) return [{ action: 'collStats', resource: ns }];
      const requirements: Requirement[] = [{ action: 'find', resource: ns }];
      for (const stage of pipeline) {
        const out = outputOf(db, stage);
        if (out) requirements.push({ action: 'insert', resource: out }, { action: 'remove', resource: out });
      }
      return withBypass(requirements, body, ns);
    }
    case 'insert':
      return withBypass([{ action: 'insert', resource: ns }], body, ns);
    case 'update': {
      const requirements: Requirement[] = [{ action: 'update', resource: ns }];
      if (hasUpsert(statements ?? body.updates)) requirements.push({ action: 'insert', resource: ns });
      return withBypass(requirements, body, ns);
    }
    case 'delete':
      return [{ action: 'remove', resource: ns }];
    case 'findAndModify':
    case 'findandmodify': {
      const requirements: Requirement[] = [
        { action: 'find', resource: ns },
        { action: body.remove ? 'remove' : 'update', resource: ns },
      ];
      if (body.upsert) requirements.push({ action: 'insert', resource: ns });
      return withBypass(requirements, body, ns);
    }
    case 'create':
      return [{ action: 'createCollection', resource: ns }];
    case 'drop':
      return [{ action: 'dropCollection', resource: ns }];
    case 'dropDatabase':
      return [{ action: 'dropDatabase', resource: database }];
    case 'listCollections':
      return [{ action: 'listCollections', resource: database }];
    case 'listIndexes':
      return [{ action: 'listIndexes', resource: ns }];
    case 'createIndexes':
      return [{ action: 'createIndex', resource: ns }];
    case 'dropIndexes':
    case 'deleteIndexes':
      return [{ action: 'dropIndex', resource: ns }];
    case 'collMod':
      return [{ action: 'collMod', resource: ns }];
    case 'collStats':
      return [{ action: 'collStats', resource: ns }];
    case 'dbStats':
    case 'dbstats':
      return [{ action: 'dbStats', resource: database }];
    case 'renameCollection': {
      const source = splitNamespace(body.renameCollection);
      const target = splitNamespace(body.to);
      if ('db' in source && 'db' in target && source.db === target.db) {
        return [{ action: 'renameCollectionSameDB', resource: { db: source.db, collection: '' } }];
      }
      const requirements: Requirement[] = [
        { action: 'find', resource: source },
        { action: 'dropCollection', resource: source },
        { action: 'insert', resource: target },
        { action: 'createIndex', resource: target },
      ];
      if (body.dropTarget) requirements.push({ action: 'dropCollection', resource: target });
      return requirements;
    }
    case 'createUser':
      return [{ action: 'createUser', resource: database }];
    case 'dropUser':
      return [{ action: 'dropUser', resource: database }];
    case 'usersInfo':
      return [{ action: 'viewUser', resource: database }];
    default:
      return undefined;
  }
}
