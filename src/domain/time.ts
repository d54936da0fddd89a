/**
 * Source times (the clusters' `Timestamp`s: T0, the commit point, a resume token's time).
 */
import type { Timestamp } from 'bson';

/** `a` after `b` (either may be missing: a missing time is before every time). */
export function timeAfter(a: Timestamp | undefined, b: Timestamp | undefined): boolean {
  if (a === undefined) return false;
  if (b === undefined) return true;
  return a.greaterThan(b);
}

/** A time at or before `limit` (both present). */
export function notAfter(time: Timestamp | undefined, limit: Timestamp | undefined): boolean {
  return time !== undefined && limit !== undefined && !time.greaterThan(limit);
}

/** The later of two times. */
export function laterTime(a: Timestamp | undefined, b: Timestamp | undefined): Timestamp | undefined {
  return timeAfter(b, a) ? b : a;
}

/** A source time as logs show it: the second as an ISO date, then the increment. */
export function describeTime(time: Timestamp | undefined): string | undefined {
  return time === undefined ? undefined : `${new Date(time.getHighBits() * 1000).toISOString()}#${time.getLowBitsUnsigned()}`;
}
