/**
 * Value parsers for commander options of the demo, the workload and the benchmarks: each
 * rejects a bad value with a one-line reason commander prints next to the flag.
 */
import { InvalidArgumentError } from 'commander';

export function positiveNumber(value: string): number {
  const n = Number(value);
  if (!(n > 0) || !Number.isFinite(n)) throw new InvalidArgumentError('must be a positive number');
  return n;
}

export function positiveInteger(value: string): number {
  const n = Number(value);
  if (!Number.isSafeInteger(n) || n <= 0) throw new InvalidArgumentError('must be a positive integer');
  return n;
}

export function integer(value: string): number {
  const n = Number(value);
  if (value.trim() === '' || !Number.isSafeInteger(n)) throw new InvalidArgumentError('must be an integer');
  return n;
}

/** A comma-separated list of positive numbers (`50,200,800`). */
export function positiveNumberList(value: string): number[] {
  return value.split(',').map((part) => positiveNumber(part.trim()));
}

/** A repeatable `NAME=value` option, collected into an environment object. */
export function environmentEntry(value: string, previous: Record<string, string> = {}): Record<string, string> {
  const match = /^([A-Za-z_][A-Za-z0-9_]*)=(.*)$/s.exec(value);
  if (match === null) throw new InvalidArgumentError('must be NAME=value');
  return { ...previous, [match[1]!]: match[2]! };
}
