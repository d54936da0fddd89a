import type { StartRequest } from '../../src/domain/start-request.js';
import type { SyncEvent, SyncSnapshot, RecoveredState, SyncControl } from '../../src/domain/sync-control.js';
import type { VerificationReport } from '../../src/domain/verification.js';
/**
 * A SyncControl test double: records calls, fails or blocks on demand, and lets a test play the
 * engine's background events and figures.
 */

type Method = 'recover' | 'preflight' | 'start' | 'pause' | 'resume' | 'commit' | 'reverse' | 'close';

export class FakeEngine implements SyncControl {
  /** Methods called, in order. */
  readonly calls: Method[] = [];
  /** Errors the next call of a method throws (once). */
  readonly failNext = new Map<Method, Error>();
  /** A promise the next call of a method waits on before returning (once). */
  readonly holdNext = new Map<Method, Promise<void>>();
  /** What recover() returns. */
  recovered: RecoveredState | undefined;
  figures: SyncSnapshot = {
    info: null,
    eventsApplied: 0,
    readyToCommit: false,
    warnings: [],
    tuning: { loadLevel: 3, copyWorkers: 4, batchesInFlight: 2, applyLanes: 8, batchBytes: 2097152 },
  };
  startedWith: StartRequest | undefined;
  #report: ((event: SyncEvent) => void) | undefined;

  attach(report: (event: SyncEvent) => void): void {
    this.#report = report;
  }

  /** Plays a background event, as the real engine would. */
  emit(event: SyncEvent): void {
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

  snapshot(): SyncSnapshot {
    return this.figures;
  }

  /** What verificationReport() returns; the arguments it was last called with. */
  report: VerificationReport | null = null;
  reportAskedFor: { skip: number; limit: number } | undefined;
  async verificationReport(skip: number, limit: number): Promise<VerificationReport | null> {
    this.reportAskedFor = { skip, limit };
    return this.report;
  }
}

/** A promise with its resolve function, for holding a call open. */
export function gate(): { promise: Promise<void>; open: () => void } {
  let open!: () => void;
  const promise = new Promise<void>((resolve) => (open = resolve));
  return { promise, open };
}
