// bench:scale at two small sizes: one point per size, growth figures and the memory verdict.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { notPositive, readResult, resultsDir, runScript } from './run-script.js';

describe('bench:scale', () => {
  it('copies each size and reports how time, CPU and memory grow', async () => {
    const out = resultsDir();
    const run = await runScript('bench/scale.js', ['--sizes', '2,1', '--out', out]);
    assert.equal(run.code, 0, run.stderr);
    const result = readResult(out, 'scale');
    assert.deepEqual(result.sizes, [1, 2], 'smallest first');
    assert.equal(result.points.length, 2);
    for (const point of result.points) {
      assert.deepEqual(notPositive(point.ferry, ['seconds', 'MBps', 'cpuSeconds', 'cpuSecondsPerGB', 'peakRssMB']), []);
    }
    assert.ok(result.points[1].bytes > result.points[0].bytes);
    assert.deepEqual(notPositive(result.ferryGrowth, ['data', 'time', 'cpu', 'peakRss']), []);
    assert.deepEqual(
      result.ferryPeakRssMB,
      result.points.map((p: { ferry: { peakRssMB: number } }) => p.ferry.peakRssMB),
    );
    assert.equal(typeof result.ferryMemoryFlat, 'boolean');
  });
});
