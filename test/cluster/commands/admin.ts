/**
 * `setUserWriteBlockMode` (admin only): while on, user writes (inserts, updates, deletes and
 * DDL outside admin/config/local) fail with UserWritesBlocked (371) unless the writer holds
 * `bypassWriteBlockingMode` (see auth/roles.ts; with access control off everyone holds it,
 * as on mongod). The state shows in `serverStatus().repl.userWriteBlockMode` (1 off, 2 on).
 */
import { ServerError } from '../errors.js';
import { Args, bsonTypeName } from './args.js';
import { defineCommand } from './registry.js';

defineCommand({
  name: 'setUserWriteBlockMode',
  adminOnly: true,
  handler: ({ instance, body }) => {
    const args = new Args('setUserWriteBlockMode', body);
    if (!args.has('global')) {
      throw new ServerError('IDLFailedToParse', "BSON field 'setUserWriteBlockMode.global' is missing but a required field");
    }
    const global = body.global;
    if (typeof global !== 'boolean') {
      throw new ServerError(
        'TypeMismatch',
        `BSON field 'setUserWriteBlockMode.global' is the wrong type '${bsonTypeName(global)}', expected type 'bool'`,
      );
    }
    instance.userWritesBlocked = global;
    return {};
  },
});
