/**
 * mongod's IDL parsers reject fields a command does not define: `BSON field 'find.foo' is an
 * unknown field.` (IDLUnknownField, 40415). The commands below are checked that way before they
 * run; generic arguments (session, read/write concern, API version, `$`-prefixed metadata...)
 * are accepted everywhere.
 */
import { ServerError } from '../errors.js';

/** Arguments any command accepts (mongod's generic_arguments.idl). */
const GENERIC = new Set([
  'apiVersion',
  'apiStrict',
  'apiDeprecationErrors',
  'maxTimeMS',
  'readConcern',
  'writeConcern',
  'lsid',
  'clientOperationKey',
  'txnNumber',
  'autocommit',
  'startTransaction',
  'stmtId',
  'comment',
  'databaseVersion',
  'shardVersion',
  'tracking_info',
  'coordinator',
  'maxTimeMSOpOnly',
  'usesDefaultMaxTimeMS',
  'txnRetryCounter',
  'mayBypassWriteBlocking',
  'expectPrefix',
  'requestGossipRoutingCache',
  'startOrContinueTransaction',
  'rawData',
  'versionContext',
  'readPreference',
]);

const WRITE_BASE = [
  'bypassDocumentValidation',
  'ordered',
  'stmtIds',
  'isTimeseriesNamespace',
  'collectionUUID',
  'encryptionInformation',
  'let',
];

/** Commands parsed strictly, with the fields each defines. */
const FIELDS: Record<string, Set<string>> = {
  find: new Set([
    'find',
    'filter',
    'projection',
    'sort',
    'hint',
    'skip',
    'limit',
    'batchSize',
    'singleBatch',
    'max',
    'min',
    'returnKey',
    'showRecordId',
    'tailable',
    'oplogReplay',
    'noCursorTimeout',
    'awaitData',
    'allowPartialResults',
    'collation',
    'allowDiskUse',
    'let',
    'readOnce',
    'allowSpeculativeMajorityRead',
    'term',
    'includeQueryStatsMetrics',
    'encryptionInformation',
    'collectionUUID',
    'isSearchQuery',
  ]),
  aggregate: new Set([
    'aggregate',
    'pipeline',
    'explain',
    'allowDiskUse',
    'cursor',
    'bypassDocumentValidation',
    'collation',
    'hint',
    'let',
    'needsMerge',
    'fromMongos',
    'fromRouter',
    'isMapReduceCommand',
    'collectionUUID',
    'exchange',
    'runtimeConstants',
    'passthroughToShard',
    'encryptionInformation',
    'includeQueryStatsMetrics',
    'isClusterQueryWithoutShardKeyCmd',
    'isHybridSearch',
  ]),
  insert: new Set(['insert', 'documents', ...WRITE_BASE.filter((f) => f !== 'let')]),
  update: new Set(['update', 'updates', ...WRITE_BASE]),
  delete: new Set(['delete', 'deletes', ...WRITE_BASE]),
  create: new Set([
    'create',
    'capped',
    'autoIndexId',
    'idIndex',
    'size',
    'max',
    'storageEngine',
    'validator',
    'validationLevel',
    'validationAction',
    'indexOptionDefaults',
    'viewOn',
    'pipeline',
    'collation',
    'changeStreamPreAndPostImages',
    'timeseries',
    'clusteredIndex',
    'recordIdsReplicated',
    'expireAfterSeconds',
    'encryptedFields',
    'temp',
    'flags',
  ]),
  collMod: new Set([
    'collMod',
    'index',
    'validator',
    'validationLevel',
    'validationAction',
    'viewOn',
    'pipeline',
    'recordPreImages',
    'changeStreamPreAndPostImages',
    'expireAfterSeconds',
    'timeseries',
    'timeseriesBucketsMayHaveMixedSchemaData',
    'dryRun',
    'cappedSize',
    'cappedMax',
    'collectionUUID',
  ]),
  renameCollection: new Set(['renameCollection', 'to', 'dropTarget', 'stayTemp', 'collectionUUID', 'targetCollectionUUID']),
  setUserWriteBlockMode: new Set(['setUserWriteBlockMode', 'global']),
};

/** Throws mongod's IDLUnknownField error for the first field `command` does not define. */
export function checkKnownFields(command: string, body: Record<string, unknown>): void {
  const fields = FIELDS[command];
  if (!fields) return;
  for (const field of Object.keys(body)) {
    if (fields.has(field) || GENERIC.has(field) || field.startsWith('$')) continue;
    throw new ServerError('IDLUnknownField', `BSON field '${command}.${field}' is an unknown field.`);
  }
}
