/**
 * The control API over a real TCP socket (fetch), as scripts use it: mongosync's documented curl
 * calls, concurrent requests, and progress answering while a start is still in preflight.
 */
import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import { buildTestApp, VALID_START, type TestApp } from './app.js';
import { gate } from './fake-engine.js';
import { assertProgressRules } from './progress-rules.js';

let t: TestApp;
let base: string;
before(async () => {
  t = await buildTestApp();
  base = await t.app.listen({ port: 0, host: '127.0.0.1' });
});
after(() => t.close());

/** What `curl localhost:27182/api/v1/<path> -XPOST --data '<body>'` sends. */
async function curlPost(path: string, body: string): Promise<{ status: number; body: Record<string, unknown> }> {
  const response = await fetch(`${base}/api/v1/${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body,
  });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

async function progress() {
  const response = await fetch(`${base}/api/v1/progress`);
  assert.equal(response.status, 200);
  const body = (await response.json()) as { success: boolean; progress: any };
  assert.equal(body.success, true);
  assertProgressRules(body.progress);
  return body.progress;
}

it('two simultaneous starts over the socket: exactly one succeeds; progress answers while the start is held in preflight', async () => {
  const hold = gate();
  t.engine.holdNext.set('preflight', hold.promise);
  const starts = [curlPost('start', JSON.stringify(VALID_START)), curlPost('start', JSON.stringify(VALID_START))];
  // Wait until the first start is inside preflight (the engine recorded the call).
  while (!t.engine.calls.includes('preflight')) await new Promise((resolve) => setTimeout(resolve, 5));
  assert.equal((await progress()).state, 'IDLE');
  hold.open();
  const results = await Promise.all(starts);
  assert.deepEqual(results.map((r) => r.status).sort(), [200, 409]);
  assert.deepEqual(results.map((r) => r.body.error ?? 'ok').sort(), ['InvalidStateTransition', 'ok']);
  assert.equal((await progress()).state, 'RUNNING');
});

it("mongosync's documented calls work as written: pause, resume, commit with --data '{ }'", async () => {
  assert.deepEqual(await curlPost('pause', '{ }'), { status: 200, body: { success: true } });
  assert.equal((await progress()).state, 'PAUSED');
  assert.deepEqual(await curlPost('resume', '{ }'), { status: 200, body: { success: true } });
  t.engine.figures = { ...t.engine.figures, readyToCommit: true, info: 'change event application' };
  assert.equal((await progress()).canCommit, true);
  assert.deepEqual(await curlPost('commit', '{ }'), { status: 200, body: { success: true } });
  assert.equal((await progress()).state, 'COMMITTING');
  const refused = await curlPost('reverse', '{ }');
  assert.equal(refused.status, 409);
  assert.equal(refused.body.error, 'InvalidStateTransition');
});
