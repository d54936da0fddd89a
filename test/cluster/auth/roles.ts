/**
 * mongod's built-in roles as privileges: sets of actions on resources, per the "Built-In
 * Roles" reference. A database-scoped role (read, readWrite, dbAdmin, userAdmin, dbOwner)
 * applies to the database it is granted on; the others exist only on `admin`.
 * `bypassWriteBlockingMode` is held by `restore` (hence `root`), `setUserWriteBlockMode` by
 * `backup` and `restore` (hence `root`), as in mongod 6.0+.
 */

/**
 * What a privilege applies to: a collection of a database, every non-system collection of a
 * database (`collection: ''`), of every database (`db: ''`), the cluster, or any resource.
 */
export type ResourcePattern = { db: string; collection: string } | { cluster: true } | { anyResource: true };

export interface Privilege {
  resource: ResourcePattern;
  actions: readonly string[];
}

export interface RoleName {
  role: string;
  db: string;
}

const READ = [
  'changeStream',
  'collStats',
  'dbHash',
  'dbStats',
  'find',
  'killCursors',
  'listCollections',
  'listIndexes',
  'listSearchIndexes',
];
const READ_WRITE = [
  ...READ,
  'convertToCapped',
  'createCollection',
  'createIndex',
  'createSearchIndexes',
  'dropCollection',
  'dropIndex',
  'dropSearchIndex',
  'insert',
  'remove',
  'renameCollectionSameDB',
  'update',
  'updateSearchIndex',
];
const DB_ADMIN = [
  'bypassDocumentValidation',
  'collMod',
  'collStats',
  'compact',
  'convertToCapped',
  'createCollection',
  'createIndex',
  'createSearchIndexes',
  'dbStats',
  'dropCollection',
  'dropDatabase',
  'dropIndex',
  'dropSearchIndex',
  'enableProfiler',
  'listCollections',
  'listIndexes',
  'listSearchIndexes',
  'planCacheIndexFilter',
  'planCacheRead',
  'planCacheWrite',
  'reIndex',
  'renameCollectionSameDB',
  'updateSearchIndex',
  'validate',
];
const USER_ADMIN = [
  'changeCustomData',
  'changePassword',
  'createRole',
  'createUser',
  'dropRole',
  'dropUser',
  'grantRole',
  'revokeRole',
  'setAuthenticationRestriction',
  'viewRole',
  'viewUser',
];
const CLUSTER_MONITOR = [
  'connPoolStats',
  'getCmdLineOpts',
  'getDefaultRWConcern',
  'getLog',
  'getParameter',
  'getShardMap',
  'hostInfo',
  'inprog',
  'listClusterCatalog',
  'listDatabases',
  'listSessions',
  'listShards',
  'replSetGetConfig',
  'replSetGetStatus',
  'serverStatus',
  'shardingState',
  'top',
];
const CLUSTER_MANAGER = [
  'addShard',
  'appendOplogNote',
  'applicationMessage',
  'checkMetadataConsistency',
  'cleanupOrphaned',
  'flushRouterConfig',
  'getClusterParameter',
  'getDefaultRWConcern',
  'listSessions',
  'listShards',
  'removeShard',
  'replSetConfigure',
  'replSetGetConfig',
  'replSetGetStatus',
  'replSetStateChange',
  'resync',
  'setClusterParameter',
  'setDefaultRWConcern',
  'setFeatureCompatibilityVersion',
];
const HOST_MANAGER = [
  'applicationMessage',
  'closeAllDatabases',
  'compact',
  'connPoolSync',
  'flushRouterConfig',
  'fsync',
  'invalidateUserCache',
  'killAnyCursor',
  'killAnySession',
  'killop',
  'logRotate',
  'oidReset',
  'resync',
  'rotateCertificates',
  'setParameter',
  'shutdown',
  'touch',
  'unlock',
];
const RESTORE_COLLECTIONS = [
  'bypassDocumentValidation',
  'changeCustomData',
  'changePassword',
  'collMod',
  'convertToCapped',
  'createCollection',
  'createIndex',
  'createRole',
  'createSearchIndexes',
  'createUser',
  'dropCollection',
  'dropRole',
  'dropUser',
  'grantRole',
  'insert',
  'revokeRole',
  'updateSearchIndex',
  'viewRole',
  'viewUser',
];

