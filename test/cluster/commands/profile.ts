/**
 * The database profiler: the `profile` command and `<db>.system.profile`, as mongod 7.0 keeps them.
 * `{profile: -1}` reads the settings; `{profile: 0 | 1 | 2, slowms?, sampleRate?, filter?}` sets
 * the database's level (and filter) and the node's `slowms`/`sampleRate` (mongod keeps those two
 * process-wide) and replies with the previous settings (`was`, `slowms`, `sampleRate`). Level 1
 * records operations taking at least `slowms` (100 by default), level 2 every operation, either
 * only when it passes `filter` and the sample. Enabling it creates `system.profile`, capped at
 * 1 MiB, whose documents carry no `_id` and reach no oplog (mongod does not replicate them).
 *
 * Recorded, with mongod's `op` names and the fields of its profile documents that the test
 * cluster can know: `query` (find), `getmore`, `insert` (`ninserted`), `update` and `remove` (one
 * document per statement: `nMatched`/`nModified` or `ndeleted` when the command had one
 * statement), and `command` for the rest; `millis`, `ts`, `client`, `user`, `allUsers`,
 * `responseLength`, `protocol`, the error of a failed one. Handshake and authentication commands
 * are not recorded, nor operations on `system.profile` itself.
 */
import { BSON } from 'bson';
import { ServerError } from '../errors.js';
import type { Instance } from '../instance.js';
import type { Collection } from '../storage/collection.js';
import { compileFilter } from '../collation/query.js';
import { promoted, RawDocArray, serialize } from '../raw.js';
import { Args } from './args.js';
import { type CommandContext, type CommandReply, defineCommand } from './registry.js';

/** mongod's profile collection size (1 MiB). */
const PROFILE_COLLECTION_BYTES = 1024 * 1024;

interface ProfileState {
  /** Level and filter per database. */
  databases: Map<string, { level: number; filter?: Record<string, unknown> }>;
  slowms: number;
  sampleRate: number;
  /** Identities of the stored profile documents (they have no `_id`). */
  next: number;
}

const states = new WeakMap<Instance, ProfileState>();

function stateOf(instance: Instance): ProfileState {
  let state = states.get(instance);
  if (!state) states.set(instance, (state = { databases: new Map(), slowms: 100, sampleRate: 1, next: 1 }));
  return state;
}

/** Commands mongod does not profile here: the handshake and authentication. */
const UNPROFILED = new Set(['hello', 'isMaster', 'ismaster', 'saslStart', 'saslContinue', 'logout', 'ping', 'profile', 'endSessions']);

function profileCollection(instance: Instance, db: string): Collection {
  const existing = instance.catalog.get(db, 'system.profile');
  if (existing?.kind === 'collection') return existing;
  return instance.catalog.addCollection(db, 'system.profile', { capped: true, size: PROFILE_COLLECTION_BYTES });
}

function countOf(value: unknown): number | undefined {
  return typeof value === 'number' ? value : undefined;
}

/** The operation documents mongod would record for one command. */
function operations(ctx: CommandContext, name: string, reply: CommandReply): Record<string, unknown>[] {
  const { body, db } = ctx;
  const target = typeof body[name] === 'string' ? (body[name] as string) : undefined;
  const ns = target ? `${db}.${target}` : `${db}.$cmd`;
  const cursor = reply.cursor as { firstBatch?: RawDocArray; nextBatch?: RawDocArray; id?: unknown } | undefined;
  const batch = cursor?.firstBatch ?? cursor?.nextBatch;
  const returned = batch instanceof RawDocArray ? batch.docs.length : undefined;
  const statements = (field: string): Record<string, unknown>[] =>
    ctx.sequences.get(field)?.map((raw) => BSON.deserialize(raw, promoted)) ?? (body[field] as Record<string, unknown>[] | undefined) ?? [];
  switch (name) {
    case 'find':
      return [
        {
          op: 'query',
          ns,
          command: body,
          nreturned: returned,
          cursorExhausted: Number(cursor?.id ?? 0) === 0 || undefined,
          planSummary: 'COLLSCAN',
        },
      ];
    case 'getMore':
      return [{ op: 'getmore', ns: `${db}.${String(body.collection)}`, command: body, nreturned: returned }];
    case 'insert': {
      // The documents are not part of the recorded command.
      const shown = Object.fromEntries(Object.entries(body).filter(([field]) => field !== 'documents'));
      return [{ op: 'insert', ns, command: shown, ninserted: countOf(reply.n) }];
    }
    case 'update': {
      const list = statements('updates');
      return list.map((statement) => ({
        op: 'update',
        ns,
        command: statement,
        ...(list.length === 1 ? { nMatched: countOf(reply.n), nModified: countOf(reply.nModified) } : {}),
      }));
    }
    case 'delete': {
      const list = statements('deletes');
      return list.map((statement) => ({
        op: 'remove',
        ns,
        command: statement,
        ...(list.length === 1 ? { ndeleted: countOf(reply.n) } : {}),
      }));
    }
    default:
      return [{ op: 'command', ns, command: body, ...(returned !== undefined ? { nreturned: returned } : {}) }];
  }
}

