/**
 * mongod's names and categories for the error codes a fail point is typically asked to return
 * (src/mongo/base/error_codes.yml): network, not-primary, shutdown, interruption and transaction
 * errors, on top of the codes the test cluster raises itself (`ErrorCode` in errors.ts). A code
 * in neither table is named `Location<code>`, as mongod names codes it does not know.
 */
import { ErrorCode } from '../errors.js';

/** Categories of error_codes.yml that decide error labels. */
export type ErrorCategory =
  'RetriableError' | 'NetworkError' | 'NotPrimaryError' | 'ShutdownError' | 'SnapshotError' | 'NeedRetargettingError';

const CODES: [code: number, name: string, categories: ErrorCategory[]][] = [
  [6, 'HostUnreachable', ['NetworkError', 'RetriableError']],
  [7, 'HostNotFound', ['NetworkError', 'RetriableError']],
  [8, 'UnknownError', []],
  [24, 'LockTimeout', []],
  [64, 'WriteConcernTimeout', []],
  [79, 'UnknownReplWriteConcern', []],
  [89, 'NetworkTimeout', ['NetworkError', 'RetriableError']],
  [90, 'CallbackCanceled', []],
  [91, 'ShutdownInProgress', ['ShutdownError', 'RetriableError']],
  [100, 'UnsatisfiableWriteConcern', []],
  [133, 'FailedToSatisfyReadPreference', []],
  [134, 'ReadConcernMajorityNotAvailableYet', ['RetriableError']],
  [150, 'StaleEpoch', ['NeedRetargettingError']],
  [189, 'PrimarySteppedDown', ['NotPrimaryError', 'RetriableError']],
  [234, 'RetryChangeStream', []],
  [239, 'SnapshotTooOld', ['SnapshotError']],
  [246, 'SnapshotUnavailable', ['SnapshotError']],
  [249, 'StaleDbVersion', []],
  [250, 'StaleChunkHistory', ['SnapshotError']],
  [262, 'ExceededTimeLimit', ['RetriableError']],
  [267, 'PreparedTransactionInProgress', []],
  [272, 'MigrationConflict', ['SnapshotError']],
  [279, 'ClientDisconnect', []],
  [358, 'InternalTransactionNotSupported', ['RetriableError']],
  [402, 'ResourceExhausted', ['RetriableError']],
  [9001, 'SocketException', ['NetworkError', 'RetriableError']],
  [10058, 'LegacyNotPrimary', []],
  [10107, 'NotWritablePrimary', ['NotPrimaryError', 'RetriableError']],
  [11600, 'InterruptedAtShutdown', ['ShutdownError', 'RetriableError']],
  [11601, 'Interrupted', []],
  [11602, 'InterruptedDueToReplStateChange', ['NotPrimaryError', 'RetriableError']],
  [13388, 'StaleConfig', ['NeedRetargettingError']],
  [13435, 'NotPrimaryNoSecondaryOk', ['NotPrimaryError', 'RetriableError']],
  [13436, 'NotPrimaryOrSecondary', ['NotPrimaryError', 'RetriableError']],
  [50915, 'BackupCursorOpenConflictWithCheckpoint', ['RetriableError']],
];

const names = new Map<number, string>([
  ...Object.entries(ErrorCode).map(([name, code]) => [code, name] as [number, string]),
  ...CODES.map(([code, name]) => [code, name] as [number, string]),
]);
const categories = new Map<number, ReadonlySet<ErrorCategory>>(CODES.map(([code, , of]) => [code, new Set(of)]));

/** mongod's code name for `code` (`Location<code>` when it has none here). */
export function codeName(code: number): string {
  return names.get(code) ?? `Location${code}`;
}

export function inCategory(code: number, category: ErrorCategory): boolean {
  return categories.get(code)?.has(category) ?? false;
}

/** mongod's NonResumableChangeStreamError category. */
export function isNonResumableChangeStreamError(code: number): boolean {
  return code === ErrorCode.ChangeStreamFatalError || code === ErrorCode.ChangeStreamHistoryLost;
}
