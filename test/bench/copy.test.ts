// bench:copy at a small size: Ferry and the baseline both copy, and copy.json carries every figure
// the issue asks for, consistent with each other.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { MONGO_TOOLS, mongoToolsSkip, notPositive, readResult, resultsDir, runScript } from './run-script.js';
import { readPacing } from '../../bench/lib/copy-runs.js';
import type { Progress } from '../e2e/ferry-process.js';

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
    // One Ferry copy first, not counted: one run counted.
    assert.match(run.stdout, /warm-up, not counted: ferry /);
    assert.equal(result.perRun.length, 1);
    assert.equal(typeof result.machine.cpus, 'number');
    assert.match(result.command, /bench\/copy\.js --sizeMB 2/);
    assert.match(run.stdout, /Ferry \/ baseline throughput: [\d.]+x/);
  });

  it(
    "compares against MongoDB's mongodump | mongorestore in three configurations, every destination verified equal",
    { skip: mongoToolsSkip },
    async () => {
      const out = resultsDir();
      const run = await runScript('bench/copy.js', ['--sizeMB', '2', '--seed', '5', '--mongoTools', MONGO_TOOLS, '--out', out]);
      assert.equal(run.code, 0, run.stderr);
      const result = readResult(out, 'copy');
      assert.equal(result.ferryUntil, 'canCommit');
      assert.deepEqual(
        result.peers.map((peer: Record<string, any>) => [peer.name, peer.buildsIndexes, peer.equal]),
        [
          ['dump|restore default', true, true],
          ['dump|restore -j4 -w4', true, true],
          ['dump|restore -j4 -w4 --noIndexRestore', false, true],
        ],
      );
      for (const peer of result.peers) {
        assert.deepEqual(notPositive(peer, ['MBps', 'seconds', 'peakRssMB', 'destinationCpuSecondsPerGB']), [], JSON.stringify(peer));
      }
      assert.equal(result.perRun[0].ferry.equal, true);
      // One run: the ratio is Ferry's throughput over the fastest configuration's.
      const best = Math.max(...result.perRun[0].peers.map((peer: Record<string, any>) => peer.MBps));
      assert.ok(Math.abs(result.ratioToBestPeer - result.ferryMBps / best) < 0.01, JSON.stringify(result));
      assert.match(run.stdout, /Ferry \/ best peer: [\d.]+x/);
      // Ferry's window in stages: their times add up to its copy time, the destination's CPU to its whole.
      const ferry = result.perRun[0].ferry;
      assert.deepEqual(
        ferry.stages.map((stage: Record<string, any>) => stage.stage),
        ['copy', 'indexBuilds', 'untilCanCommit'],
      );
      const sum = (field: string) => ferry.stages.reduce((total: number, stage: Record<string, any>) => total + stage[field], 0);
      assert.ok(Math.abs(sum('seconds') - ferry.seconds) < 0.05, JSON.stringify(ferry));
      assert.ok(Math.abs(sum('destinationCpuSeconds') - ferry.destinationClusterCpuSeconds) < 0.05, JSON.stringify(ferry));
      assert.ok(Math.abs(ferry.destinationBusyShare - ferry.destinationClusterCpuSeconds / ferry.seconds) < 0.01, JSON.stringify(ferry));
      // The two destination targets, from those figures: "during Ferry's copy" is its copy and
      // index builds (one run: its own stages), not the verifier's pass until canCommit.
      const targets = result.destinationTargets;
      const indexBuilds = result.ferryStages.find((stage: Record<string, any>) => stage.stage === 'indexBuilds').destinationCpuSecondsPerGB;
      const noIndexes = result.peers[2].destinationCpuSecondsPerGB;
      assert.ok(Math.abs(targets.noIndexRestorePlusIndexBuildsCpuSecondsPerGB - (noIndexes + indexBuilds)) < 0.02, JSON.stringify(targets));
      const [copy, builds] = ferry.stages;
      assert.ok(
        Math.abs(targets.ferryCopyDestinationCpuSecondsPerGB - (copy.destinationCpuSecondsPerGB + builds.destinationCpuSecondsPerGB)) <
          0.02,
        JSON.stringify(targets),
      );
      assert.ok(Math.abs(targets.ferryCopySeconds - (copy.seconds + builds.seconds)) < 0.02, JSON.stringify(targets));
      assert.ok(Math.abs(targets.destinationBusySeconds - (copy.destinationCpuSeconds + builds.destinationCpuSeconds)) < 0.02);
      assert.equal(targets.ferryDestinationCpuSecondsPerGB, result.ferryDestinationCpuSecondsPerGB);
      assert.equal(
        targets.cpuPerByteMet,
        targets.ferryCopyDestinationCpuSecondsPerGB <= targets.noIndexRestorePlusIndexBuildsCpuSecondsPerGB,
      );
      assert.equal(targets.busyTimeMet, targets.timeOverBusy <= 1.1);
      assert.match(
        run.stdout,
        /destination CPU s\/GB during Ferry's copy and index builds: Ferry [\d.]+ \([\d.]+ to canCommit\), --noIndexRestore \+ Ferry's index builds [\d.]+ \((met|missed)\)/,
      );
    },
  );

  it('refuses a tools directory without the tools, and writes nothing', async () => {
    const out = resultsDir();
    const run = await runScript('bench/copy.js', ['--sizeMB', '2', '--mongoTools', out, '--out', out]);
    assert.notEqual(run.code, 0);
    assert.match(run.stderr, /--mongoTools: mongodump and mongorestore not found in/);
    assert.throws(() => readResult(out, 'copy'), /ENOENT/);
  });

  it('refuses a bad size with a one-line reason and writes nothing', async () => {
    const out = resultsDir();
    const run = await runScript('bench/copy.js', ['--sizeMB', 'lots', '--out', out]);
    assert.notEqual(run.code, 0);
    assert.match(run.stderr, /--sizeMB.*must be a positive number/);
    assert.throws(() => readResult(out, 'copy'), /ENOENT/);
  });

  it("reads Ferry's progress once a second while the copy is far from its end, and every 100 ms near it and after", () => {
    let now = 0;
    const next = readPacing(() => now);
    const copying = (copied: number) =>
      ({
        state: 'RUNNING',
        info: 'collection copy',
        collectionCopy: { estimatedCopiedBytes: copied, estimatedTotalBytes: 1000 },
      }) as Progress;
    assert.equal(next({ state: 'RUNNING', info: 'collection copy', collectionCopy: null } as Progress), 100, 'planning');
    assert.equal(next(copying(10)), 100, 'the first bytes: no rate yet');
    now = 100;
    assert.equal(next(copying(20)), 1000, '980 bytes left at 0.1 a millisecond: ~10 s');
    now = 9_000;
    assert.equal(next(copying(900)), 100, '100 bytes left at the same rate: ~1 s');
    assert.equal(next(copying(1000)), 100, 'index builds');
    assert.equal(
      next({ state: 'RUNNING', info: 'change event application', collectionCopy: copying(1000).collectionCopy } as Progress),
      100,
    );
  });
});
