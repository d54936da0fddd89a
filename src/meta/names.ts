/**
 * Names Ferry reserves on the clusters it works with.
 */

/**
 * The database on the destination where Ferry keeps everything it needs to continue after a
 * crash (start options, partition table, resume token, characteristics to restore at commit).
 * It is never synced and no filter can select it; the name says whose it is so that no
 * application database collides with it (mongosync's own is `mongosync_reserved_for_internal_use`).
 */
export const METADATA_DATABASE = 'ferry_reserved_for_internal_use';

/** Databases that belong to the server itself and are never synced. */
export const SYSTEM_DATABASES: readonly string[] = Object.freeze(['admin', 'local', 'config']);

/** Collections whose names start with this belong to the server and are never synced. */
export const SYSTEM_COLLECTION_PREFIX = 'system.';

/**
 * Collections of the metadata database. Several instances (`--id`) may share it: every document
 * names its instance.
 * - `resume`: one document per instance: state, phase and its transitions, the start request,
 *   the start time T0 (see resume.ts).
 * - `namespaces`: one document per synced collection or view: source options, destination
 *   creation, indexes and the temporary changes commit must undo (see namespaces.ts).
 * - `partitions`: the copy's partition table, one document per `_id` range (see partitions.ts).
 * - `changeStream`: one document per instance: the resume token of change-event application and
 *   what it has done that a restart must know (see src/cea/checkpoint.ts).
 * - `tombstones`: documents deleted by change-event application while the initial copy could
 *   still write them back (see src/cea/tombstones.ts).
 * - `commit`: one document per instance: the commit point and each commit step done (see
 *   src/commit/commit-store.ts).
 */
export const METADATA_COLLECTIONS = Object.freeze({
  resume: 'resume',
  namespaces: 'namespaces',
  partitions: 'partitions',
  changeStream: 'changeStream',
  tombstones: 'tombstones',
  commit: 'commit',
});
