/**
 * Tuning knobs read from environment variables (not flags: operators rarely need them). Each
 * knob documents itself where it is used; these read one whole number.
 */

/** `env[name]` as a whole number of `unit`, `fallback` when unset; a RangeError names the variable otherwise. */
export function wholeNumberVariable(env: NodeJS.ProcessEnv, name: string, fallback: number, unit: string, minimum = 0): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < minimum) {
    throw new RangeError(
      `${name} must be a whole number of ${unit}${minimum > 0 ? ` of at least ${minimum}` : ''}, got ${JSON.stringify(raw)}`,
    );
  }
  return value;
}

/** `env[name]` as whole milliseconds, `fallback` when unset; a RangeError names the variable otherwise. */
export function millisecondsVariable(env: NodeJS.ProcessEnv, name: string, fallback: number, minimum = 0): number {
  return wholeNumberVariable(env, name, fallback, 'milliseconds', minimum);
}
