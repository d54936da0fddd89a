// bench:scale at two small sizes and two small numbers of collections (the benchmark's own are
// 1,000 and 10,000: too long for npm test): one point each, growth figures and the memory verdict.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { notPositive, readResult, resultsDir, runScript } from './run-script.js';

describe('bench:scale', () => {
  it('copies each size and reports how time, CPU and memory grow', async () => {
    const out = resultsDir();
    const run = await runScript('bench/scale.js', ['--sizes', '2,1', '--namespaces', '30,10', '--out', out]);
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
    assert.deepEqual(
      result.namespacePoints.map((p: { collections: number }) => p.collections),
      [10, 30],
      'fewest collections first',
    );
    for (const point of result.namespacePoints) assert.deepEqual(notPositive(point.ferry, ['seconds', 'cpuSeconds', 'peakRssMB']), []);
    assert.equal(result.namespaceGrowth.namespaces, 3);
    assert.deepEqual(notPositive(result.namespaceGrowth, ['time', 'cpu']), []);
  });

  it('sweeps copyWorkers × batchBytes on one source and names the fastest and the cheapest settings', async () => {
    const out = resultsDir();
    const args = ['--sizes', 'none', '--namespaces', 'none', '--sweepCopyWorkers', '1,2', '--sweepBatchBytesMB', '1', '--sweepSizeMB', '1'];
    const run = await runScript('bench/scale.js', [...args, '--out', out]);
    assert.equal(run.code, 0, run.stderr);
    const { sweep } = readResult(out, 'scale');
    assert.equal(sweep.sizeMB, 1);
    assert.deepEqual(
      sweep.cells.map((cell: Record<string, number>) => [cell.copyWorkers, cell.batchBytesMB]),
      [
        [1, 1],
        [2, 1],
      ],
    );
    for (const cell of sweep.cells) assert.deepEqual(notPositive(cell, ['MBps', 'seconds', 'cpuSecondsPerGB', 'peakRssMB']), []);
    assert.equal(sweep.fastest.MBps, Math.max(...sweep.cells.map((cell: Record<string, number>) => cell.MBps)));
    assert.equal(sweep.cheapest.cpuSecondsPerGB, Math.min(...sweep.cells.map((cell: Record<string, number>) => cell.cpuSecondsPerGB)));
    assert.match(run.stdout, /copyWorkers 2 \| [\d.]+ \(/);
  });
});
