// bench:instances at 1 MB and one run (the benchmark's own is 32 MB, 3 runs: too long for npm test):
// both setups copy the whole source, the three instances' CPU is each one's own, and the ratio is theirs.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { notPositive, readResult, resultsDir, runScript } from './run-script.js';

describe('bench:instances', () => {
  it('copies a 3-shard source with one instance and with three, side by side', async () => {
    const out = resultsDir();
    const run = await runScript('bench/instances.js', ['--sizeMB', '1', '--collections', '2', '--runs', '1', '--out', out]);
    assert.equal(run.code, 0, run.stderr);
    const result = readResult(out, 'instances');
    assert.equal(result.shards.length, 3);
    assert.equal(result.runs.length, 1);
    const [{ one, three, ratio }] = result.runs;
    for (const setup of [one, three])
      assert.deepEqual(notPositive(setup, ['seconds', 'MBps', 'cpuSeconds', 'ferryCoresBusy', 'MBperCpuSecond']), []);
    assert.deepEqual(
      one.instances.map((each: { id: string }) => each.id),
      ['coordinator'],
    );
    assert.deepEqual(
      three.instances.map((each: { id: string }) => each.id),
      result.shards,
    );
    for (const each of three.instances) assert.ok(each.cpuSeconds > 0, JSON.stringify(each));
    assert.equal(ratio, Math.round((three.MBps / one.MBps) * 100) / 100);
    assert.equal(result.median.ratio, ratio);
    assert.match(run.stdout, /median of 1: one [\d.]+ MB\/s, three [\d.]+ MB\/s/);
  });
});
