/**
 * The control API endpoints (mongosync's paths under /api/v1). Each handler only checks its
 * input and hands over to the state machine; every failure leaves through the error handler in
 * server.ts as `{success: false, error, errorDescription}`.
 */
import type { FastifyInstance } from 'fastify';
import type { StateMachine } from '../state/machine.js';
import { emptyBodySchema, startBodySchema, verificationQuerySchema } from './schemas.js';
import { checkStartRequest, type StartBody } from './start-request.js';

export const API_PREFIX = '/api/v1';

/** Differences a verification report lists unless asked otherwise. */
export const DEFAULT_REPORT_LIMIT = 1000;

/** Endpoints that take `{}` and call the state machine method of the same name. */
const PLAIN_COMMANDS = ['pause', 'resume', 'commit', 'reverse'] as const;

export function registerRoutes(app: FastifyInstance, machine: StateMachine, metrics?: () => string): void {
  if (metrics !== undefined) {
    // Prometheus text exposition, outside mongosync's API prefix (as Prometheus scrapes it).
    app.get('/metrics', async (_request, reply) => reply.type('text/plain; version=0.0.4').send(metrics()));
  }

  app.post(`${API_PREFIX}/start`, { schema: { body: startBodySchema } }, async (request) => {
    await machine.start(checkStartRequest(request.body as StartBody));
    return { success: true };
  });

  app.get(`${API_PREFIX}/progress`, async () => ({ success: true, progress: machine.progress() }));

  // Ferry's own: the embedded verifier's report (its differences, `limit` at a time after `skip`).
  app.get(`${API_PREFIX}/verification`, { schema: { querystring: verificationQuerySchema } }, async (request) => {
    const query = request.query as { skip?: string; limit?: string };
    const skip = query.skip === undefined ? 0 : Number(query.skip);
    const limit = query.limit === undefined ? DEFAULT_REPORT_LIMIT : Number(query.limit);
    return { success: true, verification: await machine.verificationReport(skip, limit) };
  });

  for (const command of PLAIN_COMMANDS) {
    app.post(`${API_PREFIX}/${command}`, { schema: { body: emptyBodySchema } }, async () => {
      await machine[command]();
      return { success: true };
    });
  }
}
