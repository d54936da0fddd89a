/**
 * mongod's `failCommand` fail point (src/mongo/db/commands.cpp, CommandHelpers::
 * evaluateFailCommandFailPoint; jstests/core/failcommand_failpoint.js), as drivers' test suites
 * drive it:
 *
 *   {configureFailPoint: 'failCommand', mode: 'alwaysOn' | 'off' | {times: n} | {skip: n},
 *    data: {failCommands: [names], errorCode, errorExtraInfo, errorLabels, closeConnection,
 *           blockConnection, blockTimeMS, writeConcernError, appName, threadName, namespace,
 *           failAllCommands}}
 *
 * Before a matching command runs: `blockConnection` delays it by `blockTimeMS`, then
 * `closeConnection` drops the connection without a reply, or `errorCode` fails it with
 * "Failing command via 'failCommand' failpoint" (plus `errorExtraInfo`'s fields). After a matching
 * command that takes a write concern has run, `writeConcernError` is added to its reply as given.
 * Only operations that match and do something count against `times`/`skip`; `configureFailPoint`
 * itself never matches. Error labels are `errorLabels` when given (an empty array: none), else
 * mongod's own rules (src/mongo/db/error_labels.cpp) for the code.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { Long } from 'bson';
import { ServerError } from '../errors.js';
import type { Instance } from '../instance.js';
import { type CommandContext, type CommandHook, type CommandReply, lookupCommand } from '../commands/registry.js';
import { ChangeStreamCursor } from '../changestream/cursor.js';
import { isChangeStreamPipeline } from '../changestream/open.js';
import { codeName, inCategory, isNonResumableChangeStreamError } from './codes.js';
import { FailPoint } from './fail-point.js';
import { supportsWriteConcern } from '../write-concern.js';

const FAILPOINT_MESSAGE = "Failing command via 'failCommand' failpoint";
/** Where a connection's application name (the handshake's `client.application.name`) is kept. */
const APP_NAME_STATE = 'failpoints.appName';

/** The fail points a node has (only `failCommand`); created on first use. */
const failPointsByInstance = new WeakMap<Instance, Map<string, FailPoint>>();

export function failPointsOf(instance: Instance): Map<string, FailPoint> {
  let points = failPointsByInstance.get(instance);
  if (!points) {
    points = new Map([['failCommand', new FailPoint('failCommand')]]);
    failPointsByInstance.set(instance, points);
  }
  return points;
}

/** A command error with mongod's code name for any code (ServerError knows only its own codes). */
export class InjectedError extends ServerError {
  override toReply(): Record<string, unknown> {
    return { ...super.toReply(), codeName: codeName(this.code) };
  }
}

/** The namespace a command acts on, as mongod's `invocation->ns()` gives it for `namespace`. */
function commandNamespace(ctx: CommandContext, name: string): string {
  const target = name === 'getMore' ? ctx.body.collection : ctx.body[name];
  return typeof target === 'string' ? `${ctx.db}.${target}` : `${ctx.db}.$cmd`;
}

/** Whether `data` selects this command on this connection (shouldActivateFailCommandFailPoint). */
function matches(data: Record<string, unknown>, ctx: CommandContext, name: string): boolean {
  if (name === 'configureFailPoint') return false; // banned even when listed
  if (data.threadName !== undefined && data.threadName !== `conn${ctx.connection.id}`) return false;
  if (data.appName !== undefined && data.appName !== ((ctx.connection.state.get(APP_NAME_STATE) as string | undefined) ?? '')) return false;
  if (data.namespace !== undefined && data.namespace !== commandNamespace(ctx, name)) return false;
  if (data.failAllCommands !== undefined) return true;
  const spec = lookupCommand(name);
  const listed = Array.isArray(data.failCommands) ? data.failCommands : [];
  return listed.some((other) => typeof other === 'string' && (other === name || (spec !== undefined && lookupCommand(other) === spec)));
}

function flag(data: Record<string, unknown>, name: string): boolean {
  return data[name] === true;
}

/** The numeric `errorCode`, when given as a number (mongod ignores other types). */
function errorCodeOf(data: Record<string, unknown>): number | undefined {
  const code = data.errorCode;
  if (typeof code === 'number' && Number.isInteger(code)) return code;
  if ((code as { _bsontype?: string } | null)?._bsontype === 'Long') return Number(code);
  return undefined;
}

/** mongod's isTransientTransactionError. */
function isTransientTransactionError(code: number, hasWriteConcernError: boolean, commitOrAbort: boolean): boolean {
  if (code === 358) return false; // InternalTransactionNotSupported
  // WriteConflict, LockTimeout, PreparedTransactionInProgress, ShardCannotRefreshDueToLocksHeld, StaleDbVersion
  if ([112, 24, 267, 343, 249].includes(code)) return true;
  if (inCategory(code, 'SnapshotError') || inCategory(code, 'NeedRetargettingError')) return true;
  if (commitOrAbort) return code === 251 && !hasWriteConcernError; // NoSuchTransaction
  return inCategory(code, 'RetriableError') || code === 251;
}

const COMMIT_OR_ABORT = new Set(['commitTransaction', 'abortTransaction']);

