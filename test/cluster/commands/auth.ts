/**
 * Authentication and user commands: `saslStart`/`saslContinue` (SCRAM-SHA-1, SCRAM-SHA-256),
 * `logout`, `connectionStatus`, `createUser`, `dropUser`, `usersInfo`.
 * Speculative authentication in `hello` is not offered; the driver then runs saslStart itself.
 */
import { Binary } from 'bson';
import { ServerError } from '../errors.js';
import type { Instance } from '../instance.js';
import { accessControlOf } from '../auth/access.js';
import { ScramConversation, ScramError, SCRAM_MECHANISMS, type ScramMechanism } from '../auth/scram.js';
import { normalizeRoles } from '../auth/users.js';
import { Args } from './args.js';
import { defineCommand, type ConnectionInfo } from './registry.js';

/** A SASL conversation in progress on a connection. */
interface SaslState {
  conversation: ScramConversation;
  db: string;
  skipEmptyExchange: boolean;
  step: 'final' | 'empty';
}

const SASL_STATE = 'auth.sasl';
const CONVERSATION_ID = 1;

function payloadOf(body: Record<string, unknown>): Buffer {
  const payload = body.payload;
  if (payload instanceof Binary) return Buffer.from(payload.buffer.subarray(0, payload.position));
  if (typeof payload === 'string') return Buffer.from(payload, 'utf8');
  throw new ServerError('TypeMismatch', "BSON field 'payload' is the wrong type, expected types '[string, binData]'");
}

function authenticationFailed(): ServerError {
  return new ServerError('AuthenticationFailed', 'Authentication failed.');
}

defineCommand({
  name: 'saslStart',
  noAuth: true,
  handler: ({ instance, body, db, connection }) => {
    const args = new Args('saslStart', body);
    const mechanism = args.requiredString('mechanism');
    if (!SCRAM_MECHANISMS.includes(mechanism as ScramMechanism)) {
      throw new ServerError('MechanismUnavailable', `Received authentication for mechanism ${mechanism} which is unknown or not enabled`);
    }
    const access = accessControlOf(instance);
    const conversation = new ScramConversation(mechanism as ScramMechanism);
    let payload: Buffer;
    try {
      payload = conversation.start(payloadOf(body), (user) => access.users.get(db, user)?.credentials[mechanism as ScramMechanism]);
    } catch (e) {
      if (e instanceof ScramError) throw authenticationFailed();
      throw e;
    }
    const options = (args.object('options') ?? {}) as { skipEmptyExchange?: boolean };
    const state: SaslState = { conversation, db, skipEmptyExchange: options.skipEmptyExchange === true, step: 'final' };
    connection.state.set(SASL_STATE, state);
    return { conversationId: CONVERSATION_ID, done: false, payload: new Binary(payload) };
  },
});

defineCommand({
  name: 'saslContinue',
  noAuth: true,
  handler: ({ instance, body, connection }) => {
    const state = connection.state.get(SASL_STATE) as SaslState | undefined;
    if (!state || Number(body.conversationId) !== CONVERSATION_ID) {
      throw new ServerError('ProtocolError', 'No SASL session state found');
    }
    const access = accessControlOf(instance);
    const login = () => {
      connection.state.delete(SASL_STATE);
      const user = access.users.get(state.db, state.conversation.user);
      if (!user) throw authenticationFailed();
      access.login(connection, user);
    };
    if (state.step === 'empty') {
      login();
      return { conversationId: CONVERSATION_ID, done: true, payload: new Binary(Buffer.alloc(0)) };
    }
    let payload: Buffer;
    try {
      payload = state.conversation.finish(payloadOf(body));
    } catch (e) {
      connection.state.delete(SASL_STATE);
      if (e instanceof ScramError) throw authenticationFailed();
      throw e;
    }
    if (state.skipEmptyExchange) {
      login();
      return { conversationId: CONVERSATION_ID, done: true, payload: new Binary(payload) };
    }
    state.step = 'empty';
    return { conversationId: CONVERSATION_ID, done: false, payload: new Binary(payload) };
  },
});

defineCommand({
  name: 'logout',
  noAuth: true,
  handler: ({ instance, connection }) => {
    accessControlOf(instance).logout(connection);
    return {};
  },
});

function authInfo(instance: Instance, connection: ConnectionInfo, showPrivileges: boolean): Record<string, unknown> {
  const access = accessControlOf(instance);
  const user = access.userOf(connection);
  const info: Record<string, unknown> = {
    authenticatedUsers: user ? [{ user: user.user, db: user.db }] : [],
    authenticatedUserRoles: user ? user.roles : [],
  };
  if (showPrivileges) info.authenticatedUserPrivileges = access.privilegesOf(connection);
  return info;
}

defineCommand({
  name: 'connectionStatus',
  noAuth: true,
  handler: ({ instance, body, connection }) => ({
    authInfo: authInfo(instance, connection, new Args('connectionStatus', body).boolean('showPrivileges') ?? false),
  }),
});

defineCommand({
  name: 'createUser',
  handler: ({ instance, body, db }) => {
    const args = new Args('createUser', body);
    const user = args.requiredString('createUser');
    if (!args.has('roles')) throw new ServerError('IDLFailedToParse', "BSON field 'createUser.roles' is missing but a required field");
    const mechanisms = args.array('mechanisms') as ScramMechanism[] | undefined;
    accessControlOf(instance).users.add({
      user,
      db,
      password: args.string('pwd') ?? '',
      roles: normalizeRoles(body.roles, db),
      mechanisms,
    });
    return {};
  },
});

defineCommand({
  name: 'dropUser',
  handler: ({ instance, body, db }) => {
    const user = new Args('dropUser', body).requiredString('dropUser');
    if (!accessControlOf(instance).users.remove(db, user)) throw new ServerError('UserNotFound', `User '${user}@${db}' not found`);
    return {};
  },
});

defineCommand({
  name: 'usersInfo',
  handler: ({ instance, body, db }) => {
    const store = accessControlOf(instance).users;
    const which = body.usersInfo;
    let users = store.list(db);
    if (typeof which === 'string') users = users.filter((u) => u.user === which);
    else if (Array.isArray(which) || (typeof which === 'object' && which !== null && !('forAllDBs' in which))) {
      const names = (Array.isArray(which) ? which : [which]).map((w) =>
        typeof w === 'string' ? { user: w, db } : (w as { user: string; db: string }),
      );
      users = names.flatMap((n) => store.get(n.db ?? db, n.user) ?? []);
    } else if (typeof which === 'object' && which !== null && (which as { forAllDBs?: boolean }).forAllDBs) {
      users = store.list();
    }
    return {
      users: users.map((u) => ({
        _id: `${u.db}.${u.user}`,
        userId: u.userId,
        user: u.user,
        db: u.db,
        roles: u.roles,
        mechanisms: SCRAM_MECHANISMS.filter((m) => u.credentials[m]),
      })),
    };
  },
});