/** Records a finished command in its database's profile, when the level and settings say so. */
function record(ctx: CommandContext, name: string, reply: CommandReply, millis: number): void {
  const state = stateOf(ctx.instance);
  const settings = state.databases.get(ctx.db);
  if (!settings || settings.level === 0 || UNPROFILED.has(name)) return;
  if (typeof ctx.body[name] === 'string' && ctx.body[name] === 'system.profile') return;
  if (settings.level === 1 && millis < state.slowms) return;
  if (state.sampleRate < 1 && Math.random() >= state.sampleRate) return;
  const user = ctx.connection.user;
  const tail: Record<string, unknown> = {
    numYield: 0,
    locks: {},
    flowControl: {},
    responseLength: serialize(reply as Record<string, unknown>).length,
    protocol: 'op_msg',
    millis: Math.round(millis),
    ts: new Date(),
    client: '127.0.0.1',
    allUsers: user ? [{ user: user.slice(0, user.lastIndexOf('@')), db: user.slice(user.lastIndexOf('@') + 1) }] : [],
    user: user ?? '',
  };
  if (reply.ok === 0) Object.assign(tail, { ok: 0, errMsg: reply.errmsg, errName: reply.codeName, errCode: reply.code });
  const filter = settings.filter ? compileFilter(settings.filter, undefined, { scriptEnabled: false }) : undefined;
  const collection = profileCollection(ctx.instance, ctx.db);
  for (const operation of operations(ctx, name, reply)) {
    const doc = { ...operation, ...tail };
    for (const key of Object.keys(doc)) if (doc[key] === undefined) delete doc[key];
    if (filter && !filter.test(doc)) continue;
    collection.insert(serialize(doc), state.next++);
  }
}

function checkLevel(value: unknown): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < -1 || value > 2) {
    throw new ServerError('BadValue', `Invalid profiling level: ${String(value)}`);
  }
  return value;
}

defineCommand({
  name: 'profile',
  handler: ({ instance, body, db }) => {
    const args = new Args('profile', body);
    const level = checkLevel(body.profile);
    if (db === 'local' && level > 0) throw new ServerError('IllegalOperation', "Cannot profile the 'local' database");
    const state = stateOf(instance);
    const current = state.databases.get(db) ?? { level: 0 };
    const reply: Record<string, unknown> = { was: current.level, slowms: state.slowms, sampleRate: state.sampleRate };
    if (current.filter) reply.filter = current.filter;
    if (level === -1) return reply;
    const slowms = args.number('slowms');
    const sampleRate = args.number('sampleRate');
    if (sampleRate !== undefined && (sampleRate < 0 || sampleRate > 1))
      throw new ServerError('BadValue', "'sampleRate' must be between 0.0 and 1.0 inclusive");
    const filter = body.filter === 'unset' ? undefined : (args.object('filter') ?? current.filter);
    if (slowms !== undefined) state.slowms = Math.trunc(slowms);
    if (sampleRate !== undefined) state.sampleRate = sampleRate;
    state.databases.set(db, { level, ...(filter ? { filter } : {}) });
    if (level > 0) {
      profileCollection(instance, db);
      if (!instance.commandHooks.some((hook) => hook.after === record)) instance.commandHooks.push({ after: record });
    }
    return reply;
  },
});
