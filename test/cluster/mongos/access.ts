/**
 * Access control on the router. The router keeps a private node (never listening) that holds
 * its users — the cluster's users, given at start — and runs the authentication commands
 * (`saslStart`, `saslContinue`, `logout`, `connectionStatus`, user commands) with the
 * replica-set server's own code; other commands are authorized with the same privilege checks.
 * Towards the shards the router authenticates as the internal user, and passes each client's
 * right to bypass write blocking along as `mayBypassWriteBlocking`, as mongos does.
 */
import { Instance } from '../instance.js';
import { installAccessControl, type AccessOptions } from '../auth/access.js';
import { dispatch } from '../commands/dispatch.js';
import type { ConnectionInfo } from '../commands/registry.js';
import { defineRouterCommand } from './commands.js';
// The private node runs the replica-set server's own command code (the auth commands).
import '../commands/index.js';
import type { Router } from './router.js';

export type RouterAccessOptions = AccessOptions;

/** Sets up the router's private node, users and access control. */
export function installRouterAccess(router: Router, options: RouterAccessOptions): void {
  const local = new Instance({ replSetName: 'mongos', noopIntervalMs: 0, ttlIntervalMs: 0 });
  router.local = local;
  const control = installAccessControl(local, options);
  if (control.enabled) {
    router.authorize = (connection, command, db, body, sequences) =>
      control.authorize(connection as ConnectionInfo, command, db, body, sequences);
    router.mayBypassWriteBlocking = (connection) => control.mayBypassWriteBlocking(connection as ConnectionInfo);
  }
}

/** Commands the router's private node answers for the router. */
const LOCAL_COMMANDS = ['saslStart', 'saslContinue', 'logout', 'connectionStatus', 'createUser', 'dropUser', 'usersInfo'];

for (const name of LOCAL_COMMANDS) {
  defineRouterCommand({
    name,
    noAuth: name === 'saslStart' || name === 'saslContinue' || name === 'logout' || name === 'connectionStatus',
    handler: async (ctx) => {
      const reply = await dispatch(ctx.router.local, ctx.connection as ConnectionInfo, ctx.raw, ctx.sequences);
      delete reply.$clusterTime;
      delete reply.operationTime;
      return reply;
    },
  });
}
