/**
 * Which SyncControl the daemon runs: the migration engine (src/sync/), with the options' copy
 * settings, change-event application (src/cea/) with its settings, and the daemon's logger; and
 * the heap size of the worker threads it will start.
 */
import type { FerryOptions } from '../config/options.js';
import type { Logger } from '../log/logger.js';
import { ChangeEventApplier } from '../cea/applier.js';
import { configureWorkerHeap } from '../copy/worker-heap.js';
import { MigrationEngine } from '../sync/engine.js';
import { syncSettings } from '../config/settings.js';

/** The engine (a SyncControl), typed as itself so that the daemon can expose its histograms. */
export function createEngine(options: FerryOptions, logger: Logger): MigrationEngine {
  const settings = syncSettings(options);
  // Before any worker thread exists: V8 sizes a thread's heap when the thread starts.
  configureWorkerHeap(settings.workerHeapMB);
  return new MigrationEngine({
    clusters: { cluster0: options.cluster0, cluster1: options.cluster1 },
    id: options.id,
    settings,
    applier: (context) => new ChangeEventApplier({ ...context, settings: settings.cea }),
    logger,
  });
}
