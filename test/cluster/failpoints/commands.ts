/**
 * The test commands mongod serves only with `--setParameter enableTestCommands=1`:
 * `configureFailPoint` (replies `{count}`, the fail point's activations so far) and
 * `waitForFailPoint` (`{waitForFailPoint: name, timesEntered: n, maxTimeMS}`). Without the
 * parameter they do not exist: CommandNotFound, exactly as for an unknown command.
 */
import { ServerError } from '../errors.js';
import type { Instance } from '../instance.js';
import { type CommandContext, defineCommand } from '../commands/registry.js';
import { failCommandHook, failPointsOf, InjectedError } from './fail-command.js';
import { parseData, parseMode } from './fail-point.js';

/** Installs the fail points' command hook on a node started with `enableTestCommands`. */
export function installFailPoints(instance: Instance): void {
  if (instance.options.enableTestCommands) instance.commandHooks.push(failCommandHook(instance));
}

/** Refuses the command unless test commands are on (as mongod, which never registers them). */
function testCommand(ctx: CommandContext, name: string): void {
  if (!ctx.instance.options.enableTestCommands) throw new ServerError('CommandNotFound', `no such command: '${name}'`);
  if (ctx.db !== 'admin') throw new ServerError('Unauthorized', `${name} may only be run against the admin database.`);
}

function failPointNamed(ctx: CommandContext, name: unknown) {
  if (typeof name !== 'string') throw new ServerError('TypeMismatch', 'the fail point name must be a string');
  const point = failPointsOf(ctx.instance).get(name);
  // FailPointSetFailed (266): mongod knows hundreds of fail points; the test cluster only failCommand.
  if (!point) throw new InjectedError(266, `${name} not found`, {}, []);
  return point;
}

defineCommand({
  name: 'configureFailPoint',
  handler(ctx) {
    testCommand(ctx, 'configureFailPoint');
    const point = failPointNamed(ctx, ctx.body.configureFailPoint);
    const mode = parseMode(ctx.body.mode);
    const data = parseData(ctx.body.data);
    return { count: point.configure(mode, data) };
  },
});

defineCommand({
  name: 'waitForFailPoint',
  async handler(ctx) {
    testCommand(ctx, 'waitForFailPoint');
    const point = failPointNamed(ctx, ctx.body.waitForFailPoint);
    const target = ctx.body.timesEntered;
    if (typeof target !== 'number')
      throw new ServerError('IDLFailedToParse', "BSON field 'waitForFailPoint.timesEntered' is missing but a required field");
    const maxTimeMS = ctx.body.maxTimeMS;
    if (typeof maxTimeMS !== 'number')
      throw new ServerError('IDLFailedToParse', "BSON field 'waitForFailPoint.maxTimeMS' is missing but a required field");
    await point.waitForEntries(target, maxTimeMS);
    return {};
  },
});
