/**
 * A SyncEngine test double: records calls, fails or blocks on demand, and lets a test play the
 * engine's background events and figures.
 */
import type { StartRequest } from '../../src/api/start-request.js';
import type { EngineEvent, EngineSnapshot, RecoveredState, SyncEngine } from '../../src/state/engine.js';

type Method = 'recover' | 'preflight' | 'start' | 'pause' | 'resume' | 'commit' | 'reverse' | 'close';

export class FakeEngine implements SyncEngine {
  /** Methods called, in order. */
  readonly calls: Method[] = [];
  /** Errors the next call of a method throws (once). */
  readonly failNext = new Map<Method, Error>();
  /** A promise the next call of a method waits on before returning (once). */
  readonly holdNext = new Map<Method, Promise<void>>();
  /** What recover() returns. */
  recovered: RecoveredState | undefined;
  figures: EngineSnapshot = { info: null, eventsApplied: 0, readyToCommit: false, warnings: [] };
  startedWith: StartRequest | undefined;
  #report: ((event: EngineEvent) => void) | undefined;

  attach(report: (event: EngineEvent) => void): void {
    this.#report = report;
  }

  /** Plays a background event, as the real engine would. */
  emit(event: EngineEvent): void {
    this.#report!(event);
  }

  async #call(method: Method): Promise<void> {
    this.calls.push(method);
    const hold = this.holdNext.get(method);
    this.holdNext.delete(method);
    if (hold !== undefined) await hold;
    const error = this.failNext.get(method);
    this.failNext.delete(method);
    if (error !== undefined) throw error;
  }

  async recover(): Promise<RecoveredState | undefined> {
    await this.#call('recover');
    return this.recovered;
  }
  async preflight(): Promise<void> {
    await this.#call('preflight');
  }
  async start(request: StartRequest): Promise<void> {
    await this.#call('start');
    this.startedWith = request;
  }
  pause = () => this.#call('pause');
  resume = () => this.#call('resume');
  commit = () => this.#call('commit');
  reverse = () => this.#call('reverse');
  close = () => this.#call('close');

  snapshot(): EngineSnapshot {
    return this.figures;
  }
}

/** A promise with its resolve function, for holding a call open. */
export function gate(): { promise: Promise<void>; open: () => void } {
  let open!: () => void;
  const promise = new Promise<void>((resolve) => (open = resolve));
  return { promise, open };
}
