/**
 * Identical commands: every instance of a migration must get the same start request (spec §3 rule
 * 10). Requests are compared in a canonical form (keys sorted, so the order a client wrote them in
 * does not matter), and a difference is named by its first differing top-level field.
 */
import type { StartRequest } from '../domain/start-request.js';
import { MismatchedCommand } from '../errors/errors.js';

function canonical(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(canonical);
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(
      Object.keys(value)
        .sort()
        .map((key) => [key, canonical((value as Record<string, unknown>)[key])]),
    );
  }
  return value;
}

/** The start request as every instance records it. */
export function commandFingerprint(request: StartRequest): string {
  return JSON.stringify(canonical(request));
}

/** The top-level fields in which two recorded requests differ (none: identical). */
export function differingFields(a: string, b: string): string[] {
  const left = JSON.parse(a) as Record<string, unknown>;
  const right = JSON.parse(b) as Record<string, unknown>;
  const keys = [...new Set([...Object.keys(left), ...Object.keys(right)])].sort();
  return keys.filter((key) => JSON.stringify(left[key]) !== JSON.stringify(right[key]));
}

/** The refusal of a start request that differs from the one instance `other` got (`fields`: differingFields). */
export function mismatchedStart(other: string, fields: readonly string[]): MismatchedCommand {
  return new MismatchedCommand(
    `start differs from the start instance "${other}" got (${fields.join(', ')}): every instance of a migration must get ` +
      'the same request. Send this instance the same body as the others',
  );
}
