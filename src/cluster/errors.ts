/**
 * What a cluster's failures mean: the server's error codes Ferry decides on, named once, and the
 * predicates built on them; and `asClusterError`, which turns a failure into the error the API
 * reports. Codes and names are mongod's (src/mongo/base/error_codes.yml); a type-faithful read
 * gives a code as an Int32, so codes are compared as numbers.
 */
import {
  MongoError,
  MongoNetworkError,
  MongoNetworkTimeoutError,
  MongoServerError,
  MongoServerSelectionError,
  MongoTopologyClosedError,
} from 'mongodb';
import { nameCluster, type ClusterEndpoint } from '../domain/clusters.js';
import { AuthenticationFailed, ClusterCommandFailed, ClusterUnreachable, FerryError, InternalError } from '../errors/errors.js';

/** The server error codes Ferry decides on. */
export const SERVER_CODES = Object.freeze({
  HostUnreachable: 6,
  AuthenticationFailed: 18,
  HostNotFound: 7,
  NamespaceNotFound: 26,
  IndexNotFound: 27,
  CursorNotFound: 43,
  NamespaceExists: 48,
  WriteConcernFailed: 64,
  IndexOptionsConflict: 85,
  IndexKeySpecsConflict: 86,
  NetworkTimeout: 89,
  ShutdownInProgress: 91,
  ReadConcernMajorityNotAvailableYet: 134,
  CannotIndexParallelArrays: 171,
  QueryPlanKilled: 175,
  PrimarySteppedDown: 189,
  ExceededTimeLimit: 262,
  ChangeStreamHistoryLost: 286,
  UserWritesBlocked: 371,
  SocketException: 9001,
  NotWritablePrimary: 10107,
  DuplicateKey: 11000,
  InterruptedAtShutdown: 11600,
  InterruptedDueToReplStateChange: 11602,
  NotPrimaryNoSecondaryOk: 13435,
  NotPrimaryOrSecondary: 13436,
  /** mongod's "Can't extract geo keys" (a 2dsphere index meeting a value that is no valid geometry). */
  GeoKeysNotExtracted: 16755,
});

/**
 * Passing conditions of a cluster, worth retrying: the retryable-error list of MongoDB's Retryable
 * Writes specification (the "not writable primary" and "node is recovering" codes of SDAM, plus
 * HostNotFound, HostUnreachable, NetworkTimeout, SocketException, ExceededTimeLimit,
 * ReadConcernMajorityNotAvailableYet), with CursorNotFound for a read cursor the server closed and
 * QueryPlanKilled for a read cursor whose collection was dropped or renamed under it: since mongod
 * 4.1.7 (SERVER-37451) a drop or rename of the collection (also dropDatabase, or a cross-database
 * rename, which drops the source) fails the open cursor's next getMore with it. Not a refusal: the
 * read restarts and finds the collection as it now is (gone: an empty read ends the partition, and
 * change-event application replays the drop or rename), as mongod's own initial-sync
 * CollectionCloner ends a collection's clone on that code. And WriteConcernFailed: a write
 * applied on the primary that a majority did not acknowledge in time; every write Ferry makes is
 * idempotent, and sent again it waits for the majority again.
 */
const TRANSIENT_CODES: ReadonlySet<number> = new Set([
  SERVER_CODES.WriteConcernFailed,
  SERVER_CODES.HostUnreachable,
  SERVER_CODES.HostNotFound,
  SERVER_CODES.CursorNotFound,
  SERVER_CODES.NetworkTimeout,
  SERVER_CODES.ShutdownInProgress,
  SERVER_CODES.ReadConcernMajorityNotAvailableYet,
  SERVER_CODES.QueryPlanKilled,
  SERVER_CODES.PrimarySteppedDown,
  SERVER_CODES.ExceededTimeLimit,
  SERVER_CODES.SocketException,
  SERVER_CODES.NotWritablePrimary,
  SERVER_CODES.InterruptedAtShutdown,
  SERVER_CODES.InterruptedDueToReplStateChange,
  SERVER_CODES.NotPrimaryNoSecondaryOk,
  SERVER_CODES.NotPrimaryOrSecondary,
]);

/** The server's numeric code of a failure: a driver error's `code`, or a FerryError's `serverCode`. */
export function serverCodeOf(error: unknown): number | undefined {
  if (error instanceof FerryError) return error.serverCode;
  const code = (error as { code?: unknown } | null)?.code;
  if (code === undefined || code === null || typeof code === 'string') return undefined;
  const number = Number(code);
  return Number.isFinite(number) ? number : undefined;
}

function hasCode(error: unknown, code: number): boolean {
  return serverCodeOf(error) === code;
}

