/**
 * Recovery at startup: finding the sync an earlier run of this instance (`--id`) left, so the sync
 * (src/sync/orchestrator.ts) continues it. Each phase then continues from its own records
 * (`Phase.recover`, then `start`): a partition after its checkpoint (src/copy/), change-event
 * application after its resume token (src/cea/), a commit from its last stage (src/commit/).
 *
 * The metadata lives on the destination of the sync it describes, so both clusters are looked
 * at (read-only). After a reverse both may hold a sync of this instance, each on its own
 * destination: the committed one and the one reversing it, whose `reversals` count is higher
 * (src/reverse/); the higher count is the sync that runs now. Found only on the other cluster, it
 * is not this sync's to continue: the flags
 * name the clusters the other way round (continuing would write-block and write to the source),
 * or its destination is elsewhere; Ferry refuses to start rather than guess. A cluster that cannot
 * be reached (within the cluster timeout) is logged and skipped: Ferry starts IDLE, and a restart
 * once it is reachable continues the sync.
 */
import { connect } from '../cluster/connect.js';
import { asClusterError, isServerError } from '../cluster/errors.js';
import { CLUSTER_NAMES, nameCluster, type ClusterEndpoint, type ClusterName } from '../domain/clusters.js';
import { InvalidStateTransition } from '../errors/errors.js';
import type { Logger } from '../log/logger.js';
import { ResumeStore, reversalsOf, type ResumeDocument } from '../meta/resume.js';
import { MetadataStore } from '../meta/store.js';

export interface RecordedSync {
  /** The cluster that holds it: the sync's destination. */
  cluster: ClusterName;
  doc: ResumeDocument;
}

/**
 * Of the syncs found, the one to continue (on its own destination, the latest direction) and one
 * found where it does not belong (its destination is the other cluster), if any.
 */
export function chooseRecordedSync(found: readonly RecordedSync[]): { chosen?: RecordedSync; misplaced?: RecordedSync } {
  const placed = found.filter(({ cluster, doc }) => doc.request.destination === cluster);
  const chosen = placed.reduce<RecordedSync | undefined>(
    (latest, each) => (latest === undefined || reversalsOf(each.doc) > reversalsOf(latest.doc) ? each : latest),
    undefined,
  );
  const misplaced = found.find(({ cluster, doc }) => doc.request.destination !== cluster);
  return { ...(chosen === undefined ? {} : { chosen }), ...(misplaced === undefined ? {} : { misplaced }) };
}

/** The sync this instance recorded, if any (see the module comment). */
export async function findRecordedSync(
  clusters: Record<ClusterName, ClusterEndpoint>,
  id: string,
  logger: Logger,
): Promise<RecordedSync | undefined> {
  const found: RecordedSync[] = [];
  const unreachable: string[] = [];
  await Promise.all(
    CLUSTER_NAMES.map(async (cluster) => {
      const client = connect(clusters[cluster]);
      try {
        const doc = await new ResumeStore(new MetadataStore(client, id)).read();
        if (doc !== null) found.push({ cluster, doc });
      } catch (error) {
        // A cluster that answers with an error stops startup; any other failure is one that cannot be reached.
        if (isServerError(error)) throw asClusterError(clusters[cluster], `reading the metadata of instance "${id}"`, error);
        unreachable.push(nameCluster(clusters[cluster]));
      } finally {
        await client.close().catch(() => undefined);
      }
    }),
  );
  const { chosen, misplaced } = chooseRecordedSync(found);
  if (chosen === undefined && misplaced !== undefined) {
    throw new InvalidStateTransition(
      `${nameCluster(clusters[misplaced.cluster])} (${misplaced.cluster}) holds the metadata of a sync with id "${id}" ` +
        `whose destination is ${misplaced.doc.request.destination}: were --cluster0 and --cluster1 given the other way round? ` +
        'Ferry will not continue that sync against these flags; restart it ' +
        'with the clusters named as when the sync started, or with another --id',
    );
  }
  if (chosen === undefined && unreachable.length > 0) {
    logger.error(
      { unreachable },
      `Could not reach ${unreachable.join(' and ')} to look for an earlier sync with id "${id}"; starting IDLE. ` +
        'If a sync was running, restart Ferry once the cluster is reachable: it continues from its metadata.',
    );
  }
  return chosen;
}
