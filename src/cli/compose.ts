/**
 * The composition root: which phases this build's sync is made of, with the settings the options
 * give them. A new phase (verification, reverse, coordination of several instances) is added here
 * and sequenced by src/sync/orchestrator.ts; no other phase changes.
 */
import { ChangeEventApplier } from '../cea/applier.js';
import { Commit } from '../commit/commit.js';
import type { FerryOptions } from '../config/options.js';
import { syncSettings } from '../config/settings.js';
import { InitialCopy } from '../copy/initial-copy.js';
import { configureWorkerHeap } from '../copy/worker-heap.js';
import type { Logger } from '../log/logger.js';
import type { PhaseFactories } from '../phase/contract.js';
import { Planning } from '../plan/planning.js';
import { Reverse } from '../reverse/reverse.js';
import { SyncOrchestrator } from '../sync/orchestrator.js';
import { Verifier } from '../verify/verifier.js';

/** The phases of a sync, in the order the sync runs them. */
export const PHASES: PhaseFactories = {
  sequence: [(context) => new Planning(context), (context) => new InitialCopy(context)],
  changeApplication: (context) => new ChangeEventApplier(context),
  commit: (context) => new Commit(context),
  verification: (context) => new Verifier(context),
  reverse: (context) => new Reverse(context),
};

/** The sync the daemon drives, typed as itself so that the daemon can serve its histograms and counters. */
export function createSync(options: FerryOptions, logger: Logger): SyncOrchestrator {
  const settings = syncSettings(options);
  // Before any worker thread exists: V8 sizes a thread's heap when the thread starts.
  configureWorkerHeap(settings.workerHeapMB);
  return new SyncOrchestrator({
    clusters: { cluster0: options.cluster0, cluster1: options.cluster1 },
    id: options.id,
    settings,
    phases: PHASES,
    logger,
  });
}
