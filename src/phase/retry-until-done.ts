/**
 * The loop of a phase that must complete and is never given up (commit, reverse): one try after
 * another, every `intervalMs`, until a try reports nothing refused (`done`) or the phase is asked
 * to stop (`stopped`). What the last try says stays in progress `warnings`: each change a cluster
 * refused (described by the phase: which index of which collection, and why), or why the try
 * failed otherwise (a cluster unreachable meanwhile), with the retry interval. An error the sync
 * cannot continue from (the catalogue's `final`: history lost, the destination changed behind
 * Ferry's back, the lease taken over) is never retried: `run` throws it.
 */
import { redactUris } from '../domain/credentials.js';
import { isFinal } from '../errors/errors.js';
import type { Logger } from '../log/logger.js';
import type { PhaseOutcome } from './contract.js';

/** One try: the refusals it met, described for people (none: done), or `stopped` when it saw the stop first. */
export type Attempt = () => Promise<string[] | 'stopped'>;

export class RetryUntilDone {
  /** Refusals of the last try. */
  #refused: string[] = [];
  /** Why the last try failed otherwise. */
  #problem: string | undefined;
  #stopping = false;
  #wake: (() => void) | undefined;

  constructor(
    /** Names the phase in its warnings: `commit`, `reverse`. */
    readonly what: string,
    readonly intervalMs: number,
    readonly logger: Logger,
  ) {}

  /** Whether a stop was asked: a try checks it at its own safe points. */
  get stopping(): boolean {
    return this.#stopping;
  }

  /** What the last try says (progress `warnings`). */
  warnings(): string[] {
    return this.#problem === undefined ? [...this.#refused] : [...this.#refused, this.#problem];
  }

  /** Ends the wait between tries; `run` then returns `stopped`. */
  stop(): void {
    this.#stopping = true;
    this.#wake?.();
  }

  /** Tries until done or stopped; `afterFailure` runs after a try that failed otherwise than by refusals. */
  async run(attempt: Attempt, afterFailure?: () => Promise<void>): Promise<PhaseOutcome> {
    for (;;) {
      try {
        const refused = await attempt();
        if (refused === 'stopped') return 'stopped';
        this.#problem = undefined;
        this.#refused = refused;
        for (const warning of refused) this.logger.error(warning);
        if (refused.length === 0) return 'done';
      } catch (error) {
        if (this.#stopping) return 'stopped';
        // An error the sync cannot continue from is not retried: it ends the phase (src/sync/orchestrator.ts stops the sync).
        if (isFinal(error)) throw error;
        const reason = redactUris((error as Error).message);
        this.#problem = `The ${this.what} could not finish yet and is retried every ${this.intervalMs / 1000} s: ${reason}`;
        this.logger.error({ err: error }, `The ${this.what} could not finish yet; retrying`);
        await afterFailure?.();
      }
      await this.#pause();
      if (this.#stopping) return 'stopped';
    }
  }

  #pause(): Promise<void> {
    if (this.#stopping) return Promise.resolve();
    return new Promise((resolve) => {
      const timer = setTimeout(done, this.intervalMs);
      function done() {
        clearTimeout(timer);
        resolve();
      }
      this.#wake = done;
    });
  }
}
