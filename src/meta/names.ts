/**
 * Collections of the metadata database (`METADATA_DATABASE`, src/domain/namespaces.ts). Several instances (`--id`) may
 * share it: every document
 * names its instance.
 * - `resume`: one document per instance: state, phase and its transitions, the start request,
 *   the start time T0 (see resume.ts).
 * - `namespaces`: one document per synced collection or view: source options, destination
 *   creation, indexes and the temporary changes commit must undo (see namespaces.ts).
 * - `partitions`: the copy's partition table, one document per `_id` range (see partitions.ts).
 * - `changeStream`: one document per instance: the resume token of change-event application and
 *   what it has done that a restart must know (see change-stream.ts).
 * - `tombstones`: documents deleted by change-event application while the initial copy could
 *   still write them back (see src/cea/tombstones.ts).
 * - `commit`: one document per instance: the commit point and each commit step done (see
 *   src/commit/commit-record.ts).
 * - `leases`: one document per instance: which process runs its sync, and the epoch every
 *   metadata write of that process carries (see lease.ts and fence.ts). Kept when a new sync
 *   starts with the same id, so epochs only grow.
 * - `guard`: one document per instance: what Ferry knows of the destination's catalog, to notice
 *   changes it did not make (see src/guard/).
 * - `verification`, `verificationPartitions`, `verificationRechecks`, `verificationCatalogRechecks`,
 *   `verificationMismatches`: the embedded verifier's state (one document per instance: its
 *   streams' positions and where its passes stand), the `_id` ranges it scans, the documents and
 *   the namespace definitions waiting to be checked again, and the differences it found (src/verify/).
 * - `wayBack`: one document per instance, on both clusters of a committed reversible sync: where
 *   a reverse starts applying (the destination's time when it became writable) and which cluster
 *   blocks user writes (see way-back.ts).
 * - `coordination`: one document per instance of a migration run by several instances, one per
 *   source shard: its start request, the steps it has reached and the coordinator's decisions
 *   (see src/coordination/).
 * - `coordinationStart`: one document for such a migration: the start request the first instance
 *   to start got, which every other instance's start must match (see src/coordination/start-claim.ts).
 */
export const METADATA_COLLECTIONS = Object.freeze({
  resume: 'resume',
  namespaces: 'namespaces',
  partitions: 'partitions',
  changeStream: 'changeStream',
  tombstones: 'tombstones',
  commit: 'commit',
  leases: 'leases',
  guard: 'guard',
  verification: 'verification',
  verificationPartitions: 'verificationPartitions',
  verificationRechecks: 'verificationRechecks',
  verificationCatalogRechecks: 'verificationCatalogRechecks',
  verificationMismatches: 'verificationMismatches',
  wayBack: 'wayBack',
  coordination: 'coordination',
  coordinationStart: 'coordinationStart',
});
