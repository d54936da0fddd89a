/**
 * Errors that stop change-event application. Each has a stable `code`; the message says what
 * happened and what the operator must do (it reaches progress `warnings` and the log).
 */

/** The source's change stream history no longer reaches Ferry's resume point (mongod code 286). */
export class ChangeStreamHistoryLost extends Error {
  override readonly name = 'ChangeStreamHistoryLost';
  readonly code = 'ChangeStreamHistoryLost';
}

/** What an operator must do after `ChangeStreamHistoryLost`. */
export const HISTORY_LOST_ADVICE =
  "the source's oplog no longer holds the changes since Ferry's resume point, so the destination can no longer be brought up to date: " +
  'nothing was skipped, but this sync cannot continue. Start the migration again from the beginning (drop the destination data and ' +
  "Ferry's metadata database), after enlarging the source's oplog (replSetResizeOplog) so that it covers the whole initial copy plus any pause";

/** The stream reported something application cannot handle (an `invalidate`, an unknown event). */
export class UnexpectedChangeEvent extends Error {
  override readonly name = 'UnexpectedChangeEvent';
  readonly code = 'UnexpectedChangeEvent';
}

/** A DDL event could not be applied to the destination. */
export class DdlApplicationError extends Error {
  override readonly name = 'DdlApplicationError';
  readonly code = 'DdlApplicationError';
}
