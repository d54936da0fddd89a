// bench:verify and the hashing comparison at a small size: the verifier's figures, the copy with
// and without it, and the three ways of hashing, each finding no difference in a faithful copy.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { notPositive, readResult, resultsDir, runScript } from './run-script.js';

describe('bench:verify', () => {
  it('verifies a faithful copy clean and reports its time, CPU, memory and its cost to the copy', async () => {
    const out = resultsDir();
    const run = await runScript('bench/verify.js', ['--sizes', '1', '--out', out]);
    assert.equal(run.code, 0, run.stderr);
    const result = readResult(out, 'verify');
    assert.equal(result.points.length, 1);
    const [point] = result.points;
    assert.deepEqual(notPositive(point.verification, ['seconds', 'MBps', 'documentsPerSecond', 'cpuSeconds', 'cpuSecondsPerGB']), []);
    assert.equal(point.verification.differences, 0);
    assert.ok(point.verification.hashedDocuments.source >= point.documents, 'every source document compared');
    assert.deepEqual(notPositive(point.copyWithVerification, ['seconds', 'MBps', 'peakRssMB']), []);
    assert.deepEqual(notPositive(point.copyWithoutVerification, ['seconds', 'MBps', 'peakRssMB']), []);
    assert.ok(point.copyThroughputRatio > 0);
    assert.ok(point.peakRssMB > 0);
  });

  it('compares the ways of hashing, each finding no difference', async () => {
    const out = resultsDir();
    const run = await runScript('bench/verify-hashing.js', ['--sizeMB', '1', '--out', out]);
    assert.equal(run.code, 0, run.stderr);
    const { methods } = readResult(out, 'verify-hashing');
    assert.deepEqual(
      methods.map((m: { method: string }) => m.method),
      ['stream-bytes', 'stream-hash', 'server'],
    );
    for (const method of methods) {
      if (method.unsupported !== undefined) continue;
      assert.equal(method.differences, 0, method.method);
      assert.ok(method.documents > 0, method.method);
    }
  });
});
