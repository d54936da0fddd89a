/**
 * Malformed requests to every POST endpoint: not JSON, not an object, no body, oversized, unknown
 * fields, unknown paths. Each gets a named error with its status, and the state stays as it was.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { buildTestApp, VALID_START, type TestApp } from './app.js';

const BODY_LIMIT = 4096;
let t: TestApp;
before(async () => {
  t = await buildTestApp({ bodyLimit: BODY_LIMIT });
});
after(() => t.close());

const ENDPOINTS = ['start', 'pause', 'resume', 'commit', 'reverse'];

async function raw(path: string, payload: string | undefined, contentType?: string) {
  const response = await t.app.inject({
    method: 'POST',
    url: path,
    headers: contentType === undefined ? {} : { 'content-type': contentType },
    payload,
  });
  return { status: response.statusCode, body: response.json() as Record<string, unknown> };
}

async function assertRefused(
  response: { status: number; body: Record<string, unknown> },
  status: number,
  error: string,
  description: RegExp,
): Promise<void> {
  assert.equal(response.status, status);
  assert.deepEqual(Object.keys(response.body).sort(), ['error', 'errorDescription', 'success']);
  assert.equal(response.body.success, false);
  assert.equal(response.body.error, error);
  assert.match(response.body.errorDescription as string, description);
  assert.equal((await t.progress()).state, 'IDLE');
  assert.deepEqual(t.engine.calls, ['recover'], 'the engine was never asked anything');
}

describe('malformed bodies on every POST endpoint', () => {
  for (const endpoint of ENDPOINTS) {
    const path = `/api/v1/${endpoint}`;
    it(`${endpoint}: not JSON → 400 InvalidRequest`, async () => {
      await assertRefused(await raw(path, '{"source": ', 'application/json'), 400, 'InvalidRequest', /not valid JSON/);
    });
    it(`${endpoint}: a JSON array → 400 InvalidRequest`, async () => {
      await assertRefused(await raw(path, '[{}]', 'application/json'), 400, 'InvalidRequest', /request body: must be a JSON object/);
    });
    it(`${endpoint}: a JSON string, number, null → 400 InvalidRequest`, async () => {
      for (const payload of ['"{}"', '42', 'null', 'true']) {
        await assertRefused(await raw(path, payload, 'application/json'), 400, 'InvalidRequest', /must be a JSON object/);
      }
    });
    it(`${endpoint}: no body at all → 400 InvalidRequest`, async () => {
      await assertRefused(await raw(path, undefined), 400, 'InvalidRequest', /must be a JSON object \(\{\} when there are no parameters\)/);
      await assertRefused(await raw(path, '', 'application/json'), 400, 'InvalidRequest', /must be a JSON object/);
    });
    it(`${endpoint}: a body over the limit → 413 RequestTooLarge`, async () => {
      const huge = JSON.stringify({ ...VALID_START, padding: 'x'.repeat(BODY_LIMIT) });
      await assertRefused(await raw(path, huge, 'application/json'), 413, 'RequestTooLarge', /larger than the API accepts/);
    });
  }

  for (const endpoint of ['pause', 'resume', 'commit', 'reverse']) {
    it(`${endpoint}: any field → 400 InvalidRequest (the body must be {})`, async () => {
      await assertRefused(
        await raw(`/api/v1/${endpoint}`, '{"force": true}', 'application/json'),
        400,
        'InvalidRequest',
        /unknown field "force"/,
      );
    });
  }

  it('prototype pollution attempts are refused', async () => {
    await assertRefused(
      await raw('/api/v1/start', '{"source":"cluster0","destination":"cluster1","__proto__":{"x":1}}', 'application/json'),
      400,
      'InvalidRequest',
      // Valid JSON, refused for what it holds (not called invalid JSON: it is not).
      /has a field named __proto__ or constructor\.prototype, which no endpoint takes/,
    );
  });
});

describe('content types', () => {
  it('accepts JSON sent as curl --data sends it (application/x-www-form-urlencoded), as mongosync does', async () => {
    await assertRefused(
      await raw('/api/v1/commit', '{}', 'application/x-www-form-urlencoded'),
      409,
      'InvalidStateTransition',
      /commit is allowed only in state RUNNING/,
    );
  });
  it('accepts JSON with no content type', async () => {
    await assertRefused(await raw('/api/v1/pause', '{}'), 409, 'InvalidStateTransition', /pause is allowed only/);
  });
});

describe('unknown endpoints', () => {
  it('an unknown path → 404 NotFound', async () => {
    const response = await t.app.inject({ method: 'GET', url: '/api/v1/status' });
    assert.equal(response.statusCode, 404);
    assert.deepEqual(response.json(), { success: false, error: 'NotFound', errorDescription: 'no endpoint GET /api/v1/status' });
  });
  it('a wrong method on a known path → 404 NotFound, nothing happens', async () => {
    const get = await t.app.inject({ method: 'GET', url: '/api/v1/start' });
    await assertRefused({ status: get.statusCode, body: get.json() }, 404, 'NotFound', /no endpoint GET \/api\/v1\/start/);
    const post = await t.app.inject({ method: 'POST', url: '/api/v1/progress', payload: '{}' });
    assert.equal(post.statusCode, 404);
  });
});
