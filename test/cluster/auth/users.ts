/**
 * The node's users: SCRAM credentials and built-in roles, mirrored into `admin.system.users`
 * as mongod stores them (`{_id: 'db.user', userId, user, db, credentials, roles}`).
 */
import { type Binary, BSON, UUID } from 'bson';
import { ServerError } from '../errors.js';
import type { Catalog } from '../storage/catalog.js';
import type { Collection } from '../storage/collection.js';
import { storeInternal } from '../storage/system-collections.js';
import { isBuiltinRole, type RoleName } from './roles.js';
import { makeCredential, SCRAM_MECHANISMS, type ScramCredential, type ScramMechanism } from './scram.js';

/** A user as given to `startCluster({users})`, a users file or `createUser`. */
export interface UserSpec {
  /** User name. */
  user: string;
  /** Authentication database (default `admin`). */
  db?: string;
  /** Password (SCRAM credentials are derived from it; it is not kept). */
  password: string;
  /** Built-in roles: a name (a role on the user's database) or `{role, db}`. Default none. */
  roles?: (string | RoleName)[];
  /** SCRAM mechanisms to create credentials for (default both). */
  mechanisms?: ScramMechanism[];
}

export interface StoredUser {
  user: string;
  db: string;
  userId: UUID;
  roles: RoleName[];
  credentials: Partial<Record<ScramMechanism, ScramCredential>>;
}

/** `db.user` key of a user. */
export function userKey(db: string, user: string): string {
  return `${db}.${user}`;
}

export function normalizeRoles(roles: unknown, defaultDb: string): RoleName[] {
  if (roles === undefined) return [];
  if (!Array.isArray(roles)) throw new ServerError('TypeMismatch', "BSON field 'roles' is the wrong type, expected type 'array'");
  return roles.map((r) => {
    const role = typeof r === 'string' ? { role: r, db: defaultDb } : (r as RoleName);
    if (typeof role?.role !== 'string' || typeof role.db !== 'string')
      throw new ServerError('BadValue', 'Roles must be strings or {role, db} documents');
    if (!isBuiltinRole(role)) throw new ServerError('RoleNotFound', `Could not find role: ${role.role}@${role.db}`);
    return { role: role.role, db: role.db };
  });
}

export class UserStore {
  private readonly users = new Map<string, StoredUser>();

  constructor(private readonly catalog: Catalog) {
    // A node restarted on its data directory finds its users where mongod keeps them.
    const stored = catalog.get('admin', 'system.users');
    if (stored?.kind !== 'collection') return;
    for (const { raw } of stored.byRid.values()) {
      const doc = BSON.deserialize(raw) as Omit<StoredUser, 'userId'> & { _id: string; userId: UUID | Binary };
      const userId = doc.userId instanceof UUID ? doc.userId : new UUID(doc.userId.buffer);
      this.users.set(doc._id, { user: doc.user, db: doc.db, userId, roles: doc.roles, credentials: doc.credentials });
    }
  }

  get size(): number {
    return this.users.size;
  }

  get(db: string, user: string): StoredUser | undefined {
    return this.users.get(userKey(db, user));
  }

  list(db?: string): StoredUser[] {
    return [...this.users.values()].filter((u) => db === undefined || u.db === db);
  }

  private systemUsers(): Collection {
    const existing = this.catalog.get('admin', 'system.users');
    if (existing?.kind === 'collection') return existing;
    const created = this.catalog.addCollection('admin', 'system.users', {});
    const version = this.catalog.get('admin', 'system.version');
    if (version?.kind === 'collection' && !version.get('authSchema')) storeInternal(version, { _id: 'authSchema', currentVersion: 5 });
    return created;
  }

  add(spec: UserSpec): StoredUser {
    const db = spec.db ?? 'admin';
    if (typeof spec.user !== 'string' || spec.user.length === 0)
      throw new ServerError('BadValue', "User document needs 'user' field to be non-empty");
    if (this.get(db, spec.user)) throw new ServerError(51003, `User "${spec.user}@${db}" already exists`);
    if (typeof spec.password !== 'string' || spec.password.length === 0) {
      throw new ServerError(
        'BadValue',
        "Must provide a 'pwd' field for all user documents, except those with '$external' as the user's source db",
      );
    }
    const mechanisms = spec.mechanisms ?? SCRAM_MECHANISMS;
    for (const m of mechanisms) {
      if (!SCRAM_MECHANISMS.includes(m)) throw new ServerError('BadValue', `Unknown auth mechanism '${m}'`);
    }
    const stored: StoredUser = {
      user: spec.user,
      db,
      userId: new UUID(),
      roles: normalizeRoles(spec.roles, db),
      credentials: Object.fromEntries(mechanisms.map((m) => [m, makeCredential(m, spec.user, spec.password)])),
    };
    this.users.set(userKey(db, spec.user), stored);
    storeInternal(this.systemUsers(), {
      _id: userKey(db, spec.user),
      userId: stored.userId,
      user: stored.user,
      db,
      credentials: stored.credentials,
      roles: stored.roles,
    });
    return stored;
  }

  /**
   * Puts back a user as `admin.system.users` stores it (credentials already derived: a restore),
   * replacing one of the same name.
   */
  restore(doc: Record<string, unknown>): StoredUser {
    const db = doc.db;
    const user = doc.user;
    if (typeof db !== 'string' || typeof user !== 'string' || user.length === 0) {
      throw new ServerError('BadValue', "User documents need string 'user' and 'db' fields");
    }
    const credentials = (doc.credentials ?? {}) as Partial<Record<ScramMechanism, ScramCredential>>;
    for (const mechanism of Object.keys(credentials)) {
      if (!SCRAM_MECHANISMS.includes(mechanism as ScramMechanism))
        throw new ServerError('BadValue', `Unknown auth mechanism '${mechanism}'`);
    }
    this.remove(db, user);
    const stored: StoredUser = {
      user,
      db,
      userId: (doc.userId as UUID | undefined) ?? new UUID(),
      roles: normalizeRoles(doc.roles ?? [], db),
      credentials,
    };
    this.users.set(userKey(db, user), stored);
    storeInternal(this.systemUsers(), {
      _id: userKey(db, user),
      userId: stored.userId,
      user,
      db,
      credentials,
      roles: stored.roles,
    });
    return stored;
  }

  remove(db: string, user: string): boolean {
    const key = userKey(db, user);
    if (!this.users.delete(key)) return false;
    const collection = this.catalog.get('admin', 'system.users');
    if (collection?.kind === 'collection') {
      const entry = collection.get(key);
      if (entry) collection.remove(entry);
    }
    return true;
  }
}
