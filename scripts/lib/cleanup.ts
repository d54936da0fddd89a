/**
 * What a script started (clusters, ferry, a workload), stopped in reverse order however the script
 * ends: success, failure or Ctrl-C. Each step gets a time limit, after which its `kill` (if any)
 * runs, so a stuck child process cannot keep the script from exiting.
 */

interface Step {
  what: string;
  stop: () => Promise<unknown>;
  kill?: () => void;
}

/** Options of `Cleanup.run`. */
export interface CleanupRunOptions {
  /** Time each step gets before its `kill` runs. Default 20 s. */
  stepTimeoutMs?: number;
}

export class Cleanup {
  readonly #steps: Step[] = [];
  #running: Promise<string[]> | undefined;

  /** Registers how to stop something just started; `kill` is the last resort after the time limit. */
  defer(what: string, stop: () => Promise<unknown>, kill?: () => void): void {
    this.#steps.push({ what, stop, ...(kill === undefined ? {} : { kill }) });
  }

  /** Stops everything, last started first; resolves with the steps that failed. Safe to call twice. */
  run(options: CleanupRunOptions = {}): Promise<string[]> {
    this.#running ??= this.#runSteps(options.stepTimeoutMs ?? 20_000);
    return this.#running;
  }

  async #runSteps(timeoutMs: number): Promise<string[]> {
    const failures: string[] = [];
    while (this.#steps.length > 0) {
      const step = this.#steps.pop()!;
      let timer: NodeJS.Timeout | undefined;
      const timedOut = new Promise<'timeout'>((resolve) => (timer = setTimeout(() => resolve('timeout'), timeoutMs)));
      try {
        const outcome = await Promise.race([step.stop(), timedOut]);
        if (outcome === 'timeout') {
          step.kill?.();
          failures.push(`${step.what}: did not stop within ${Math.round(timeoutMs / 1000)} s${step.kill ? ' (killed)' : ''}`);
        }
      } catch (error) {
        step.kill?.();
        failures.push(`${step.what}: ${(error as Error).message}`);
      } finally {
        clearTimeout(timer);
      }
    }
    return failures;
  }
}
