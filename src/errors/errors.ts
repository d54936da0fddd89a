/**
 * The error classes of the catalogue (catalogue.ts): one per code, named after it, each a
 * FerryError. Raise one with the parameters its template names (`new ClusterUnreachable({cluster,
 * operation, reason})`), or the text itself when the template is `{detail}`.
 */
import { redactUris } from '../domain/credentials.js';
import { ERROR_CATALOGUE, type ErrorCode, type ErrorSpec } from './catalogue.js';

type Placeholders<T extends string> = T extends `${string}{${infer Name}}${infer Rest}` ? Name | Placeholders<Rest> : never;

/** What raising an error of `code` takes: its template's parameters, or a string for a `{detail}` template. */
export type ErrorParams<C extends ErrorCode> = [Placeholders<(typeof ERROR_CATALOGUE)[C]['message']>] extends [never]
  ? void
  : [Placeholders<(typeof ERROR_CATALOGUE)[C]['message']>] extends ['detail']
    ? string
    : Record<Placeholders<(typeof ERROR_CATALOGUE)[C]['message']>, string | number>;

export interface FerryErrorOptions {
  cause?: unknown;
  /** The MongoDB server's numeric error code behind it (default: the cause's, when it is a server error). */
  serverCode?: number;
  /** The server's name for it (e.g. `CannotConvertIndexToUnique`). */
  serverCodeName?: string;
}

/** The JSON body of every failed API response. */
export interface ErrorResponse {
  success: false;
  error: string;
  errorDescription: string;
}

function fill(template: string, params: unknown): string {
  if (params === undefined) return template;
  const values = typeof params === 'string' ? { detail: params } : (params as Record<string, unknown>);
  return template.replace(/\{(\w+)\}/g, (_, name: string) => String(values[name]));
}

/** A server error's code and name, duck-typed (the driver's classes belong to src/cluster/). */
function serverFields(cause: unknown): { code?: number; codeName?: string } {
  const { code, codeName } = (cause ?? {}) as { code?: unknown; codeName?: unknown };
  return { code: typeof code === 'number' ? code : undefined, codeName: typeof codeName === 'string' ? codeName : undefined };
}

/** Base of every error Ferry raises. */
export class FerryError<C extends ErrorCode = ErrorCode> extends Error {
  /** Stable name: the `error` of API responses, `code` in logs. */
  readonly code: C;
  /** HTTP status where it reaches the API (500 for one that has none: a bug). */
  readonly status: number;
  /** The process exit code when it ends startup. */
  readonly exitCode: number | undefined;
  /** The server's numeric code, when a server error caused it. */
  readonly serverCode: number | undefined;
  readonly serverCodeName: string | undefined;

  constructor(code: C, params: ErrorParams<C>, options: FerryErrorOptions = {}) {
    const spec: ErrorSpec = ERROR_CATALOGUE[code];
    // Messages may quote driver messages: never let a connection-string password through.
    super(redactUris(fill(spec.message, params)), options.cause === undefined ? undefined : { cause: options.cause });
    this.name = code;
    this.code = code;
    this.status = spec.status ?? 500;
    this.exitCode = spec.exitCode;
    const server = serverFields(options.cause);
    this.serverCode = options.serverCode ?? server.code;
    this.serverCodeName = options.serverCodeName ?? server.codeName;
  }

  /** The API's answer (mongosync's shape). */
  toResponse(): ErrorResponse {
    return { success: false, error: this.code, errorDescription: this.message };
  }
}

type ErrorClass<C extends ErrorCode> = new (params: ErrorParams<C>, options?: FerryErrorOptions) => FerryError<C>;

function defineError<C extends ErrorCode>(code: C): ErrorClass<C> {
  const named = {
    [code]: class extends FerryError<C> {
      constructor(params: ErrorParams<C>, options?: FerryErrorOptions) {
        super(code, params, options);
      }
    },
  };
  return named[code] as ErrorClass<C>;
}

