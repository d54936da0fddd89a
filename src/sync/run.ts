/**
 * What the sync holds for the sync it runs, and for each run of it (from a launch to a pause, a
 * failure or the end): the context its phases are built with, and the mechanics of handing
 * change-event application over to the commit (when and why is src/commit/'s).
 */
import type { ClusterHealth } from '../cluster/health.js';
import type { SyncSettings } from '../config/settings.js';
import type { SyncPhase } from '../domain/states.js';
import type { DestinationGuard } from '../guard/destination-guard.js';
import type { Logger } from '../log/logger.js';
import type { ResumeDocument } from '../meta/resume.js';
import type { HistogramSet } from '../metrics/histograms.js';
import type {
  ChangeApplication,
  ChangeApplicationHandoff,
  CommitPhase,
  Phase,
  PhaseStatus,
  ReversePhase,
  SyncContext,
  VerificationPhase,
} from '../phase/contract.js';
import type { SyncTarget } from './begin.js';
import type { InstanceCoordination } from '../coordination/coordination.js';

/** One run of the sync: its phases, from a launch to a pause, a failure or the end. */
export interface Run {
  context: SyncContext;
  sequence: Phase[];
  /** Started and not asked to stop. */
  active: boolean;
  done?: Promise<void>;
}

/** The sync this instance runs. */
export interface ActiveSync extends SyncTarget {
  /** The part of the initial copy it is in (as recorded). */
  phase: SyncPhase;
  run?: Run;
  /** Change-event application; replaced by the commit's hand-off after a failed try. */
  application?: ChangeApplication;
  /** Whether `application` has been started (a sync recovered COMMITTING has it built, not started). */
  applicationStarted?: boolean;
  commit?: CommitPhase;
  committing?: Promise<void>;
  /** The embedded verifier of this run (absent when the sync does not verify); it runs on through commit. */
  verification?: VerificationPhase;
  /** Whether `verification` has been started. */
  verificationStarted?: boolean;
  /** Reverse, while the sync is REVERSING: it prepares this sync (the reversed one) before its first run. */
  reverse?: ReversePhase;
  reversing?: Promise<void>;
  /** Whether the source and the destination answer. */
  health: ClusterHealth;
  /** Notices changes to the destination Ferry did not make; set once the sync's resume document is known. */
  guard?: DestinationGuard;
  /** Set when this instance is one of several, one per source shard (src/coordination/). */
  coordination?: InstanceCoordination;
}

/** The earlier of two times, either possibly absent. */
function earliest(a: Date | undefined, b: Date | undefined): Date | undefined {
  if (a === undefined) return b;
  return b === undefined || a <= b ? a : b;
}

/** The context the phases of a run of `sync` from `doc` are built with. */
export function syncContext(
  sync: ActiveSync,
  doc: ResumeDocument,
  shared: { settings: SyncSettings; histograms: HistogramSet; logger: Logger },
): SyncContext {
  return {
    source: sync.source,
    destination: sync.destination,
    request: sync.request,
    store: sync.store,
    resume: doc,
    ...shared,
    syncPhase: () => sync.phase,
    enterSyncPhase: async (phase) => {
      // Each part of the initial copy builds on the destination as the last one left it.
      await sync.guard?.check();
      await sync.resume.enterPhase(phase);
      sync.phase = phase;
      shared.logger.info({ phase }, `Initial copy: ${phase}`);
      for (const each of [...(sync.run?.sequence ?? []), sync.application, sync.commit, sync.verification]) each?.onSyncPhase?.(phase);
    },
    clusterOutageSince: () =>
      earliest(sync.health.of(sync.source.endpoint)?.unreachableSince, sync.health.of(sync.destination.endpoint)?.unreachableSince),
    checkDestination: async () => sync.guard?.check(),
    changingCatalog: (names, change) => (sync.guard === undefined ? change() : sync.guard.changing(names, change)),
    ...(sync.coordination === undefined ? {} : { coordination: sync.coordination }),
    changeEventsCaughtUp: async (time) => (sync.application === undefined ? false : sync.application.caughtUpTo(time)),
  };
}

/**
 * The hand-off the commit uses: the change-event application running now, or a new one started
 * from its records (after a restart, or after a failed try retired the last one); `retire`
 * stops it and keeps its figures (`keep`).
 */
export function changeApplicationHandoff(
  sync: ActiveSync,
  build: (context: SyncContext) => ChangeApplication,
  keep: (status: PhaseStatus) => void,
): ChangeApplicationHandoff {
  return {
    take: async () => {
      if (sync.application === undefined) {
        sync.application = build(sync.run!.context);
        sync.applicationStarted = false;
        await sync.application.recover();
      }
      if (sync.applicationStarted !== true) {
        sync.applicationStarted = true;
        void sync.application.start().catch(() => undefined); // its failure reaches the commit through applyThrough
      }
      return sync.application;
    },
    retire: async () => {
      const application = sync.application;
      await application?.stop();
      if (application === undefined || sync.application !== application) return;
      keep(application.status());
      sync.application = undefined;
    },
  };
}