const db = (name: string, actions: readonly string[]): Privilege => ({ resource: { db: name, collection: '' }, actions });
const coll = (dbName: string, collection: string, actions: readonly string[]): Privilege => ({
  resource: { db: dbName, collection },
  actions,
});
const cluster = (actions: readonly string[]): Privilege => ({ resource: { cluster: true }, actions });
const anyResource = (actions: readonly string[]): Privilege => ({ resource: { anyResource: true }, actions });

/** Built-in roles granted on any database. */
const DATABASE_ROLES: Record<string, (d: string) => Privilege[]> = {
  read: (d) => [db(d, READ), coll(d, 'system.js', READ)],
  readWrite: (d) => [db(d, READ_WRITE), coll(d, 'system.js', READ_WRITE)],
  dbAdmin: (d) => [
    db(d, DB_ADMIN),
    coll(d, 'system.profile', [
      'changeStream',
      'collStats',
      'convertToCapped',
      'createCollection',
      'dbHash',
      'dbStats',
      'dropCollection',
      'find',
      'killCursors',
      'listCollections',
      'listIndexes',
      'planCacheRead',
    ]),
  ],
  userAdmin: (d) => [db(d, USER_ADMIN)],
  dbOwner: (d) => [...DATABASE_ROLES.readWrite(d), ...DATABASE_ROLES.dbAdmin(d), ...DATABASE_ROLES.userAdmin(d)],
};

/** Built-in roles that exist only on `admin`. */
const ADMIN_ROLES: Record<string, () => Privilege[]> = {
  readAnyDatabase: () => [db('', READ), cluster(['listDatabases'])],
  readWriteAnyDatabase: () => [db('', READ_WRITE), cluster(['listDatabases'])],
  userAdminAnyDatabase: () => [
    db('', USER_ADMIN),
    cluster(['authSchemaUpgrade', 'invalidateUserCache', 'listDatabases']),
    coll('admin', 'system.users', ['collStats', 'createIndex', 'dbHash', 'dbStats', 'dropIndex', 'find', 'killCursors', 'planCacheRead']),
  ],
  dbAdminAnyDatabase: () => [db('', DB_ADMIN), cluster(['listDatabases', 'applyOps'])],
  clusterMonitor: () => [
    cluster(CLUSTER_MONITOR),
    db('', ['collStats', 'dbStats', 'indexStats', 'useUUID']),
    db('config', [
      'collStats',
      'dbHash',
      'dbStats',
      'find',
      'indexStats',
      'killCursors',
      'listCollections',
      'listIndexes',
      'planCacheRead',
    ]),
    db('local', ['collStats', 'dbHash', 'dbStats', 'find', 'indexStats', 'killCursors', 'listCollections', 'listIndexes', 'planCacheRead']),
    coll('local', 'system.replset', ['find']),
  ],
  clusterManager: () => [
    cluster(CLUSTER_MANAGER),
    db('', [
      'analyzeShardKey',
      'clearJumboFlag',
      'configureQueryAnalyzer',
      'enableSharding',
      'moveChunk',
      'refineCollectionShardKey',
      'reshardCollection',
    ]),
    db('config', [
      'collStats',
      'dbHash',
      'dbStats',
      'enableSharding',
      'find',
      'insert',
      'killCursors',
      'listCollections',
      'listIndexes',
      'moveChunk',
      'planCacheRead',
      'remove',
      'update',
    ]),
    db('local', ['enableSharding', 'insert', 'moveChunk', 'remove', 'update']),
    coll('local', 'system.replset', READ),
  ],
  hostManager: () => [cluster(HOST_MANAGER), db('', ['killCursors'])],
  clusterAdmin: () => [
    ...ADMIN_ROLES.clusterManager(),
    ...ADMIN_ROLES.clusterMonitor(),
    ...ADMIN_ROLES.hostManager(),
    db('', ['dropDatabase']),
  ],
  backup: () => [
    cluster(['appendOplogNote', 'getParameter', 'listDatabases', 'serverStatus', 'setUserWriteBlockMode']),
    anyResource(['listDatabases', 'listCollections', 'listIndexes', 'listSearchIndexes']),
    db('', ['find']),
    db('config', ['find']),
    db('local', ['find']),
    coll('admin', 'system.users', ['find']),
    coll('admin', 'system.version', ['find']),
    coll('config', 'settings', ['find', 'insert', 'update']),
  ],
  restore: () => [
    cluster(['getParameter', 'bypassWriteBlockingMode', 'setUserWriteBlockMode']),
    db('', RESTORE_COLLECTIONS),
    anyResource(['listCollections']),
    db('config', RESTORE_COLLECTIONS),
    db('local', RESTORE_COLLECTIONS),
    coll('admin', 'system.version', [
      'bypassDocumentValidation',
      'collMod',
      'createCollection',
      'createIndex',
      'dropCollection',
      'find',
      'insert',
    ]),
    coll('admin', 'system.users', [
      'bypassDocumentValidation',
      'collMod',
      'createCollection',
      'createIndex',
      'dropCollection',
      'find',
      'insert',
      'remove',
      'update',
    ]),
  ],
  root: () => [
    ...ADMIN_ROLES.readWriteAnyDatabase(),
    ...ADMIN_ROLES.dbAdminAnyDatabase(),
    ...ADMIN_ROLES.userAdminAnyDatabase(),
    ...ADMIN_ROLES.clusterAdmin(),
    ...ADMIN_ROLES.restore(),
    ...ADMIN_ROLES.backup(),
    coll('config', 'system.preimages', ['find', 'remove']),
  ],
  __system: () => [anyResource(['anyAction'])],
};

