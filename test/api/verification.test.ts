/**
 * `GET /api/v1/verification`: null before any sync; the engine's report afterwards, `limit`
 * differences at most after `skip`; a malformed query is `400 InvalidRequest` and changes
 * nothing. Progress carries the engine's `verification` figures, or null.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { VerificationProgress, VerificationReport } from '../../src/domain/verification.js';
import { DEFAULT_REPORT_LIMIT } from '../../src/api/routes.js';
import { buildTestApp, VALID_START, type TestApp } from './app.js';

let t: TestApp;
before(async () => {
  t = await buildTestApp();
});
after(() => t.close());

async function report(query = '') {
  const response = await t.app.inject({ method: 'GET', url: `/api/v1/verification${query}` });
  return { status: response.statusCode, body: response.json() as Record<string, any> };
}

const side = {
  phase: 'stream hashing',
  hashedDocumentCount: 10,
  estimatedDocumentCount: 10,
  lagTimeSeconds: 0,
  scannedCollectionCount: 1,
  totalCollectionCount: 1,
};
const progress = { source: side, destination: side } as VerificationProgress;
const REPORT: VerificationReport = {
  enabled: true,
  outcome: 'pending',
  progress,
  partitions: { total: 2, scanned: 2 },
  pendingRechecks: 0,
  notVerified: 0,
  mismatchCount: 1,
  mismatches: [{ namespace: 'db.c', _id: 7, kind: 'missing', detail: 'the destination lacks this document', foundAt: new Date(0) }],
  committedWithDifferences: false,
  completedAt: null,
};

describe('GET /api/v1/verification', () => {
  it('is null before any sync, and progress shows no verification', async () => {
    assert.deepEqual((await report()).body, { success: true, verification: null });
    assert.equal((await t.progress()).verification, null);
    assert.equal(t.engine.reportAskedFor, undefined, 'the engine is not asked in IDLE');
  });

  it('refuses a malformed query by name, asking the engine nothing', async () => {
    for (const query of ['?limit=0', '?limit=10001', '?limit=abc', '?skip=-1', '?offset=3']) {
      const response = await report(query);
      assert.equal(response.status, 400, query);
      assert.equal(response.body.error, 'InvalidRequest', query);
    }
    assert.equal(t.engine.reportAskedFor, undefined);
  });

  it('returns the engine’s report once a sync runs, with skip and limit', async () => {
    assert.equal((await t.post('/api/v1/start', VALID_START)).status, 200);
    t.engine.report = REPORT;
    t.engine.figures = { ...t.engine.figures, verification: progress };
    const whole = await report();
    assert.equal(whole.status, 200);
    assert.deepEqual(whole.body.verification, JSON.parse(JSON.stringify(REPORT)));
    assert.deepEqual(t.engine.reportAskedFor, { skip: 0, limit: DEFAULT_REPORT_LIMIT });
    await report('?skip=5&limit=20');
    assert.deepEqual(t.engine.reportAskedFor, { skip: 5, limit: 20 });
    assert.deepEqual((await t.progress()).verification, progress);
  });
});
