/**
 * `_mergeAuthzCollections` (admin): mongorestore's way of restoring users. It uploads a dump's
 * `admin.system.users` documents to a temporary collection and asks the server to merge them:
 * `{_mergeAuthzCollections: 1, tempUsersCollection: 'admin.tempusers', tempRolesCollection?,
 * drop, db}`. Users of `db` (all databases when `db` is empty) are replaced by the temporary
 * collection's when `drop` is set, else the temporary ones are added (a user of the same name is
 * replaced). User-defined roles do not exist here: a non-empty roles collection is refused.
 */
import { ServerError } from '../errors.js';
import { accessControlOf } from '../auth/access.js';
import { Args } from './args.js';
import { defineCommand } from './registry.js';
import { promoted } from '../raw.js';
import { BSON } from 'bson';

function tempCollection(instance: Parameters<typeof accessControlOf>[0], ns: string | undefined) {
  if (ns === undefined) return undefined;
  const dot = ns.indexOf('.');
  if (dot <= 0 || ns.slice(0, dot) !== 'admin') {
    throw new ServerError('BadValue', `Temporary collections must be in the admin database: ${ns}`);
  }
  return instance.catalog.collection('admin', ns.slice(dot + 1));
}

defineCommand({
  name: '_mergeAuthzCollections',
  adminOnly: true,
  handler: ({ instance, body }) => {
    const args = new Args('_mergeAuthzCollections', body);
    const usersNs = args.string('tempUsersCollection');
    const rolesNs = args.string('tempRolesCollection');
    if (usersNs === undefined && rolesNs === undefined) {
      throw new ServerError('BadValue', 'Must provide at least one of "tempUsersCollection" and "tempRolescollection"');
    }
    const drop = args.boolean('drop') ?? false;
    const db = args.string('db') ?? '';
    const roles = tempCollection(instance, rolesNs);
    if (roles && roles.count > 0) throw new ServerError('NotImplemented', 'The test cluster has no user-defined roles to restore');
    const temp = tempCollection(instance, usersNs);
    if (usersNs === undefined) return {};
    const store = accessControlOf(instance).users;
    const incoming = temp ? [...temp.byRid.values()].map((entry) => BSON.deserialize(entry.raw, promoted)) : [];
    const inScope = (userDb: unknown) => db === '' || userDb === db;
    if (drop) {
      const keep = new Set(incoming.filter((u) => inScope(u.db)).map((u) => `${String(u.db)}.${String(u.user)}`));
      for (const user of store.list()) if (inScope(user.db) && !keep.has(`${user.db}.${user.user}`)) store.remove(user.db, user.user);
    }
    for (const doc of incoming) if (inScope(doc.db)) store.restore(doc);
    return {};
  },
});
