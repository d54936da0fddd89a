/**
 * Connection handshake and server-description commands: `hello` (and the legacy `isMaster`),
 * `ping`, `buildInfo`, `getParameter`, `hostInfo`, `whatsmyuri`, `endSessions`,
 * `getCmdLineOpts`, `replSetGetStatus`, `appendOplogNote`.
 * The node presents itself as the primary of a one-member replica set running MongoDB 8.0.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { Long } from 'bson';
import { ServerError } from '../errors.js';
import type { Instance } from '../instance.js';
import { defineCommand } from './registry.js';
import { GENERIC_ARGUMENTS } from './dispatch.js';

/** The server version reported; wire version 25 is MongoDB 8.0. */
export const SERVER_VERSION = '8.0.4';
export const MAX_WIRE_VERSION = 25;
export const MAX_BSON_OBJECT_SIZE = 16 * 1024 * 1024;
export const MAX_MESSAGE_SIZE_BYTES = 48_000_000;
export const MAX_WRITE_BATCH_SIZE = 100_000;

/** The `hello` reply of this node (serverStatus.repl repeats its replica-set part). */
export function helloReply(instance: Instance, connectionId: number, legacy: boolean): Record<string, unknown> {
  const newest = instance.oplog.newest();
  const opTime = { ts: newest?.ts ?? instance.clusterTime(), t: Long.fromNumber(1) };
  const writeDate = newest?.wall ?? instance.startedAt;
  return {
    topologyVersion: { processId: instance.processId, counter: Long.fromNumber(0) },
    hosts: [instance.host],
    setName: instance.replSetName,
    setVersion: 1,
    [legacy ? 'ismaster' : 'isWritablePrimary']: true,
    secondary: false,
    primary: instance.host,
    me: instance.host,
    electionId: instance.electionId,
    lastWrite: {
      opTime,
      lastWriteDate: writeDate,
      majorityOpTime: opTime,
      majorityWriteDate: writeDate,
    },
    maxBsonObjectSize: MAX_BSON_OBJECT_SIZE,
    maxMessageSizeBytes: MAX_MESSAGE_SIZE_BYTES,
    maxWriteBatchSize: MAX_WRITE_BATCH_SIZE,
    localTime: new Date(),
    logicalSessionTimeoutMinutes: 30,
    connectionId,
    minWireVersion: 0,
    maxWireVersion: MAX_WIRE_VERSION,
    readOnly: false,
  };
}

async function hello(legacy: boolean, ctx: Parameters<Parameters<typeof defineCommand>[0]['handler']>[0]) {
  const { instance, body, connection } = ctx;
  // Awaitable hello (server monitoring): with an unchanged topologyVersion, answer after
  // maxAwaitTimeMS, since the topology of a one-member set never changes.
  const maxAwait = body.maxAwaitTimeMS;
  const known = body.topologyVersion as { processId?: { toHexString(): string } } | undefined;
  if (typeof maxAwait === 'number' && known?.processId?.toHexString() === instance.processId.toHexString()) {
    try {
      await sleep(maxAwait, undefined, { signal: instance.stopping.signal });
    } catch {
      throw new ServerError(91, 'The server is in quiesce mode and will shut down');
    }
  }
  const reply = helloReply(instance, connection.id, legacy);
  if (body.helloOk === true) reply.helloOk = true;
  const mechsFor = body.saslSupportedMechs;
  if (typeof mechsFor === 'string' && instance.saslMechanismsFor) {
    const mechs = instance.saslMechanismsFor(mechsFor);
    if (mechs) reply.saslSupportedMechs = mechs;
  }
  return reply;
}

defineCommand({ name: 'hello', noAuth: true, handler: (ctx) => hello(false, ctx) });
defineCommand({ name: 'isMaster', aliases: ['ismaster'], noAuth: true, handler: (ctx) => hello(true, ctx) });

defineCommand({ name: 'ping', noAuth: true, handler: () => ({ ok: 1 }) });