export const InvalidRequest = defineError('InvalidRequest');
export const NotFound = defineError('NotFound');
export const InvalidStateTransition = defineError('InvalidStateTransition');
export const NotReadyToCommit = defineError('NotReadyToCommit');
export const NotReversible = defineError('NotReversible');
export const RequestTooLarge = defineError('RequestTooLarge');
export const ChangeStreamsUnavailable = defineError('ChangeStreamsUnavailable');
export const UnsupportedTopology = defineError('UnsupportedTopology');
export const ReplicaSetOptionOnMongos = defineError('ReplicaSetOptionOnMongos');
export const InstanceIdNotAllowed = defineError('InstanceIdNotAllowed');
export const MismatchedCommand = defineError('MismatchedCommand');
export const BalancerRunning = defineError('BalancerRunning');
export const ShardingRequired = defineError('ShardingRequired');
export const ShardingNotAllowed = defineError('ShardingNotAllowed');
export const ShardingEntryInvalid = defineError('ShardingEntryInvalid');
export const ShardKeyIndexMissing = defineError('ShardKeyIndexMissing');
export const UniqueIndexIncompatible = defineError('UniqueIndexIncompatible');
export const ReversibleNotSupported = defineError('ReversibleNotSupported');
export const ReverseHistoryLost = defineError('ReverseHistoryLost');
export const DestinationNotEmpty = defineError('DestinationNotEmpty');
export const InsufficientDestinationDiskSpace = defineError('InsufficientDestinationDiskSpace');
export const InsufficientPrivileges = defineError('InsufficientPrivileges');
export const OperationTimeMissing = defineError('OperationTimeMissing');
export const InternalError = defineError('InternalError');
export const NotImplemented = defineError('NotImplemented');
export const ClusterUnreachable = defineError('ClusterUnreachable');
export const ClusterCommandFailed = defineError('ClusterCommandFailed');
export const InvalidConfiguration = defineError('InvalidConfiguration');
export const MalformedBson = defineError('MalformedBson');
export const MissingBsonField = defineError('MissingBsonField');
export const UnexpectedBsonType = defineError('UnexpectedBsonType');
export const MalformedCursorReply = defineError('MalformedCursorReply');
export const InvalidNamespaceFilter = defineError('InvalidNamespaceFilter');
export const InvalidPartitionRequest = defineError('InvalidPartitionRequest');
export const DestinationConflict = defineError('DestinationConflict');
export const CopyWriteRefused = defineError('CopyWriteRefused');
export const PartitionCopyFailed = defineError('PartitionCopyFailed');
export const ChangeStreamHistoryLost = defineError('ChangeStreamHistoryLost');
export const UnexpectedChangeEvent = defineError('UnexpectedChangeEvent');
export const DdlApplicationFailed = defineError('DdlApplicationFailed');
export const ApplyWriteRefused = defineError('ApplyWriteRefused');
export const TombstoneWriteRefused = defineError('TombstoneWriteRefused');
export const UnsupportedRename = defineError('UnsupportedRename');
export const ApplicationStopped = defineError('ApplicationStopped');
export const MetadataMissing = defineError('MetadataMissing');
export const CollectionReadInterrupted = defineError('CollectionReadInterrupted');
export const CommitStopped = defineError('CommitStopped');
export const RequestTimeout = defineError('RequestTimeout');
export const RequestHeadersTooLarge = defineError('RequestHeadersTooLarge');
export const SyncLeaseHeld = defineError('SyncLeaseHeld');
export const OverlappingSync = defineError('OverlappingSync');
export const SyncCannotContinue = defineError('SyncCannotContinue');
export const SameCluster = defineError('SameCluster');
export const AuthenticationFailed = defineError('AuthenticationFailed');
export const DestinationChanged = defineError('DestinationChanged');
export const LeaseLost = defineError('LeaseLost');

