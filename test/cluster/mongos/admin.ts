/**
 * The router's own commands: `hello` as a mongos (`msg: 'isdbgrid'`, no `setName`: the driver's
 * topology is Sharded), `ping`, `buildInfo`, `serverStatus` (`process: 'mongos'`), `isdbgrid`,
 * and the cluster-wide ones mongos passes on: `setUserWriteBlockMode` (config server and every
 * shard), `appendOplogNote` (every shard), `getParameter`.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { Long } from 'bson';
import { ServerError } from '../errors.js';
import {
  MAX_BSON_OBJECT_SIZE,
  MAX_MESSAGE_SIZE_BYTES,
  MAX_WIRE_VERSION,
  MAX_WRITE_BATCH_SIZE,
  SERVER_VERSION,
  buildInfoReply,
} from '../commands/handshake.js';
import { type RouterContext, type RouterReply, defineRouterCommand } from './commands.js';
import { clientFields, passOn } from './forward.js';

async function hello(ctx: RouterContext, legacy: boolean): Promise<RouterReply> {
  const { router, body } = ctx;
  const maxAwait = body.maxAwaitTimeMS;
  const known = body.topologyVersion as { processId?: { toHexString(): string } } | undefined;
  if (maxAwait !== undefined && known?.processId?.toHexString() === router.processId.toHexString()) {
    try {
      await sleep(Number(maxAwait), undefined, { signal: router.stopping.signal });
    } catch {
      throw new ServerError(91, 'The server is in quiesce mode and will shut down');
    }
  }
  const reply: RouterReply = {
    [legacy ? 'ismaster' : 'isWritablePrimary']: true,
    msg: 'isdbgrid',
    topologyVersion: { processId: router.processId, counter: Long.fromNumber(0) },
    maxBsonObjectSize: MAX_BSON_OBJECT_SIZE,
    maxMessageSizeBytes: MAX_MESSAGE_SIZE_BYTES,
    maxWriteBatchSize: MAX_WRITE_BATCH_SIZE,
    localTime: new Date(),
    logicalSessionTimeoutMinutes: 30,
    connectionId: ctx.connection.id,
    minWireVersion: 0,
    maxWireVersion: MAX_WIRE_VERSION,
    readOnly: false,
  };
  if (body.helloOk === true) reply.helloOk = true;
  const mechs = body.saslSupportedMechs;
  if (typeof mechs === 'string') {
    const supported = router.local.saslMechanismsFor?.(mechs);
    if (supported) reply.saslSupportedMechs = supported;
  }
  return reply;
}

defineRouterCommand({ name: 'hello', noAuth: true, handler: (ctx) => hello(ctx, false) });
defineRouterCommand({ name: 'isMaster', aliases: ['ismaster'], noAuth: true, handler: (ctx) => hello(ctx, true) });
defineRouterCommand({ name: 'ping', noAuth: true, handler: () => ({}) });
defineRouterCommand({ name: 'isdbgrid', handler: () => ({ isdbgrid: 1, hostname: '127.0.0.1' }) });
defineRouterCommand({ name: 'whatsmyuri', noAuth: true, handler: () => ({ you: '127.0.0.1:0' }) });

defineRouterCommand({ name: 'buildInfo', aliases: ['buildinfo'], noAuth: true, handler: buildInfoReply });

defineRouterCommand({
  name: 'hostInfo',
  handler: () => ({
    system: { currentTime: new Date(), hostname: '127.0.0.1', cpuAddrSize: 64, numCores: 2, cpuArch: process.arch },
    os: { type: process.platform, name: process.platform },
    extra: {},
  }),
});

defineRouterCommand({
  name: 'getCmdLineOpts',
  adminOnly: true,
  handler: ({ router }) => ({ argv: ['mongos'], parsed: { sharding: { configDB: router.options.configdb } } }),
});

defineRouterCommand({
  name: 'serverStatus',
  handler: ({ router }) => {
    const uptimeMillis = Date.now() - router.startedAt.getTime();
    const c = router.counters;
    return {
      host: router.host,
      version: SERVER_VERSION,
      process: 'mongos',
      pid: Long.fromNumber(process.pid),
      uptime: Math.floor(uptimeMillis / 1000),
      uptimeMillis: Long.fromNumber(uptimeMillis),
      uptimeEstimate: Long.fromNumber(Math.floor(uptimeMillis / 1000)),
      localTime: new Date(),
      connections: { current: c.connectionsCurrent, available: 838860, totalCreated: c.connectionsTotalCreated },
      opcounters: { ...c.opcounters },
      metrics: { commands: c.commandMetrics() },
      sharding: {
        configsvrConnectionString: router.options.configdb,
        lastSeenConfigServerOpTime: { ts: router.clock.current(), t: Long.fromNumber(1) },
      },
    };
  },
});

defineRouterCommand({
  name: 'getParameter',
  adminOnly: true,
  handler: async (ctx) => passOn(await ctx.router.config.run('admin', clientFields(ctx))),
});

/** Runs a command on every shard (and the config server); the first failure is the reply. */
async function everywhere(ctx: RouterContext, body: Record<string, unknown>, withConfig: boolean): Promise<RouterReply> {
  const router = ctx.router;
  const targets = router.shardIds().map((id) => router.shard(id).client);
  if (withConfig) targets.unshift(router.config);
  const bypass = router.mayBypassWriteBlocking?.(ctx.connection);
  const replies = await Promise.all(
    targets.map((client) => client.run('admin', { ...body, ...(bypass === undefined ? {} : { mayBypassWriteBlocking: bypass }) })),
  );
  for (const reply of replies) if (!reply.ok) throw reply.error();
  return {};
}

defineRouterCommand({
  name: 'setUserWriteBlockMode',
  adminOnly: true,
  handler: (ctx) => {
    if (typeof ctx.body.global !== 'boolean') {
      throw new ServerError('IDLFailedToParse', "BSON field 'setUserWriteBlockMode.global' is missing but a required field");
    }
    return everywhere(ctx, clientFields(ctx), true);
  },
});

defineRouterCommand({
  name: 'appendOplogNote',
  adminOnly: true,
  handler: (ctx) => {
    const data = ctx.body.data;
    if (typeof data !== 'object' || data === null || Array.isArray(data)) {
      throw new ServerError('BadValue', "appendOplogNote requires a 'data' field that is an object");
    }
    return everywhere(ctx, clientFields(ctx), false);
  },
});
