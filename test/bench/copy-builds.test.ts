// bench:copy-builds with this build named twice, at 1 MB: each build copies once per round and
// gets its medians (the benchmark's own size is 800 MB).
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { fileURLToPath } from 'node:url';
import { notPositive, readResult, resultsDir, runScript } from './run-script.js';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));

describe('bench:copy-builds', () => {
  it('copies with each build in turn and reports each one’s medians', async () => {
    const out = resultsDir();
    const run = await runScript('bench/copy-builds.js', [
      '--builds',
      `old=${ROOT},new=${ROOT}`,
      '--sizeMB',
      '1',
      '--runs',
      '1',
      '--out',
      out,
    ]);
    assert.equal(run.code, 0, run.stderr);
    const result = readResult(out, 'copy-builds');
    assert.deepEqual(
      result.runs.map((r: { build: string }) => r.build),
      ['old', 'new'],
    );
    assert.deepEqual(
      result.medians.map((m: { build: string }) => m.build),
      ['old', 'new'],
    );
    for (const median of result.medians) assert.deepEqual(notPositive(median, ['cpuSecondsPerGB', 'peakRssMB', 'MBps']), []);
    assert.match(run.stdout, /median new .* CPU-s\/GB \(.*×[\d.]+ the first's\)/);
  });

  it('refuses a directory that holds no build, before generating anything', async () => {
    const run = await runScript('bench/copy-builds.js', ['--builds', `old=${ROOT},missing=/nonexistent`, '--sizeMB', '1']);
    assert.equal(run.code, 1);
    assert.match(run.stderr, /\/nonexistent holds no build/);
  });
});
