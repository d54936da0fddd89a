// bench:copy at a small size: Ferry and the baseline both copy, and copy.json carries every figure
// the issue asks for, consistent with each other.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { notPositive, readResult, resultsDir, runScript } from './run-script.js';

describe('bench:copy', () => {
  it('copies the same data with Ferry and the baseline and writes copy.json with every figure', async () => {
    const out = resultsDir();
    const run = await runScript('bench/copy.js', ['--sizeMB', '2', '--seed', '5', '--out', out]);
    assert.equal(run.code, 0, run.stderr);
    const result = readResult(out, 'copy');
    const figures = [
      'sizeMB',
      'ferryMBps',
      'baselineMBps',
      'ratio',
      'ferryCpuSecondsPerGB',
      'baselineCpuSecondsPerGB',
      'ferryPeakRssMB',
      'baselinePeakRssMB',
    ];
    assert.deepEqual(notPositive(result, [...figures, 'ferryDocumentsPerSecond', 'baselineDocumentsPerSecond', 'bytes', 'documents']), []);
    assert.equal(result.sizeMB, 2);
    // One run: the ratio is Ferry's throughput over the baseline's, measured side by side.
    assert.ok(Math.abs(result.ratio - result.ferryMBps / result.baselineMBps) < 0.01, JSON.stringify(result));
    assert.equal(result.perRun.length, 1);
    assert.equal(typeof result.machine.cpus, 'number');
    assert.match(result.command, /bench\/copy\.js --sizeMB 2/);
    assert.match(run.stdout, /Ferry \/ baseline throughput: [\d.]+x/);
  });

  it('refuses a bad size with a one-line reason and writes nothing', async () => {
    const out = resultsDir();
    const run = await runScript('bench/copy.js', ['--sizeMB', 'lots', '--out', out]);
    assert.notEqual(run.code, 0);
    assert.match(run.stderr, /--sizeMB.*must be a positive number/);
    assert.throws(() => readResult(out, 'copy'), /ENOENT/);
  });
});
