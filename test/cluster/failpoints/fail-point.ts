/**
 * A fail point's activation state, as mongod's FailPoint (src/mongo/util/fail_point.cpp): a mode
 * (`off`, `alwaysOn`, `{times: n}`, `{skip: n}`, `{activationProbability: p}`) and the `data`
 * document given to `configureFailPoint`. `timesEntered` counts activations over the node's life
 * (not reset by `configureFailPoint`, which reports it as `count`), for `waitForFailPoint`.
 */
import { ServerError } from '../errors.js';

export type FailPointMode =
  | { kind: 'off' }
  | { kind: 'alwaysOn' }
  | { kind: 'times'; remaining: number }
  | { kind: 'skip'; remaining: number }
  | { kind: 'activationProbability'; probability: number };

/** The largest `times`/`skip` mongod takes (an int). */
const MAX_COUNT = 2 ** 31 - 1;

/** A number of any BSON numeric type, as a JS number (undefined for other types). */
function numeric(v: unknown): number | undefined {
  if (typeof v === 'number') return v;
  const type = (v as { _bsontype?: string } | null)?._bsontype;
  return type === 'Long' || type === 'Int32' || type === 'Double' || type === 'Decimal128' ? Number(v) : undefined;
}

/** Parses `mode` with mongod's errors (FailPoint::parseBSON). */
export function parseMode(mode: unknown): FailPointMode {
  if (mode === undefined) throw new ServerError('IllegalOperation', "When setting a failpoint, you must supply a 'mode'");
  if (typeof mode === 'string') {
    if (mode === 'off') return { kind: 'off' };
    if (mode === 'alwaysOn') return { kind: 'alwaysOn' };
    throw new ServerError('BadValue', `unknown mode: ${mode}`);
  }
  if (typeof mode !== 'object' || mode === null || Array.isArray(mode)) {
    throw new ServerError('TypeMismatch', "'mode' must be a string or JSON object");
  }
  const m = mode as Record<string, unknown>;
  for (const kind of ['times', 'skip'] as const) {
    if (!(kind in m)) continue;
    const n = numeric(m[kind]);
    if (n === undefined) throw new ServerError('TypeMismatch', `"${kind}" had the wrong type. Expected number`);
    if (!Number.isInteger(n))
      throw new ServerError(
        'BadValue',
        `Expected field "${kind}" to have a value exactly representable as a 64-bit integer, but found ${kind}: ${n}`,
      );
    if (n < 0) throw new ServerError('BadValue', `'${kind}' option to 'mode' must be positive`);
    if (n > MAX_COUNT) throw new ServerError('BadValue', `'${kind}' option to 'mode' is too large`);
    return { kind, remaining: n };
  }
  if ('activationProbability' in m) {
    const p = numeric(m.activationProbability);
    if (p === undefined)
      throw new ServerError('TypeMismatch', "the 'activationProbability' option to 'mode' must be a double between 0 and 1");
    if (p < 0 || p > 1) throw new ServerError('BadValue', `activationProbability must be between 0.0 and 1.0; found ${p}`);
    return { kind: 'activationProbability', probability: p };
  }
  throw new ServerError('BadValue', "'mode' must be one of 'off', 'alwaysOn', 'times', and 'activationProbability'");
}

/** Parses `data` (optional; a document). */
export function parseData(data: unknown): Record<string, unknown> {
  if (data === undefined) return {};
  if (typeof data !== 'object' || data === null || Array.isArray(data)) {
    throw new ServerError('TypeMismatch', "the 'data' option must be a JSON object");
  }
  return data as Record<string, unknown>;
}

export class FailPoint {
  private mode: FailPointMode = { kind: 'off' };
  private data: Record<string, unknown> = {};
  /** Activations so far (mongod's timesEntered). */
  timesEntered = 0;
  private waiters = new Set<() => void>();

  constructor(readonly name: string) {}

  get active(): boolean {
    return this.mode.kind !== 'off';
  }

  /** Sets the mode and data; returns the activations so far (the reply's `count`). */
  configure(mode: FailPointMode, data: Record<string, unknown>): number {
    this.mode = mode;
    this.data = data;
    if (mode.kind === 'times' && mode.remaining === 0) this.mode = { kind: 'off' };
    return this.timesEntered;
  }

  /**
   * The data when the fail point fires for an operation `applies` accepts (operations it does not
   * accept neither fire it nor count against `times`/`skip`), otherwise undefined.
   */
  evaluate(applies: (data: Record<string, unknown>) => boolean): Record<string, unknown> | undefined {
    const mode = this.mode;
    if (mode.kind === 'off' || !applies(this.data)) return undefined;
    switch (mode.kind) {
      case 'times':
        if (--mode.remaining <= 0) this.mode = { kind: 'off' };
        break;
      case 'skip':
        if (mode.remaining > 0) {
          mode.remaining--;
          return undefined;
        }
        break;
      case 'activationProbability':
        if (Math.random() >= mode.probability) return undefined;
        break;
      case 'alwaysOn':
        break;
    }
    this.timesEntered++;
    for (const wake of this.waiters) wake();
    return this.data;
  }

  /** Resolves once `timesEntered` reaches `target`, or rejects with MaxTimeMSExpired after `ms`. */
  async waitForEntries(target: number, ms: number): Promise<void> {
    if (this.timesEntered >= target) return;
    await new Promise<void>((resolve, reject) => {
      const check = () => {
        if (this.timesEntered < target) return;
        finish();
        resolve();
      };
      const timer = setTimeout(() => {
        finish();
        reject(new ServerError('MaxTimeMSExpired', 'operation exceeded time limit'));
      }, ms);
      const finish = () => {
        clearTimeout(timer);
        this.waiters.delete(check);
      };
      this.waiters.add(check);
    });
  }
}
