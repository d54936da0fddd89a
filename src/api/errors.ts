import { redactUris } from '../domain/credentials.js';
/**
 * Every failure Ferry reports over the control API. Each class has a stable PascalCase `error`
 * name (what scripts match on), a fixed HTTP status, and a human `errorDescription` (the message).
 * The README lists them all; keep that table in step with this file.
 *
 * mongosync documents the response shape `{success: false, error, errorDescription}` but only one
 * error name (`InsufficientDestinationDiskSpace`) and no HTTP statuses, so the rest are Ferry's.
 * Status families: 400 bad request content, 404 unknown endpoint, 409 not allowed in the current
 * state, 413 body too large, 422 the clusters cannot serve this request, 501 not in this build,
 * 502 a cluster could not be reached or answered with an error, 500 a bug in Ferry.
 */

/** The JSON body of every failed response. */
export interface ErrorResponse {
  success: false;
  error: string;
  errorDescription: string;
}

/** Base of all errors Ferry reports; never thrown itself. */
export abstract class FerryError extends Error {
  /** Stable name reported as `error`. */
  abstract readonly error: string;
  /** HTTP status of the response carrying this error. */
  abstract readonly status: number;

  constructor(description: string, options?: ErrorOptions) {
    // Descriptions may quote driver messages: never let a connection-string password through.
    super(redactUris(description), options);
    this.name = new.target.name;
  }

  toResponse(): ErrorResponse {
    return { success: false, error: this.error, errorDescription: this.message };
  }
}

/** The body is not a JSON object, fails the schema, or breaks a rule between fields. */
export class InvalidRequest extends FerryError {
  readonly error = 'InvalidRequest';
  readonly status = 400;
}

/** The body is larger than the API accepts. */
export class RequestTooLarge extends FerryError {
  readonly error = 'RequestTooLarge';
  readonly status = 413;
}

/** No endpoint with this method and path. */
export class NotFound extends FerryError {
  readonly error = 'NotFound';
  readonly status = 404;
}

/** The request is not allowed in the current state (e.g. `start` while RUNNING). */
export class InvalidStateTransition extends FerryError {
  readonly error = 'InvalidStateTransition';
  readonly status = 409;
}

/** `commit` while RUNNING but `canCommit` is false (copy not finished, or lag above the limit). */
export class NotReadyToCommit extends FerryError {
  readonly error = 'NotReadyToCommit';
  readonly status = 409;
}

/** `reverse` after a sync that was not started reversible with source-and-destination write blocking. */
export class NotReversible extends FerryError {
  readonly error = 'NotReversible';
  readonly status = 409;
}

/** A cluster did not answer within the time allowed (down, wrong address, firewall, TLS). */
export class ClusterUnreachable extends FerryError {
  readonly error = 'ClusterUnreachable';
  readonly status = 502;
}

/** A cluster answered a check with an error (e.g. not authorized). */
export class ClusterCommandFailed extends FerryError {
  readonly error = 'ClusterCommandFailed';
  readonly status = 502;
}

/** The source is a standalone server: change streams need a replica set or a sharded cluster. */
export class ChangeStreamsUnavailable extends FerryError {
  readonly error = 'ChangeStreamsUnavailable';
  readonly status = 422;
}

/** The pair of cluster kinds is not supported (standalone destination, sharded → replica set). */
export class UnsupportedTopology extends FerryError {
  readonly error = 'UnsupportedTopology';
  readonly status = 422;
}

/** Replica set → sharded cluster without `sharding`. */
export class ShardingRequired extends FerryError {
  readonly error = 'ShardingRequired';
  readonly status = 422;
}

/** `sharding` given when the destination is not a sharded cluster fed by a replica set. */
export class ShardingNotAllowed extends FerryError {
  readonly error = 'ShardingNotAllowed';
  readonly status = 422;
}

/** `reversible` with a replica set → sharded cluster sync. */
export class ReversibleNotSupported extends FerryError {
  readonly error = 'ReversibleNotSupported';
  readonly status = 422;
}

/** A namespace the request selects already holds documents on the destination. */
export class DestinationNotEmpty extends FerryError {
  readonly error = 'DestinationNotEmpty';
  readonly status = 422;
}

/** Ferry's user on a cluster lacks a privilege the request needs (e.g. to bypass write blocking). */
export class InsufficientPrivileges extends FerryError {
  readonly error = 'InsufficientPrivileges';
  readonly status = 422;
}

/** The request is valid but this build has no machinery to carry it out. */
export class NotImplemented extends FerryError {
  readonly error = 'NotImplemented';
  readonly status = 501;
}

/** A bug in Ferry: anything thrown that is not a FerryError. */
export class InternalError extends FerryError {
  readonly error = 'InternalError';
  readonly status = 500;
}

/** Turns anything thrown into a FerryError, keeping FerryErrors as they are. */
export function asFerryError(thrown: unknown): FerryError {
  if (thrown instanceof FerryError) return thrown;
  const message = thrown instanceof Error ? thrown.message : String(thrown);
  return new InternalError(`Unexpected error: ${message}`, { cause: thrown });
}
