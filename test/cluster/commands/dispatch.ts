/**
 * Runs one command request: finds the command, builds its context, turns errors into mongod's
 * `{ok: 0, errmsg, code, codeName}` replies and stamps `$clusterTime` / `operationTime`.
 */
import { Long, type Timestamp } from 'bson';
import { ServerError } from '../errors.js';
import type { Instance } from '../instance.js';
import { type CommandContext, type CommandReply, type ConnectionInfo, lookupCommand } from './registry.js';
import { decodeBody } from '../wire.js';
import { checkKnownFields } from './strict.js';

/** Fields any command may carry that are not its own arguments (generic arguments). */
export const GENERIC_ARGUMENTS = new Set([
  '$db',
  'lsid',
  '$clusterTime',
  'txnNumber',
  'autocommit',
  'startTransaction',
  '$readPreference',
  'readConcern',
  'writeConcern',
  'apiVersion',
  'apiStrict',
  'apiDeprecationErrors',
  'comment',
  'maxTimeMS',
  '$audit',
  '$client',
  'mayBypassWriteBlocking',
]);

/**
 * Hook through which sessions and transactions wrap command execution (see transactions.ts);
 * by default the command simply runs.
 */
export type CommandWrapper = (ctx: CommandContext, name: string, run: () => Promise<CommandReply>) => Promise<CommandReply>;
let wrapper: CommandWrapper = (_ctx, _name, run) => run();
/** Wrappers that run inside the base one (sessions), in the order added (sharding/). */
const innerWrappers: CommandWrapper[] = [];

export function setCommandWrapper(w: CommandWrapper): void {
  wrapper = w;
}

/** Adds a wrapper that runs inside the session wrapper, around the command itself. */
export function addInnerCommandWrapper(w: CommandWrapper): void {
  innerWrappers.push(w);
}

function runWrapped(ctx: CommandContext, name: string, run: () => Promise<CommandReply>, from = 0): Promise<CommandReply> {
  const inner = innerWrappers[from];
  return inner ? inner(ctx, name, () => runWrapped(ctx, name, run, from + 1)) : run();
}

/** Executes a request body and returns the reply document (never throws). */
export async function dispatch(
  instance: Instance,
  connection: ConnectionInfo,
  raw: Buffer,
  sequences: Map<string, Buffer[]>,
  bodyOverride?: Record<string, unknown>,
): Promise<CommandReply> {
  let reply: CommandReply;
  let ctx: CommandContext | undefined;
  let started = 0;
  let counted: string | undefined;
  try {
    const body = bodyOverride ?? decodeBody(raw);
    // Document sequences stand for array fields of the body.
    const name = Object.keys(body)[0];
    if (name === undefined) throw new ServerError('FailedToParse', 'Empty command');
    if (typeof body.$db !== 'string') throw new ServerError(40571, 'OP_MSG requests require a $db argument');
    const db = body.$db;
    // The hybrid logical clock: a node's time follows every cluster time it hears of.
    const gossiped = (body.$clusterTime as { clusterTime?: Timestamp } | undefined)?.clusterTime;
    if (gossiped?._bsontype === 'Timestamp') instance.clock.advanceTo(gossiped);
    const spec = lookupCommand(name);
    if (!spec) {
      instance.counters.unknownCommands++;
      throw new ServerError('CommandNotFound', `no such command: '${name}'`);
    }
    counted = spec.name;
    instance.counters.countCommand(name, spec.name, body, sequences);
    if (spec.adminOnly && db !== 'admin') {
      throw new ServerError('Unauthorized', `${name} may only be run against the admin database.`);
    }
    checkKnownFields(name, body);
    const lsid = body.lsid as { id: never } | undefined;
    const txnNumber = body.txnNumber === undefined ? undefined : Long.fromValue(body.txnNumber as number);
    ctx = {
      instance,
      db,
      body,
      raw,
      sequences,
      op: { lsid, txnNumber, bypassWriteBlocking: instance.bypassesWriteBlocking?.(connection) ?? true },
      connection,
    };
    started = performance.now();
    // mongod evaluates the failCommand fail point before access checks (ExecCommandDatabase).
    for (const hook of instance.commandHooks) await hook.before?.(ctx, name);
    if (!spec.noAuth) instance.authorize?.(connection, name, db, body, sequences);
    const context = ctx;
    reply = await wrapper(context, name, () => runWrapped(context, name, async () => spec.handler(context)));
    if (reply.ok === undefined) reply.ok = 1;
  } catch (e) {
    reply = e instanceof ServerError ? e.toReply() : new ServerError('InternalError', String((e as Error)?.message ?? e)).toReply();
  }
  if (ctx) {
    const name = Object.keys(ctx.body)[0];
    try {
      const millis = performance.now() - started;
      for (const hook of instance.commandHooks) await hook.after?.(ctx, name, reply, millis);
    } catch (e) {
      reply = e instanceof ServerError ? e.toReply() : new ServerError('InternalError', String((e as Error)?.message ?? e)).toReply();
    }
  }
  if (counted !== undefined && !reply.ok) instance.counters.commandFailed(counted);
  const time = instance.clusterTime();
  reply.$clusterTime = {
    clusterTime: time,
    signature: { hash: Buffer.alloc(20), keyId: Long.fromNumber(0) },
  };
  reply.operationTime = time;
  return reply;
}