/* The instance type of each class, by the same name. */
export type InvalidRequest = FerryError<'InvalidRequest'>;
export type NotFound = FerryError<'NotFound'>;
export type InvalidStateTransition = FerryError<'InvalidStateTransition'>;
export type NotReadyToCommit = FerryError<'NotReadyToCommit'>;
export type NotReversible = FerryError<'NotReversible'>;
export type RequestTooLarge = FerryError<'RequestTooLarge'>;
export type ChangeStreamsUnavailable = FerryError<'ChangeStreamsUnavailable'>;
export type UnsupportedTopology = FerryError<'UnsupportedTopology'>;
export type ReplicaSetOptionOnMongos = FerryError<'ReplicaSetOptionOnMongos'>;
export type InstanceIdNotAllowed = FerryError<'InstanceIdNotAllowed'>;
export type MismatchedCommand = FerryError<'MismatchedCommand'>;
export type BalancerRunning = FerryError<'BalancerRunning'>;
export type ShardingRequired = FerryError<'ShardingRequired'>;
export type ShardingNotAllowed = FerryError<'ShardingNotAllowed'>;
export type ShardingEntryInvalid = FerryError<'ShardingEntryInvalid'>;
export type ShardKeyIndexMissing = FerryError<'ShardKeyIndexMissing'>;
export type UniqueIndexIncompatible = FerryError<'UniqueIndexIncompatible'>;
export type ReversibleNotSupported = FerryError<'ReversibleNotSupported'>;
export type ReverseHistoryLost = FerryError<'ReverseHistoryLost'>;
export type DestinationNotEmpty = FerryError<'DestinationNotEmpty'>;
export type InsufficientDestinationDiskSpace = FerryError<'InsufficientDestinationDiskSpace'>;
export type InsufficientPrivileges = FerryError<'InsufficientPrivileges'>;
export type OperationTimeMissing = FerryError<'OperationTimeMissing'>;
export type InternalError = FerryError<'InternalError'>;
export type NotImplemented = FerryError<'NotImplemented'>;
export type ClusterUnreachable = FerryError<'ClusterUnreachable'>;
export type ClusterCommandFailed = FerryError<'ClusterCommandFailed'>;
export type InvalidConfiguration = FerryError<'InvalidConfiguration'>;
export type MalformedBson = FerryError<'MalformedBson'>;
export type MissingBsonField = FerryError<'MissingBsonField'>;
export type UnexpectedBsonType = FerryError<'UnexpectedBsonType'>;
export type MalformedCursorReply = FerryError<'MalformedCursorReply'>;
export type InvalidNamespaceFilter = FerryError<'InvalidNamespaceFilter'>;
export type InvalidPartitionRequest = FerryError<'InvalidPartitionRequest'>;
export type DestinationConflict = FerryError<'DestinationConflict'>;
export type CopyWriteRefused = FerryError<'CopyWriteRefused'>;
export type PartitionCopyFailed = FerryError<'PartitionCopyFailed'>;
export type ChangeStreamHistoryLost = FerryError<'ChangeStreamHistoryLost'>;
export type UnexpectedChangeEvent = FerryError<'UnexpectedChangeEvent'>;
export type DdlApplicationFailed = FerryError<'DdlApplicationFailed'>;
export type ApplyWriteRefused = FerryError<'ApplyWriteRefused'>;
export type TombstoneWriteRefused = FerryError<'TombstoneWriteRefused'>;
export type UnsupportedRename = FerryError<'UnsupportedRename'>;
export type ApplicationStopped = FerryError<'ApplicationStopped'>;
export type MetadataMissing = FerryError<'MetadataMissing'>;
export type CollectionReadInterrupted = FerryError<'CollectionReadInterrupted'>;
export type CommitStopped = FerryError<'CommitStopped'>;
export type RequestTimeout = FerryError<'RequestTimeout'>;
export type RequestHeadersTooLarge = FerryError<'RequestHeadersTooLarge'>;
export type SyncLeaseHeld = FerryError<'SyncLeaseHeld'>;
export type OverlappingSync = FerryError<'OverlappingSync'>;
export type SyncCannotContinue = FerryError<'SyncCannotContinue'>;
export type SameCluster = FerryError<'SameCluster'>;
export type AuthenticationFailed = FerryError<'AuthenticationFailed'>;
export type DestinationChanged = FerryError<'DestinationChanged'>;
export type LeaseLost = FerryError<'LeaseLost'>;

/** Turns anything thrown into a FerryError, keeping FerryErrors as they are. */
export function asFerryError(thrown: unknown): FerryError {
  if (thrown instanceof FerryError) return thrown;
  const message = thrown instanceof Error ? thrown.message : String(thrown);
  return new InternalError(message, { cause: thrown });
}

/**
 * A failure as an operator reads it: its name, then its message (`CannotIndexParallelArrays:
 * Index build failed: ...`). The name is a FerryError's code, else a server error's codeName,
 * else the error's own name unless it is a bare `Error`; a message that starts with it is kept.
 */
export function describeFailure(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  const name =
    error instanceof FerryError
      ? error.code
      : (serverFields(error).codeName ?? (error instanceof Error && error.name !== 'Error' ? error.name : undefined));
  return name === undefined || message.startsWith(name) ? message : `${name}: ${message}`;
}

/** Whether the sync cannot continue after `error` (the catalogue's `final`): resume is refused. */
export function isFinal(error: unknown): error is FerryError {
  return error instanceof FerryError && (ERROR_CATALOGUE[error.code as ErrorCode] as ErrorSpec).final === true;
}

/** Whether `error` is a FerryError of `code`. */
export function isFerryError<C extends ErrorCode>(error: unknown, code: C): error is FerryError<C> {
  return error instanceof FerryError && error.code === code;
}
