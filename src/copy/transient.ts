/**
 * Which failures of a copy are worth retrying: the cluster was briefly unreachable or changed
 * primary, or a read cursor lost its collection to a drop or rename. The codes are the retryable-error list of MongoDB's Retryable Writes specification
 * (the "not writable primary" and "node is recovering" codes of SDAM, plus HostNotFound,
 * HostUnreachable, NetworkTimeout, SocketException, ExceededTimeLimit,
 * ReadConcernMajorityNotAvailableYet), with CursorNotFound for a read cursor the server closed
 * and QueryPlanKilled for a read cursor whose collection was dropped or renamed under it: a read
 * restarted from the watermark finds the collection as it now is (gone: an empty read ends the
 * partition, and change-event application replays the drop or rename), as mongod's own
 * initial-sync CollectionCloner ends a collection's clone on that code.
 * Anything else (a write refused for what it is, a missing privilege) is not transient and
 * fails the partition loudly.
 */
import { MongoError, MongoNetworkError, MongoServerSelectionError } from 'mongodb';

const TRANSIENT_CODES: ReadonlySet<number> = new Set([
  6, // HostUnreachable
  7, // HostNotFound
  43, // CursorNotFound
  89, // NetworkTimeout
  91, // ShutdownInProgress
  134, // ReadConcernMajorityNotAvailableYet
  // QueryPlanKilled: since mongod 4.1.7 (SERVER-37451) a drop or rename of the collection (also
  // dropDatabase, or a cross-database rename, which drops the source) fails the open cursor's next
  // getMore with it ("collection dropped. UUID ..." / "collection renamed from ... to ...").
  // Not a refusal: the read restarts and finds the collection as it now is (missing: an empty
  // cursor, so the partition finishes with what was written).
  175,
  189, // PrimarySteppedDown
  262, // ExceededTimeLimit
  9001, // SocketException
  10107, // NotWritablePrimary
  11600, // InterruptedAtShutdown
  11602, // InterruptedDueToReplStateChange
  13435, // NotPrimaryNoSecondaryOk
  13436, // NotPrimaryOrSecondary
]);

/** Whether an error is a passing condition of the cluster (retry) rather than a refusal (fail). */
export function isTransientError(error: unknown): boolean {
  if (error instanceof MongoNetworkError || error instanceof MongoServerSelectionError) return true;
  if (error instanceof MongoError) {
    if (error.hasErrorLabel('RetryableWriteError')) return true;
    if (typeof error.code === 'number' && TRANSIENT_CODES.has(error.code)) return true;
  }
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'number' && TRANSIENT_CODES.has(code);
}
