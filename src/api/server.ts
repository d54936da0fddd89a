/**
 * The HTTP server of the control API (fastify). It accepts JSON whatever the Content-Type says,
 * because mongosync's documented calls (`curl -XPOST --data '{}'`) send form-encoded headers.
 */
import Fastify, { LogController, type FastifyBaseLogger, type FastifyError, type FastifyInstance, type FastifyRequest } from 'fastify';
import type { Logger } from '../log/logger.js';
import type { StateMachine } from '../state/machine.js';
import { registerRoutes } from './routes.js';
import { registerStatusPage, type StatusSource } from './status-page.js';
import { formatSchemaError, type SchemaError } from './schemas.js';
import { asFerryError, InvalidRequest, NotFound, RequestTooLarge, type FerryError } from '../errors/errors.js';

export interface ServerOptions {
  machine: StateMachine;
  logger: Logger;
  /** Largest request body accepted, in bytes. Default 1 MiB (a start request is a few KiB at most). */
  bodyLimit?: number;
  /** Renders Prometheus text for `GET /metrics` (histograms of copy and apply). Default: no such endpoint. */
  metrics?: () => string;
  /** The status page and its read-only endpoints (status-page.ts). Default: none. */
  status?: StatusSource;
}

export const DEFAULT_BODY_LIMIT = 1024 * 1024;

/** Maps whatever a request failed with (our errors, fastify's, Ajv's) to one FerryError. */
function toFerryError(error: FastifyError | Error): FerryError {
  const fastifyError = error as FastifyError & { validation?: SchemaError[] };
  const first = fastifyError.validation?.[0];
  if (first !== undefined) return new InvalidRequest(formatSchemaError(first));
  switch (fastifyError.code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return new RequestTooLarge('the request body is larger than the API accepts');
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return new InvalidRequest('the request body must be a JSON object ({} when there are no parameters)');
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
      return new InvalidRequest('the request body is not valid JSON');
  }
  if (fastifyError.statusCode !== undefined && fastifyError.statusCode >= 400 && fastifyError.statusCode < 500) {
    return new InvalidRequest(error.message);
  }
  return asFerryError(error);
}

export function buildServer(options: ServerOptions): FastifyInstance {
  const { logger, machine } = options;
  const app = Fastify({
    loggerInstance: logger as FastifyBaseLogger,
    // Progress is polled: log state-changing requests ourselves (onResponse) instead of every request.
    logController: new LogController({ disableRequestLogging: true }),
    bodyLimit: options.bodyLimit ?? DEFAULT_BODY_LIMIT,
    // While stopping, keep answering in our own format (the state machine refuses changes).
    return503OnClosing: false,
    // Reject, never repair: no type coercion, no stripping of unknown fields, no defaults.
    ajv: { customOptions: { coerceTypes: false, removeAdditional: false, useDefaults: false, allErrors: false } },
  });

  const parseJson = app.getDefaultJsonParser('error', 'error');
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', { parseAs: 'string' }, parseJson);

  // POST without any body: fastify would skip the schema, so refuse it here.
  app.addHook('preValidation', async (request) => {
    if (request.method === 'POST' && request.body === undefined) {
      throw new InvalidRequest('the request body must be a JSON object ({} when there are no parameters)');
    }
  });

  // One line per state-changing request, naming the error when it failed.
  const refusals = new WeakMap<FastifyRequest, FerryError>();
  app.addHook('onResponse', async (request, reply) => {
    if (request.method === 'GET') return;
    const refused = refusals.get(request);
    const fields = { method: request.method, url: request.url, statusCode: reply.statusCode, error: refused?.code };
    const outcome = refused === undefined ? 'succeeded' : `refused: ${refused.message}`;
    logger.info(fields, `API ${request.method} ${request.url} ${outcome}`);
  });

  app.setErrorHandler((error: FastifyError, request, reply) => {
    const ferryError = toFerryError(error);
    refusals.set(request, ferryError);
    // Only a bug deserves a stack trace in the log.
    if (ferryError.status === 500) logger.error({ err: error, url: request.url }, ferryError.message);
    return reply.status(ferryError.status).send(ferryError.toResponse());
  });

  app.setNotFoundHandler((request, reply) => {
    const error = new NotFound(`no endpoint ${request.method} ${request.url.split('?')[0]}`);
    refusals.set(request, error);
    return reply.status(error.status).send(error.toResponse());
  });

  registerRoutes(app, machine, options.metrics);
  if (options.status !== undefined) registerStatusPage(app, options.status);
  return app;
}
