/**
 * Every error Ferry can raise, API-facing or internal, in one table (like fastify's
 * lib/errors.js): a stable string `code` (what scripts and logs match on; the class of the same
 * name is in errors.ts), a message template whose `{placeholders}` the raiser fills in, the HTTP
 * status where the error reaches the control API, the process exit code where it ends startup,
 * and when it happens (the README's error tables are these rows; test/unit/readme-tables.test.ts
 * fails when they drift). A MongoDB server's own numeric code is never a `code`: an error caused
 * by a server error keeps that number apart, as `serverCode` (and `serverCodeName`).
 *
 * mongosync documents the response shape `{success: false, error, errorDescription}` but only one
 * error name (`InsufficientDestinationDiskSpace`) and no HTTP statuses, so the rest are Ferry's.
 * Status families: 400 bad request content, 404 unknown endpoint, 409 not allowed in the current
 * state, 413 body too large, 422 the clusters cannot serve this request, 501 not in this build,
 * 502 a cluster could not be reached or answered with an error, 500 a bug in Ferry. An error
 * without a status that reaches the API anyway is answered with 500 and its own code.
 *
 * Misuse of an internal interface (a bug, e.g. a batch completed twice) throws a RangeError or
 * TypeError; it reaches the API as InternalError.
 */

export interface ErrorSpec {
  /** The message, with `{name}` placeholders filled from the raiser's parameters. */
  readonly message: string;
  /** HTTP status of the response carrying it, for errors that reach the control API. */
  readonly status?: number;
  /** Process exit code, for errors that end Ferry at startup. */
  readonly exitCode?: number;
  /** When it happens, for people (the README's error tables). */
  readonly when: string;
  /**
   * The sync cannot continue after it (resuming would only fail again or build on a wrong
   * destination): the sync stops for good and `resume` is refused with SyncCannotContinue.
   */
  readonly final?: true;
}

