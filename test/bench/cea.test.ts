// bench:cea at a small size and short windows: cea.json carries every figure the issue asks for.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { notPositive, readResult, resultsDir, runScript } from './run-script.js';

describe('bench:cea', () => {
  it('applies a sustained load, drains a backlog, ramps, and writes cea.json', async () => {
    const out = resultsDir();
    const args = [
      '--sizeMB',
      '1',
      '--seconds',
      '2',
      '--opsPerSecond',
      '200',
      '--backlogSeconds',
      '1',
      '--stepSeconds',
      '1',
      '--maxSteps',
      '2',
      '--rampFrom',
      '100',
      '--out',
      out,
    ];
    const run = await runScript('bench/cea.js', args);
    assert.equal(run.code, 0, `${run.stdout}\n${run.stderr}`);
    const result = readResult(out, 'cea');
    assert.deepEqual(
      notPositive(result, ['eventsPerSecond', 'lagP50Seconds', 'lagP99Seconds', 'lagMaxSeconds', 'backlogEvents', 'ferryPeakRssMB']),
      [],
    );
    assert.ok(result.lagP50Seconds <= result.lagP99Seconds && result.lagP99Seconds <= result.lagMaxSeconds);
    assert.ok(result.sustained.appliedEventsPerSecond > 0, 'the workload’s events were applied');
    // Ferry's own histograms, read from its /metrics endpoint.
    assert.ok(result.ferryLag.count > 0 && result.ferryLag.p50 <= result.ferryLag.p99 && result.ferryLag.p99 <= result.ferryLag.max);
    assert.ok(result.applyLatency.count > 0 && result.applyLatency.p99 > 0);
    assert.ok(result.ramp.length >= 1 && result.ramp.length <= 2);
    // No rate is sustained only when the first step already lagged (a saturated machine can do that).
    assert.ok(
      result.maxSustainedOpsPerSecond > 0 || (result.rampStoppedBy === 'lag' && result.ramp.length === 1),
      `maxSustainedOpsPerSecond ${result.maxSustainedOpsPerSecond} after ${result.ramp.length} step(s), stopped by ${result.rampStoppedBy}`,
    );
    assert.ok(['lag', 'workload could not reach the rate', 'maxSteps'].includes(result.rampStoppedBy));
  });
});