/** Whether the command reads a change stream (an aggregate opening one, or a getMore on one). */
function readsChangeStream(ctx: CommandContext, name: string): boolean {
  if (name === 'aggregate') return isChangeStreamPipeline(ctx.body.pipeline);
  if (name !== 'getMore' || typeof ctx.body.collection !== 'string') return false;
  try {
    const id = Long.fromValue(ctx.body.getMore as number);
    return ctx.instance.cursors.get(id, `${ctx.db}.${ctx.body.collection}`) instanceof ChangeStreamCursor;
  } catch {
    return false;
  }
}

/**
 * The labels mongod's ErrorLabelBuilder gives an error `code` (or a write concern error `wcCode`)
 * of this command. NoWritesPerformed is not given (see README).
 */
export function errorLabelsFor(ctx: CommandContext, name: string, code: number | undefined, wcCode: number | undefined): string[] {
  const inTransaction = ctx.body.txnNumber !== undefined && ctx.body.autocommit !== undefined;
  const retryableWrite = ctx.body.txnNumber !== undefined && ctx.body.autocommit === undefined;
  const commitOrAbort = COMMIT_OR_ABORT.has(name);
  if (code !== undefined && inTransaction && isTransientTransactionError(code, wcCode !== undefined, commitOrAbort)) {
    return ['TransientTransactionError'];
  }
  if (retryableWrite || (inTransaction && commitOrAbort)) {
    if ((code !== undefined && inCategory(code, 'RetriableError')) || (wcCode !== undefined && inCategory(wcCode, 'RetriableError'))) {
      return ['RetryableWriteError'];
    }
  }
  if (code === undefined) return [];
  const resumable =
    wcCode === undefined &&
    (inCategory(code, 'RetriableError') ||
      inCategory(code, 'NetworkError') ||
      inCategory(code, 'NeedRetargettingError') ||
      code === 234 ||
      code === 133);
  if (resumable && readsChangeStream(ctx, name)) return ['ResumableChangeStreamError'];
  if (isNonResumableChangeStreamError(code)) return ['NonResumableChangeStreamError'];
  return [];
}

/** `errorLabels` of the fail point's data, when given as an array (it replaces mongod's own). */
function labelsOverride(data: Record<string, unknown>): string[] | undefined {
  return Array.isArray(data.errorLabels) ? data.errorLabels.filter((l): l is string => typeof l === 'string') : undefined;
}

/** The hook that applies `failCommand` around every command of `instance`. */
export function failCommandHook(instance: Instance): CommandHook {
  const failCommand = failPointsOf(instance).get('failCommand')!;
  /** Commands the fail point failed before they ran: no write concern error is added to them. */
  const failed = new WeakSet<CommandContext>();
  return {
    async before(ctx, name) {
      // mongod records the client metadata of the handshake before evaluating the fail point.
      if ((name === 'hello' || name === 'isMaster' || name === 'ismaster') && !ctx.connection.state.has(APP_NAME_STATE)) {
        const application = (ctx.body.client as { application?: { name?: unknown } } | undefined)?.application;
        if (typeof application?.name === 'string') ctx.connection.state.set(APP_NAME_STATE, application.name);
      }
      if (!failCommand.active) return;
      const data = failCommand.evaluate(
        (d) => matches(d, ctx, name) && (flag(d, 'closeConnection') || flag(d, 'blockConnection') || errorCodeOf(d) !== undefined),
      );
      if (!data) return;
      failed.add(ctx);
      if (flag(data, 'blockConnection')) {
        const ms = data.blockTimeMS;
        if (typeof ms !== 'number' || !Number.isInteger(ms)) {
          throw new ServerError('InvalidOptions', "must specify 'blockTimeMS' when 'blockConnection' is true");
        }
        if (ms < 0) throw new ServerError('InvalidOptions', "'blockTimeMS' must be non-negative");
        await sleep(ms, undefined, { signal: instance.stopping.signal }).catch(() => undefined);
      }
      if (flag(data, 'closeConnection')) {
        ctx.connection.close?.();
        throw new InjectedError(50985, FAILPOINT_MESSAGE, {}, []);
      }
      const code = errorCodeOf(data);
      if (code === undefined) {
        failed.delete(ctx); // only blocked: the command runs
        return;
      }
      const extra = data.errorExtraInfo;
      const labels = labelsOverride(data) ?? errorLabelsFor(ctx, name, code, undefined);
      throw new InjectedError(
        code,
        FAILPOINT_MESSAGE,
        typeof extra === 'object' && extra !== null ? (extra as Record<string, unknown>) : {},
        labels,
      );
    },

    after(ctx, name, reply: CommandReply) {
      if (!failCommand.active || failed.has(ctx) || !supportsWriteConcern(name, ctx.body)) return;
      const data = failCommand.evaluate((d) => matches(d, ctx, name) && d.writeConcernError !== undefined);
      if (!data) return;
      const wce = data.writeConcernError as { code?: unknown } | undefined;
      reply.writeConcernError = wce;
      const override = labelsOverride(data);
      const wcCode = typeof wce?.code === 'number' ? wce.code : undefined;
      const code = typeof reply.code === 'number' ? reply.code : undefined;
      const labels = override ?? errorLabelsFor(ctx, name, code, wcCode);
      if (override !== undefined) delete reply.errorLabels;
      if (labels.length > 0) reply.errorLabels = [...new Set([...((reply.errorLabels as string[] | undefined) ?? []), ...labels])];
    },
  };
}
