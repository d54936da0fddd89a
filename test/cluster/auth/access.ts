/**
 * Access control for one node. Every node keeps a user store (createUser works with or without
 * access control, as on mongod); when access control is on (`auth`, or users given at start)
 * commands need an authenticated user holding the privileges the command requires, and only
 * users holding `bypassWriteBlockingMode` bypass user write blocking. With access control off
 * every client may do everything and bypasses write blocking, exactly as mongod with
 * authorization disabled (AuthorizationSession: "isAuthEnabled() ? ... : true").
 */
import { formatDocument } from '../bson-text.js';
import { decodeElement, findElement } from '../raw.js';
import { ServerError } from '../errors.js';
import type { Instance } from '../instance.js';
import type { ConnectionInfo } from '../commands/registry.js';
import { requirementsOf } from './actions.js';
import { allows, privilegesOf, type Privilege } from './roles.js';
import { UserStore, type StoredUser, type UserSpec } from './users.js';
import { SCRAM_MECHANISMS } from './scram.js';

export interface AccessOptions {
  /** Users that exist when the node starts. Giving any turns access control on. */
  users?: UserSpec[];
  /**
   * Access control (mongod's `--auth`). Default: on when `users` are given, else off. On with no
   * users, only the localhost exception applies: an unauthenticated client may create the first user.
   */
  auth?: boolean;
}

/** The authenticated user of a connection, kept in its state map. */
const USER_STATE = 'auth.user';

export class AccessControl {
  readonly users: UserStore;

  constructor(
    instance: Instance,
    readonly enabled: boolean,
  ) {
    this.users = new UserStore(instance.catalog);
  }

  /** The user a connection authenticated as, if any (and if it still exists). */
  userOf(connection: ConnectionInfo): StoredUser | undefined {
    const key = connection.state.get(USER_STATE) as { db: string; user: string } | undefined;
    return key ? this.users.get(key.db, key.user) : undefined;
  }

  login(connection: ConnectionInfo, user: StoredUser): void {
    connection.state.set(USER_STATE, { db: user.db, user: user.user });
    connection.user = `${user.user}@${user.db}`;
  }

  logout(connection: ConnectionInfo): void {
    connection.state.delete(USER_STATE);
    connection.user = undefined;
  }

  privilegesOf(connection: ConnectionInfo): Privilege[] {
    return this.userOf(connection)?.roles.flatMap(privilegesOf) ?? [];
  }

  /** Throws Unauthorized unless the connection may run `command`. */
  authorize(
    connection: ConnectionInfo,
    command: string,
    db: string,
    body: Record<string, unknown>,
    sequences: Map<string, Buffer[]>,
  ): void {
    const user = this.userOf(connection);
    if (!user) {
      // The localhost exception: with no users at all, the first one may be created.
      if (this.users.size === 0 && command === 'createUser') return;
      throw new ServerError('Unauthorized', `Command ${command} requires authentication`);
    }
    // Update statements sent as a document sequence: only their `upsert` flag matters here.
    const statements = sequences.get('updates')?.map((raw) => {
      const upsert = findElement(raw, 'upsert');
      return { upsert: upsert !== undefined && decodeElement(raw, upsert) === true };
    });
    const requirements = requirementsOf(command, db, body, statements);
    if (!requirements) return;
    const privileges = this.privilegesOf(connection);
    for (const { action, resource } of requirements) {
      if (!allows(privileges, action, resource)) {
        const shown = Object.fromEntries(Object.entries(body).filter(([k]) => k !== '$clusterTime' && k !== 'lsid'));
        throw new ServerError('Unauthorized', `not authorized on ${db} to execute command ${formatDocument(shown)}`);
      }
    }
  }

  /** Whether the user holds `action` on the cluster. */
  allowsOnCluster(connection: ConnectionInfo, action: string): boolean {
    return allows(this.privilegesOf(connection), action, { cluster: true });
  }

  /** Whether the user holds any privilege on a database (what `listDatabases` shows them). */
  hasAnyPrivilegeOn(connection: ConnectionInfo, db: string): boolean {
    return this.privilegesOf(connection).some(({ resource }) => {
      if ('anyResource' in resource) return true;
      if ('cluster' in resource) return false;
      return resource.db === db || (resource.db === '' && db !== 'local' && db !== 'config');
    });
  }

  mayBypassWriteBlocking(connection: ConnectionInfo): boolean {
    return allows(this.privilegesOf(connection), 'bypassWriteBlockingMode', { cluster: true });
  }

  /** `saslSupportedMechs` for `db.user`: the mechanisms the user has credentials for. */
  mechanismsFor(dbUser: string): string[] | undefined {
    const dot = dbUser.indexOf('.');
    if (dot < 0) return undefined;
    const user = this.users.get(dbUser.slice(0, dot), dbUser.slice(dot + 1));
    return user ? SCRAM_MECHANISMS.filter((m) => user.credentials[m]) : undefined;
  }
}

const controls = new WeakMap<Instance, AccessControl>();

/** The access control of a node (every node served by ClusterServer has one). */
export function accessControlOf(instance: Instance): AccessControl {
  let control = controls.get(instance);
  if (!control) {
    control = new AccessControl(instance, false);
    controls.set(instance, control);
  }
  return control;
}

/** Sets up users and, when on, access control for a node. */
export function installAccessControl(instance: Instance, options: AccessOptions): AccessControl {
  const enabled = options.auth ?? (options.users !== undefined && options.users.length > 0);
  const control = new AccessControl(instance, enabled);
  controls.set(instance, control);
  // Users given at start that a data directory already holds are kept as they are.
  for (const spec of options.users ?? []) if (!control.users.get(spec.db ?? 'admin', spec.user)) control.users.add(spec);
  instance.saslMechanismsFor = (dbUser) => control.mechanismsFor(dbUser);
  if (enabled) {
    instance.authorize = (connection, command, db, body, sequences) => control.authorize(connection, command, db, body, sequences);
    instance.bypassesWriteBlocking = (connection) => control.mayBypassWriteBlocking(connection);
  }
  return control;
}
