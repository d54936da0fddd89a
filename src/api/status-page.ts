/**
 * The status page and the read-only endpoints it reads besides `/api/v1/progress` and `/metrics`:
 *
 * - `GET /`: the page (status-page/index.html; plain files, no build step), its script and style
 *   under `/status/`, and uPlot (the chart library, MIT, served from node_modules with its licence);
 * - `GET /api/v1/status[?since=<ms>]`: timeline, tuning, clusters and write blocking, the legal
 *   requests, and progress samples of the last hour (after `since`);
 * - `GET /api/v1/namespaces`: the initial copy per collection.
 *
 * All in memory, like progress. The page sends nothing by itself: it shows the `curl` command for
 * the next request, and sends it only when the operator clicks and confirms. It is served where
 * the API listens (loopback unless `--bindAddress` says otherwise) and never holds a credential.
 * The headers keep it to its own files (Content-Security-Policy) and out of frames.
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import type { FastifyInstance } from 'fastify';
import type { NamespaceProgress } from '../domain/sync-control.js';
import type { Status } from '../state/status.js';
import { API_PREFIX } from './routes.js';

/** What the endpoints read. */
export interface StatusSource {
  /** The status, with progress samples taken after `since` (ms since the epoch). */
  status(since: number): Status;
  namespaces(): NamespaceProgress[];
}

const PAGE_DIRECTORY = new URL('../../../status-page/', import.meta.url);
const require = createRequire(import.meta.url);

interface Asset {
  type: string;
  file: string;
}

/** Files under `/status/`, by name. */
const ASSETS: Record<string, Asset> = {
  'app.js': { type: 'text/javascript; charset=utf-8', file: fileURLToPath(new URL('app.js', PAGE_DIRECTORY)) },
  'style.css': { type: 'text/css; charset=utf-8', file: fileURLToPath(new URL('style.css', PAGE_DIRECTORY)) },
  'uPlot.iife.min.js': { type: 'text/javascript; charset=utf-8', file: require.resolve('uplot/dist/uPlot.iife.min.js') },
  'uPlot.min.css': { type: 'text/css; charset=utf-8', file: require.resolve('uplot/dist/uPlot.min.css') },
  'uPlot-LICENSE.txt': { type: 'text/plain; charset=utf-8', file: require.resolve('uplot/LICENSE') },
};

const SECURITY_HEADERS = {
  'content-security-policy':
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; " +
    "base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'cache-control': 'no-store',
};

export function registerStatusPage(app: FastifyInstance, source: StatusSource): void {
  // Read once: the files are part of the installed package.
  const page = readFileSync(new URL('index.html', PAGE_DIRECTORY), 'utf8');
  const assets = new Map(Object.entries(ASSETS).map(([name, asset]) => [name, { type: asset.type, body: readFileSync(asset.file) }]));

  app.get('/', async (_request, reply) => reply.headers(SECURITY_HEADERS).type('text/html; charset=utf-8').send(page));

  app.get<{ Params: { name: string } }>('/status/:name', async (request, reply) => {
    const asset = assets.get(request.params.name);
    if (asset === undefined) return reply.callNotFound();
    return reply.headers(SECURITY_HEADERS).type(asset.type).send(asset.body);
  });

  app.get<{ Querystring: { since?: string } }>(`${API_PREFIX}/status`, async (request) => {
    const since = Number(request.query.since ?? 0);
    return { success: true, status: source.status(Number.isFinite(since) ? since : 0) };
  });

  app.get(`${API_PREFIX}/namespaces`, async () => ({ success: true, namespaces: source.namespaces() }));
}