/** True when `role` names a built-in role that exists on database `dbName`. */
export function isBuiltinRole(role: RoleName): boolean {
  return role.role in DATABASE_ROLES || (role.db === 'admin' && role.role in ADMIN_ROLES);
}

/** The privileges a built-in role grants. */
export function privilegesOf(role: RoleName): Privilege[] {
  const perDb = DATABASE_ROLES[role.role];
  if (perDb) return perDb(role.db);
  const admin = role.db === 'admin' ? ADMIN_ROLES[role.role] : undefined;
  return admin ? admin() : [];
}

/** A resource a command needs an action on. */
export type Resource = { db: string; collection: string } | { cluster: true };

/**
 * Collections a database pattern does not cover. Time-series buckets are not among them: since 5.0
 * every built-in role that acts on a database's collections grants the same on its
 * `system.buckets.*` (ResourcePattern::forAnySystemBucketsInDatabase in builtin_roles.cpp).
 */
function isSystem(collection: string): boolean {
  return (collection.startsWith('system.') && !collection.startsWith('system.buckets.')) || collection.startsWith('replset.');
}

/** mongod's ResourcePattern matching. */
function covers(pattern: ResourcePattern, resource: Resource): boolean {
  if ('anyResource' in pattern) return true;
  if ('cluster' in pattern) return 'cluster' in resource;
  if ('cluster' in resource) return false;
  if (pattern.collection === '') {
    // A database pattern covers the database itself and its non-system collections.
    if (resource.collection !== '' && isSystem(resource.collection)) return false;
    // "Any database" means every database but local and config (granted separately where needed).
    if (pattern.db === '') return resource.db !== 'local' && resource.db !== 'config';
    return pattern.db === resource.db;
  }
  return (pattern.db === '' || pattern.db === resource.db) && pattern.collection === resource.collection;
}

/** Whether a set of privileges allows `action` on `resource`. */
export function allows(privileges: readonly Privilege[], action: string, resource: Resource): boolean {
  return privileges.some((p) => (p.actions.includes(action) || p.actions.includes('anyAction')) && covers(p.resource, resource));
}
