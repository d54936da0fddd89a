/**
 * The HTTP server of the control API (fastify). It accepts JSON whatever the Content-Type says,
 * because mongosync's documented calls (`curl -XPOST --data '{}'`) send form-encoded headers.
 */
import { STATUS_CODES } from 'node:http';
import type { Socket } from 'node:net';
import Fastify, { LogController, type FastifyBaseLogger, type FastifyError, type FastifyInstance, type FastifyRequest } from 'fastify';
import type { Logger } from '../log/logger.js';
import type { StateMachine } from '../state/machine.js';
import { registerRoutes } from './routes.js';
import { registerStatusPage, type StatusSource } from './status-page.js';
import { formatSchemaError, type SchemaError } from './schemas.js';
import {
  asFerryError,
  InvalidRequest,
  NotFound,
  RequestHeadersTooLarge,
  RequestTimeout,
  RequestTooLarge,
  type FerryError,
} from '../errors/errors.js';

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

function isJson(text: string): boolean {
  try {
    JSON.parse(text);
    return true;
  } catch {
    return false;
  }
}

/**
 * Requests Node's HTTP parser refuses before any route sees them (headers too large, malformed
 * HTTP, a request that does not arrive in time) are answered in the API's own shape too.
 */
function answerClientError(error: Error & { code?: string }, socket: Socket): void {
  // A reset connection has nobody to answer.
  if (error.code === 'ECONNRESET' || socket.destroyed) return;
  const refusal =
    error.code === 'HPE_HEADER_OVERFLOW'
      ? new RequestHeadersTooLarge("the request's headers are larger than the API accepts")
      : error.code === 'ERR_HTTP_REQUEST_TIMEOUT'
        ? new RequestTimeout('the request did not arrive whole in time')
        : new InvalidRequest(`the request is not valid HTTP/1.1 (${error.code ?? error.message})`);
  const body = JSON.stringify(refusal.toResponse());
  socket.end(
    `HTTP/1.1 ${refusal.status} ${STATUS_CODES[refusal.status] ?? ''}\r\nContent-Type: application/json; charset=utf-8\r\n` +
      `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
  );
}

export function buildServer(options: ServerOptions): FastifyInstance {
  const { logger, machine } = options;
  const app = Fastify({
    loggerInstance: logger as FastifyBaseLogger,
    // Progress is polled: log state-changing requests ourselves (onResponse) instead of every request.
    logController: new LogController({ disableRequestLogging: true }),
    bodyLimit: options.bodyLimit ?? DEFAULT_BODY_LIMIT,
    clientErrorHandler: answerClientError,
    // While stopping, keep answering in our own format (the state machine refuses changes).
    return503OnClosing: false,
    // Reject, never repair: no type coercion, no stripping of unknown fields, no defaults.
    // Our schemas are static and tested: not checked against the JSON Schema meta-schema at every
    // start (compiling it cost ~80 ms of each start).
    ajv: { customOptions: { coerceTypes: false, removeAdditional: false, useDefaults: false, allErrors: false, validateSchema: false } },
  });

  const parseJson = app.getDefaultJsonParser('error', 'error');
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', { parseAs: 'string' }, (request, body, done) =>
    parseJson(request, body as string, (error, value) => {
      // Valid JSON with a `__proto__` (or `constructor.prototype`) key is refused too, but not as invalid JSON.
      if (error !== null && isJson(String(body))) {
        done(new InvalidRequest('the request body has a field named __proto__ or constructor.prototype, which no endpoint takes'));
      } else done(error, value);
    }),
  );

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
