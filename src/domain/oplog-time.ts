/**
 * mongosync's wording of `estimatedOplogTimeRemaining`: a duration ("12 hours", "45 minutes") or
 * one of "more than 72 hours", "less than 15 minutes", "not checked yet".
 */

const MINUTE = 60;
const HOUR = 3600;

/** The wording of `seconds` of oplog left (undefined: not read yet; Infinity: no end in sight). */
export function describeOplogTime(seconds: number | undefined): string {
  if (seconds === undefined) return 'not checked yet';
  if (seconds > 72 * HOUR) return 'more than 72 hours';
  if (seconds < 15 * MINUTE) return 'less than 15 minutes';
  if (seconds < 2 * HOUR) return `${Math.floor(seconds / MINUTE)} minutes`;
  return `${Math.floor(seconds / HOUR)} hours`;
}
