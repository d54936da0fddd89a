/**
 * Builds the real control API (state machine + fastify server) around a FakeEngine, for tests
 * that drive it with `inject` or over a socket.
 */
import type { FastifyInstance } from 'fastify';
import { pino } from 'pino';
import { buildServer } from '../../src/api/server.js';
import { parseClusterUri } from '../../src/config/clusters.js';
import type { Logger } from '../../src/log/logger.js';
import { StateMachine } from '../../src/state/machine.js';
import type { Progress } from '../../src/state/progress.js';
import { FakeEngine } from './fake-engine.js';
import type { StartRequest } from '../../src/domain/start-request.js';

export const CLUSTERS = {
  cluster0: parseClusterUri('cluster0', 'mongodb://ferry:s3cret@db0.example.net:27018,db0b.example.net/?replicaSet=rs0'),
  cluster1: parseClusterUri('cluster1', 'mongodb://ferry:s3cret@db1.example.net:27019/?replicaSet=rs1'),
};

export const INSTANCE_ID = 'test-instance';

export interface TestApp {
  app: FastifyInstance;
  engine: FakeEngine;
  machine: StateMachine;
  /** POSTs a JSON body (a value, serialized) and returns status and parsed body. */
  post(path: string, body?: unknown): Promise<{ status: number; body: Record<string, any> }>;
  progress(): Promise<Progress>;
  close(): Promise<void>;
}

export const silentLogger = pino({ level: 'silent' }) as unknown as Logger;

/** The app in IDLE (initialized), unless `initialize` is false. */
export async function buildTestApp(options: { engine?: FakeEngine; initialize?: boolean; bodyLimit?: number } = {}): Promise<TestApp> {
  const engine = options.engine ?? new FakeEngine();
  const machine = new StateMachine({ sync: engine, clusters: CLUSTERS, id: INSTANCE_ID, logger: silentLogger });
  const app = buildServer({ machine, logger: silentLogger, bodyLimit: options.bodyLimit });
  if (options.initialize !== false) await machine.initialize();
  return {
    app,
    engine,
    machine,
    async post(path, body) {
      const response = await app.inject({
        method: 'POST',
        url: path,
        headers: { 'content-type': 'application/json' },
        payload: body === undefined ? undefined : JSON.stringify(body),
      });
      return { status: response.statusCode, body: response.json() };
    },
    async progress() {
      const response = await app.inject({ method: 'GET', url: '/api/v1/progress' });
      const body = response.json();
      if (response.statusCode !== 200 || body.success !== true) throw new Error(`progress failed: ${response.body}`);
      return body.progress as Progress;
    },
    close: () => app.close(),
  };
}

export const VALID_START = { source: 'cluster0', destination: 'cluster1' };

/** VALID_START as the state machine receives it: every default filled in. */
export const START_REQUEST: StartRequest = {
  source: 'cluster0',
  destination: 'cluster1',
  buildIndexes: 'afterDataCopy',
  reversible: false,
  enableUserWriteBlocking: 'destinationOnly',
  verification: { enabled: true },
};
