// bench:micro with a short measuring time: every hot path the issue names is measured.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { notPositive, readResult, resultsDir, runScript } from './run-script.js';

describe('bench:micro', () => {
  it('measures reading _id, batch assembly, event routing and hashing, and writes micro.json', async () => {
    const out = resultsDir();
    const run = await runScript('bench/micro.js', ['--time', '50', '--out', out]);
    assert.equal(run.code, 0, run.stderr);
    const { cases } = readResult(out, 'micro');
    for (const topic of ['readId', 'batch assembly', 'event routing', 'hashing', 'test cluster']) {
      assert.ok(
        cases.some((c: { name: string }) => c.name.startsWith(topic)),
        `a case for ${topic}`,
      );
    }
    for (const c of cases)
      assert.deepEqual(notPositive(c, ['nsPerItem', 'itemsPerSecond', 'MBps', 'itemsPerRun', 'bytesPerRun']), [], c.name);
  });
});