export const ERROR_CATALOGUE = {
  // Errors of the control API (README "Errors").
  InvalidRequest: {
    status: 400,
    message: '{detail}',
    when: 'the body is not a JSON object, fails the schema, or breaks a rule between fields',
  },
  NotFound: { status: 404, message: '{detail}', when: 'no such endpoint (or wrong method)' },
  InvalidStateTransition: { status: 409, message: '{detail}', when: 'the request is not allowed in the current state' },
  NotReadyToCommit: { status: 409, message: '{detail}', when: '`commit` while RUNNING but `canCommit` is false' },
  NotReversible: {
    status: 409,
    message: '{detail}',
    when:
      '`reverse` after a sync not started `reversible` with write blocking on both clusters, ' +
      'or whose record of where the way back starts is gone from both clusters',
  },
  RequestTimeout: { status: 408, message: '{detail}', when: 'the request did not arrive whole in time' },
  RequestTooLarge: { status: 413, message: '{detail}', when: 'body over 1 MiB' },
  RequestHeadersTooLarge: {
    status: 431,
    message: '{detail}',
    when: "the request's headers are larger than the HTTP server accepts (16 KiB)",
  },
  SyncLeaseHeld: {
    status: 409,
    exitCode: 1,
    message: '{detail}',
    when: 'another live Ferry (named by host and pid) holds the lease of the sync with this `--id` on the destination',
  },
  OverlappingSync: {
    status: 409,
    message: '{detail}',
    when: 'another instance (another `--id`) syncs namespaces this request selects to the same destination, and has not committed',
  },
  SyncCannotContinue: {
    status: 409,
    message: '{detail}',
    when: '`resume` after the sync stopped on an error it cannot continue from (the description says what to do)',
  },
  SameCluster: {
    status: 422,
    message: '{detail}',
    when: 'source and destination are the same cluster (recognised by the cluster itself, not by the connection strings)',
  },
  ChangeStreamsUnavailable: { status: 422, message: '{detail}', when: 'the source is a standalone server' },
  UnsupportedTopology: { status: 422, message: '{detail}', when: 'the destination is a standalone server' },
  ReplicaSetOptionOnMongos: {
    status: 422,
    message: '{detail}',
    when: 'a connection string has the `replicaSet` option but leads to a mongos (remove the option for a sharded cluster)',
  },
  InstanceIdNotAllowed: {
    status: 422,
    message: '{detail}',
    when:
      'one instance syncs a sharded cluster with an `--id` other than the default (`coordinator`) or a shard ID of the source ' +
      '(`listShards`; the description names them), or a replica set source with the id of a source shard',
  },
  MismatchedCommand: {
    status: 409,
    message: '{detail}',
    when: 'instances of one migration (one per source shard) got different start requests (the description names them and the fields)',
  },
  BalancerRunning: {
    status: 422,
    message: '{detail}',
    when: 'the balancer runs on a sharded source or destination (the description names the command that stops it)',
  },
  ShardingRequired: { status: 422, message: '{detail}', when: 'replica set → sharded cluster without `sharding`' },
  ShardingNotAllowed: { status: 422, message: '{detail}', when: '`sharding` in any other configuration' },
  ShardingEntryInvalid: {
    status: 422,
    message: '{detail}',
    when: 'a `sharding` entry names a view, or a collection the namespace filters leave out',
  },
  ShardKeyIndexMissing: {
    status: 422,
    message: '{detail}',
    when:
      'with `createSupportingIndexes` false, no source index supports a shard key (or, on a collection with a ' +
      'collation, none with the simple collation)',
  },
  UniqueIndexIncompatible: {
    status: 422,
    message: '{detail}',
    when: 'a source unique index does not start with the shard key: a sharded destination refuses it',
  },
  ReversibleNotSupported: {
    status: 422,
    message: '{detail}',
    when:
      '`reversible` with replica set → sharded cluster, sharded clusters with different shard counts, ' +
      'different major versions, a cluster older than MongoDB 6.0, or several instances (one per source shard) ' +
      'to a destination that is not sharded',
  },
  ReverseHistoryLost: {
    status: 422,
    message: `{cluster}'s oplog no longer reaches back to {time}, when it became writable: the writes made there since the cut-over \
cannot be carried back, so this sync cannot be reversed. Nothing was changed (the sync stays COMMITTED); going back now takes a new \
sync from {cluster} into an empty cluster`,
    when: "`reverse` once the committed destination's oplog no longer holds the time it became writable",
  },
  DestinationNotEmpty: {
    status: 422,
    message: '{detail}',
    when:
      'the destination holds namespaces (without `preExistingDestinationData`: any; with it: a selected one), ' +
      'as mongosync refuses them (the description names them)',
  },
  InsufficientDestinationDiskSpace: {
    status: 422,
    message: '{detail}',
    when:
      "mongosync's: the destination's free disk space is less than the selected collections and their indexes take on " +
      'the source (`skipDiskSpaceCheck: true` skips the check)',
  },
  InsufficientPrivileges: {
    status: 422,
    message: '{detail}',
    when:
      "write blocking is asked for, but Ferry's user on that cluster cannot " +
      'bypass it (`bypassWriteBlockingMode`) or set it (`setUserWriteBlockMode`)',
  },
  OperationTimeMissing: {
    status: 422,
    message: '{cluster} answered appendOplogNote ({purpose}) without an operationTime; it must be a replica set or a sharded cluster',
    when: 'the source gave no time for the start or commit point (`appendOplogNote` without `operationTime`)',
  },
  InternalError: { status: 500, message: 'Unexpected error: {detail}', when: 'a bug in Ferry (logged with its stack)' },
  NotImplemented: { status: 501, message: '{detail}', when: 'this build cannot carry out the request (see above)' },
  ClusterUnreachable: {
    status: 502,
    message: '{cluster} could not be reached for {operation}: {reason}',
    when:
      "a cluster did not answer within 10 s, or its connection string's `serverSelectionTimeoutMS` / `connectTimeoutMS` " +
      '(network, server selection)',
  },
  AuthenticationFailed: {
    status: 502,
    message: "{cluster} refused Ferry's credentials ({reason}): check the user, password and authSource of its connection string",
    when: 'a cluster refused the user and password of its connection string',
  },
  ClusterCommandFailed: {
    status: 502,
    message: '{cluster} refused {operation}: {reason}',
    when: 'a cluster answered a command with an error (e.g. not authorized)',
  },

  // Ending startup (README "Startup errors and exit codes").
  InvalidConfiguration: {
    exitCode: 2,
    message: '{detail}',
    when: 'a flag, the config file, a `FERRY_*` variable, a connection string or `--logPath` is wrong',
  },

  // Internal: in the log, and in progress `warnings` when they stop the sync (README "Errors in warnings and logs").
  MalformedBson: { message: 'malformed BSON at byte {offset}: {detail}', when: 'bytes that should hold a BSON document do not' },
  MissingBsonField: {
    message: 'document has no "{field}" field',
    when: 'a document lacks a field Ferry decides on (`_id`, `operationType`)',
  },
  UnexpectedBsonType: { message: 'field "{field}" should be {expected}, found {actual}', when: 'such a field has another BSON type' },
  MalformedCursorReply: { message: '{detail}', when: 'a cursor or change-stream reply cannot be read' },
  InvalidNamespaceFilter: {
    message: '{detail}',
    when: 'a namespace filter names no database or has a regular expression that does not compile',
  },
  InvalidPartitionRequest: { message: '{detail}', when: 'collection statistics or sizes the partition planner cannot work with' },
  DestinationConflict: {
    message: '{detail}',
    when: 'the destination already holds a namespace Ferry must create, with other options than the source',
  },
  CopyWriteRefused: { message: '{detail}', when: 'the destination refused a copied document for another reason than a duplicate key' },
  PartitionCopyFailed: {
    message: 'copying partition {partition} of {ns} failed: {reason}',
    when: 'a partition failed on an error that is not transient',
  },
  ChangeStreamHistoryLost: {
    message: `The source's change stream history was lost ({reason}): the source's oplog no longer holds the changes since Ferry's \
resume point, so the destination can no longer be brought up to date: nothing was skipped, but this sync cannot continue. Start the \
migration again from the beginning (drop the destination data and Ferry's metadata database), after enlarging the source's oplog \
(replSetResizeOplog) so that it covers the whole initial copy plus any pause`,
    when: "the source's oplog no longer holds Ferry's resume point (server code 286); final",
    final: true,
  },
  UnexpectedChangeEvent: {
    message: '{detail}',
    when: 'the change stream reported what application cannot handle (an `invalidate`, a CRUD event without `_id`)',
  },
  DdlApplicationFailed: { message: '{detail}', when: 'a DDL event could not be applied to the destination' },
  ApplyWriteRefused: { message: '{detail}', when: 'the destination refused a change-event write' },
  TombstoneWriteRefused: { message: '{detail}', when: 'the destination refused a tombstone (a delete applied during the copy)' },
  UnsupportedRename: {
    message: '{detail}',
    when: 'a collection was renamed into another database during a replica set → sharded cluster sync (stopped before applying it)',
  },
  ApplicationStopped: {
    message: 'change-event application stopped before reaching the commit point',
    when: 'change-event application ended before the commit point (it is started again)',
  },
  MetadataMissing: {
    message: 'the {record} has disappeared from the metadata',
    when: "a record of Ferry's metadata database was removed under it",
  },
  CollectionReadInterrupted: {
    message: `The commit cannot complete: {ns} on the destination may not hold what the source holds. Ferry was reading it whole \
when the source renamed or dropped it after the commit point, so no change event up to the commit point settles it. Start the \
migration again, with no DDL on the source during the commit (or with write blocking on both clusters)`,
    when: 'the source renamed or dropped a collection after the commit point while Ferry read it whole (the commit waits, never completes)',
  },
  DestinationChanged: {
    message: `{detail}. The destination no longer holds what Ferry built, so this sync cannot continue and will not commit. To \
migrate, start again from the beginning: drop the synced namespaces and Ferry's metadata for this --id on the destination (or use \
another --id), and make sure nothing else writes to the destination or its metadata database during the sync`,
    when: 'something other than Ferry changed what it owns on the destination: its metadata, a synced collection (dropped, \
recreated, renamed), or the destination restarted empty; final',
    final: true,
  },
  LeaseLost: {
    message: '{detail}',
    when: 'another Ferry took over the lease of this sync (this instance stopped acting on it); final for this process',
    final: true,
  },
  CommitStopped: {
    message: 'the commit stopped before it completed ({detail})',
    when: 'Ferry was stopped while a commit waited; it finishes after a restart',
  },
} as const satisfies Record<string, ErrorSpec>;

export type ErrorCode = keyof typeof ERROR_CATALOGUE;

export const ERROR_CODES = Object.keys(ERROR_CATALOGUE) as ErrorCode[];