/** The `buildInfo` reply (a router answers the same). */
export function buildInfoReply(): Record<string, unknown> {
  return {
    version: SERVER_VERSION,
    gitVersion: 'ferry-test-cluster',
    versionArray: [...SERVER_VERSION.split('.').map(Number), 0],
    bits: 64,
    debug: false,
    maxBsonObjectSize: MAX_BSON_OBJECT_SIZE,
    storageEngines: ['ferry-test-cluster'],
    javascriptEngine: 'none',
    modules: [],
    openssl: { running: 'disabled' },
    buildEnvironment: {},
  };
}

defineCommand({ name: 'buildInfo', aliases: ['buildinfo'], noAuth: true, handler: buildInfoReply });

/** Server parameters `getParameter` reports (the ones clients ask about). */
function parameters(instance: Instance): Record<string, unknown> {
  return {
    featureCompatibilityVersion: { version: '8.0' },
    authenticationMechanisms: instance.saslMechanismsFor ? ['SCRAM-SHA-1', 'SCRAM-SHA-256'] : [],
    periodicNoopIntervalSecs: Math.max(1, Math.round(instance.options.noopIntervalMs / 1000)),
    ttlMonitorSleepSecs: Math.max(1, Math.round(instance.options.ttlIntervalMs / 1000)),
    maxBSONDepth: 200,
    internalQueryMaxBlockingSortMemoryUsageBytes: 104857600,
    transactionLifetimeLimitSeconds: 60,
    // The user-document schema (SCRAM-SHA-256 era); mongorestore asks before restoring users.
    authSchemaVersion: 5,
  };
}

defineCommand({
  name: 'getParameter',
  adminOnly: true,
  handler: ({ instance, body }) => {
    const all = parameters(instance);
    const which = body.getParameter;
    if (which === '*' || (typeof which === 'object' && which !== null && (which as { allParameters?: boolean }).allParameters)) {
      return { ...all };
    }
    // As mongod: names it does not know are ignored; none known at all is an error.
    const reply: Record<string, unknown> = {};
    for (const [key, value] of Object.entries(body)) {
      if (key === 'getParameter' || GENERIC_ARGUMENTS.has(key) || value === undefined) continue;
      if (key in all) reply[key] = all[key];
    }
    if (Object.keys(reply).length === 0) throw new ServerError('InvalidOptions', 'no option found to get');
    return reply;
  },
});

defineCommand({
  name: 'hostInfo',
  handler: () => ({
    system: { currentTime: new Date(), hostname: '127.0.0.1', cpuAddrSize: 64, numCores: 2, cpuArch: process.arch },
    os: { type: process.platform, name: process.platform },
    extra: {},
  }),
});

defineCommand({ name: 'whatsmyuri', noAuth: true, handler: () => ({ you: '127.0.0.1:0' }) });

defineCommand({ name: 'endSessions', noAuth: true, handler: () => ({ ok: 1 }) });

defineCommand({
  name: 'getCmdLineOpts',
  adminOnly: true,
  handler: ({ instance }) => ({
    argv: ['ferry-test-cluster'],
    parsed: { replication: { replSetName: instance.replSetName, oplogSizeMB: instance.options.oplogSizeMB } },
  }),
});

defineCommand({
  name: 'replSetGetStatus',
  adminOnly: true,
  handler: ({ instance }) => {
    const newest = instance.oplog.newest();
    const optime = { ts: newest?.ts ?? instance.clusterTime(), t: Long.fromNumber(1) };
    return {
      set: instance.replSetName,
      date: new Date(),
      myState: 1,
      term: Long.fromNumber(1),
      members: [
        {
          _id: 0,
          name: instance.host,
          health: 1,
          state: 1,
          stateStr: 'PRIMARY',
          uptime: Math.round((Date.now() - instance.startedAt.getTime()) / 1000),
          optime,
          optimeDate: newest?.wall ?? instance.startedAt,
          self: true,
        },
      ],
    };
  },
});

defineCommand({
  name: 'appendOplogNote',
  adminOnly: true,
  handler: ({ instance, body }) => {
    const data = body.data;
    if (typeof data !== 'object' || data === null || Array.isArray(data)) {
      throw new ServerError('BadValue', "appendOplogNote requires a 'data' field that is an object");
    }
    instance.noop(data as Record<string, unknown>);
    return { ok: 1 };
  },
});
