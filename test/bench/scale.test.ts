// bench:scale at two small sizes and two small numbers of collections (the benchmark's own are
// 1,000 and 10,000: too long for npm test): one point each, growth figures and the memory verdict.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { MONGO_TOOLS, mongoToolsSkip, notPositive, readResult, resultsDir, runScript } from './run-script.js';

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

  it('with --runs, copies each point that many times, copiers taking turns first, and reports the medians', async () => {
    const out = resultsDir();
    const args = ['--sizes', '1', '--namespaces', '10', '--runs', '3', '--baseline', '--out', out];
    const run = await runScript('bench/scale.js', args);
    assert.equal(run.code, 0, run.stderr);
    const { points, namespacePoints } = readResult(out, 'scale');
    const middle = (values: number[]) => [...values].sort((a, b) => a - b)[1];
    const [point] = points;
    assert.equal(point.perRun.length, 3);
    for (const copier of ['ferry', 'baseline']) {
      for (const field of ['seconds', 'cpuSeconds', 'peakRssMB']) {
        const runs = point.perRun.map((r: Record<string, Record<string, number>>) => r[copier]![field]!);
        assert.ok(Math.abs(point[copier][field] - middle(runs)) < 0.001, `${copier}.${field}: ${point[copier][field]} of ${runs}`);
      }
    }
    // Run 1 starts with Ferry, run 2 with the baseline, run 3 with Ferry again (each copy printed as it ends).
    const firsts = run.stdout
      .split(/ {2}run \d\/3:\n/)
      .slice(1)
      .map((lines) => lines.trimStart().split(/\s/)[0]);
    assert.deepEqual(firsts, ['ferry', 'baseline', 'ferry'], run.stdout);
    const [namespaces] = namespacePoints;
    assert.equal(namespaces.perRun.length, 3);
    assert.equal(namespaces.ferry.seconds, middle(namespaces.perRun.map((r: { seconds: number }) => r.seconds)));
  });

  it(
    'also copies each size with mongodump | mongorestore, every destination compared with the source',
    { skip: mongoToolsSkip },
    async () => {
      const out = resultsDir();
      const run = await runScript('bench/scale.js', ['--sizes', '1', '--namespaces', 'none', '--mongoTools', MONGO_TOOLS, '--out', out]);
      assert.equal(run.code, 0, run.stderr);
      const [point] = readResult(out, 'scale').points;
      assert.equal(point.ferry.equal, true, 'Ferry, timed to canCommit, left an equal destination');
      assert.deepEqual(
        point.peers.map((peer: Record<string, unknown>) => [peer.restoreFlags, peer.equal]),
        [
          [[], true],
          [['--numParallelCollections', '4', '--numInsertionWorkersPerCollection', '4'], true],
          [['--numParallelCollections', '4', '--numInsertionWorkersPerCollection', '4', '--noIndexRestore'], true],
        ],
      );
      for (const peer of point.peers) {
        assert.deepEqual(
          notPositive(peer, ['MBps', 'cpuSecondsPerGB', 'peakRssMB', 'destinationCpuSecondsPerGB']),
          [],
          JSON.stringify(peer),
        );
      }
      const best = Math.max(...point.peers.map((peer: { MBps: number }) => peer.MBps));
      assert.ok(Math.abs(point.ratioToBestPeer - point.ferry.MBps / best) < 0.01, JSON.stringify(point));
    },
  );

  it('sweeps copyWorkers × batchBytes on one source and names the fastest and the cheapest settings', async () => {
    const out = resultsDir();
    const args = [
      '--sizes',
      'none',
      '--namespaces',
      'none',
      '--sweepCopyWorkers',
      '1,2',
      '--sweepBatchBytesMB',
      '1',
      '--sweepSizeMB',
      '1',
      '--runs',
      '2',
    ];
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
    // Two rounds over the cells, each cell's figures the median (here the mean) of its two copies.
    assert.deepEqual(
      sweep.cells.map((cell: Record<string, number>) => cell.runs),
      [2, 2],
    );
    const copies = [...run.stdout.matchAll(/copyWorkers (\d), batchBytes 1 MiB \(run (\d)\/2\): /g)];
    assert.deepEqual(
      copies.map((m) => `${m[1]}:${m[2]}`),
      ['1:1', '2:1', '1:2', '2:2'],
      run.stdout,
    );
    assert.equal(sweep.fastest.MBps, Math.max(...sweep.cells.map((cell: Record<string, number>) => cell.MBps)));
    assert.equal(sweep.cheapest.cpuSecondsPerGB, Math.min(...sweep.cells.map((cell: Record<string, number>) => cell.cpuSecondsPerGB)));
    assert.match(run.stdout, /copyWorkers 2 \| [\d.]+ \(/);
    // Its chart: one bar per cell in each of the three panels, each labelled with the cell's figure.
    const chart = readFileSync(join(out, 'sweep.svg'), 'utf8');
    assert.match(chart, /^<svg xmlns="http:\/\/www\.w3\.org\/2000\/svg"[^]*<\/svg>\n$/);
    assert.match(chart, /each cell the median of 2 copies/);
    for (const cell of sweep.cells) {
      for (const figure of [cell.MBps, cell.cpuSecondsPerGB, cell.peakRssMB]) {
        const label = figure >= 100 ? figure.toFixed(0) : figure >= 10 ? figure.toFixed(1) : figure.toFixed(2);
        assert.ok(chart.includes(`>${label}</text>`), `the chart labels ${label}`);
      }
    }
    assert.equal(
      chart.match(/<rect [^>]*height="[\d.]+" fill="#/g)?.length,
      3 * sweep.cells.length + 2,
      'a bar per cell and panel, a swatch per copyWorkers',
    );
    // The chart is drawn again from the result file.
    const redrawn = join(out, 'again.svg');
    const redraw = await runScript('bench/sweep-chart.js', [join(out, 'scale.json'), '--out', redrawn]);
    assert.equal(redraw.code, 0, redraw.stderr);
    assert.match(readFileSync(redrawn, 'utf8'), /<svg[^]*copyWorkers 2[^]*<\/svg>/);
  });
});