export const isDuplicateKey = (error: unknown): boolean => hasCode(error, SERVER_CODES.DuplicateKey);
export const isNamespaceNotFound = (error: unknown): boolean => hasCode(error, SERVER_CODES.NamespaceNotFound);
export const isIndexNotFound = (error: unknown): boolean => hasCode(error, SERVER_CODES.IndexNotFound);
export const isNamespaceExists = (error: unknown): boolean => hasCode(error, SERVER_CODES.NamespaceExists);
export const isWriteConcernFailed = (error: unknown): boolean => hasCode(error, SERVER_CODES.WriteConcernFailed);

/** An index with the same key and options exists under another name. */
export const isIndexOptionsConflict = (error: unknown): boolean => hasCode(error, SERVER_CODES.IndexOptionsConflict);

/** An index of that name exists with other options or another key. */
export function isIndexConflict(error: unknown): boolean {
  return hasCode(error, SERVER_CODES.IndexOptionsConflict) || hasCode(error, SERVER_CODES.IndexKeySpecsConflict);
}

/**
 * An index build refused because of what a document holds (two arrays under one compound index,
 * a value that is no geometry under a 2dsphere index), not because of the index: on a destination
 * still replaying change events, a shape the document may have only until its next event.
 */
export function isDocumentShapeIndexError(error: unknown): boolean {
  return hasCode(error, SERVER_CODES.CannotIndexParallelArrays) || hasCode(error, SERVER_CODES.GeoKeysNotExtracted);
}

/** The source's oplog no longer holds a change stream's resume point. */
export function isHistoryLost(error: unknown): boolean {
  return (
    hasCode(error, SERVER_CODES.ChangeStreamHistoryLost) || (error as { codeName?: unknown } | null)?.codeName === 'ChangeStreamHistoryLost'
  );
}

/** Whether a failure is a passing condition of the cluster (retry) rather than a refusal (fail). */
export function isTransient(error: unknown): boolean {
  if (error instanceof MongoNetworkError || error instanceof MongoServerSelectionError) return true;
  if (error instanceof MongoError && error.hasErrorLabel('RetryableWriteError')) return true;
  const code = serverCodeOf(error);
  return code !== undefined && TRANSIENT_CODES.has(code);
}

/** Whether a change stream may be reopened after this failure (the driver's label, or a transient failure). */
export function isResumableChangeStreamError(error: unknown): boolean {
  if (error instanceof MongoError && error.hasErrorLabel('ResumableChangeStreamError')) return true;
  return isTransient(error);
}

/** Whether a cluster answered with an error (as opposed to not being reached). */
export function isServerError(error: unknown): boolean {
  return error instanceof MongoServerError;
}

/** Whether the cluster could not be reached at all (as opposed to answering with an error). */
export function isUnreachable(error: unknown): boolean {
  return (
    error instanceof MongoNetworkError ||
    error instanceof MongoNetworkTimeoutError ||
    error instanceof MongoServerSelectionError ||
    error instanceof MongoTopologyClosedError
  );
}

/**
 * A failure of `operation` on `endpoint` as the API reports it: a FerryError as it is (e.g. a
 * reply without the time Ferry asked for); credentials the server refused as AuthenticationFailed
 * (whatever the operation: it is the first a wrong password meets); a server's refusal as ClusterCommandFailed (its code
 * kept as `serverCode`); a cluster that could not be reached as ClusterUnreachable; anything else
 * is a bug, InternalError.
 */
export function asClusterError(endpoint: ClusterEndpoint, operation: string, error: unknown): FerryError {
  if (error instanceof FerryError) return error;
  const cluster = nameCluster(endpoint);
  if (error instanceof MongoServerError && hasCode(error, SERVER_CODES.AuthenticationFailed)) {
    return new AuthenticationFailed({ cluster, reason: error.message }, { cause: error });
  }
  if (error instanceof MongoServerError) {
    const reason = `${error.codeName ?? error.code}: ${error.message}`;
    return new ClusterCommandFailed({ cluster, operation, reason }, { cause: error });
  }
  if (isUnreachable(error)) return new ClusterUnreachable({ cluster, operation, reason: (error as Error).message }, { cause: error });
  const message = error instanceof Error ? error.message : String(error);
  return new InternalError(`${operation} on ${cluster}: ${message}`, { cause: error });
}

/** Awaits `operation` on `endpoint`, its failure reported as the API reports a cluster's (`asClusterError`). */
export async function onCluster<T>(endpoint: ClusterEndpoint, what: string, operation: Promise<T>): Promise<T> {
  try {
    return await operation;
  } catch (error) {
    throw asClusterError(endpoint, what, error);
  }
}
