/**
 * User write blocking (`setUserWriteBlockMode`, MongoDB 6.0+). While it is on, writes from users
 * without the `bypassWriteBlockingMode` privilege fail with UserWritesBlocked; Ferry's own user
 * must hold that privilege (the built-in `restore` role, hence `root`, does), or Ferry could not
 * write either. mongosync's `enableUserWriteBlocking`:
 * - `destinationOnly` (default) and `sourceAndDestination`: the destination is blocked for the
 *   whole sync (from start until the commit completes), so no application writes there early;
 * - `sourceAndDestination`: the source is blocked too when commit is received, so no write can
 *   come after the commit point (it stays blocked after commit: the application has moved);
 * - `none`: nothing is blocked.
 */
import type { MongoClient } from 'mongodb';
import type { WriteBlocking } from '../domain/start-request.js';

/** Turns user write blocking on or off on a whole cluster. Idempotent. */
export async function setUserWriteBlocking(client: MongoClient, on: boolean): Promise<void> {
  await client.db('admin').command({ setUserWriteBlockMode: 1, global: on, writeConcern: { w: 'majority' } });
}

/** Whether a mode blocks the destination during the sync. */
export function blocksDestination(mode: WriteBlocking): boolean {
  return mode !== 'none';
}

/** Whether a mode blocks the source once commit is received. */
export function blocksSource(mode: WriteBlocking): boolean {
  return mode === 'sourceAndDestination';
}

interface Privilege {
  resource?: { cluster?: boolean };
  actions?: string[];
}

/**
 * The privileges write blocking needs that the connection's user lacks (none when the cluster
 * runs without access control, where every client bypasses). Needs `connectionStatus`, which
 * every authenticated user may run.
 */
export async function missingWriteBlockingPrivileges(client: MongoClient): Promise<string[]> {
  const status = await client.db('admin').command({ connectionStatus: 1, showPrivileges: true });
  const info = (status.authInfo ?? {}) as { authenticatedUsers?: unknown[]; authenticatedUserPrivileges?: Privilege[] };
  if ((info.authenticatedUsers ?? []).length === 0) return [];
  const clusterActions = new Set(
    (info.authenticatedUserPrivileges ?? []).filter((p) => p.resource?.cluster === true).flatMap((p) => p.actions ?? []),
  );
  return ['bypassWriteBlockingMode', 'setUserWriteBlockMode'].filter((action) => !clusterActions.has(action));
}
