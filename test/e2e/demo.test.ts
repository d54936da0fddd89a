// `npm run demo` at a small size, as CI runs it: the whole job end to end with exit code 0 and a
// verified destination; and a failing step ends with a reason and nothing left running.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { resultsDir, runScript } from '../bench/run-script.js';

/** Pids the demo said it started ("(pid 1234)"). */
function startedPids(stdout: string): number[] {
  return [...stdout.matchAll(/\(pid (\d+)\)/g)].map((match) => Number(match[1]));
}

function running(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

describe('npm run demo', () => {
  it('copies, applies the workload, commits and verifies the destination, then stops everything', async () => {
    const summaryFile = join(resultsDir(), 'summary.json');
    const run = await runScript('scripts/demo.js', [
      '--sizeMB',
      '3',
      '--opsPerSecond',
      '200',
      '--applySeconds',
      '2',
      '--timeoutSeconds',
      '40',
      '--summaryFile',
      summaryFile,
    ]);
    assert.equal(run.code, 0, `${run.stdout}\n${run.stderr}`);
    assert.match(run.stdout, /^Status page: http:\/\/127\.0\.0\.1:\d+\/ /m, 'the demo says where the status page is');
    const summary = JSON.parse(readFileSync(summaryFile, 'utf8'));
    assert.ok(summary.copiedBytes >= summary.source.bytes, 'the whole source was copied');
    assert.ok(summary.workload.writes > 0 && summary.workload.errors === 0, JSON.stringify(summary.workload));
    assert.ok(summary.eventsApplied > 0, 'the workload’s writes were applied as change events');
    assert.ok(summary.lagSeconds.samples > 0 && summary.lagSeconds.p50 <= summary.lagSeconds.p99, JSON.stringify(summary.lagSeconds));
    // 8 collections and 1 view, each compared equal.
    assert.equal(summary.verified.namespaces, summary.source.collections + summary.source.views);
    assert.equal(summary.embeddedVerification.outcome, 'clean', 'Ferry’s own verifier agrees');
    assert.ok(summary.embeddedVerification.documents.source >= summary.source.documents, JSON.stringify(summary.embeddedVerification));
    assert.match(run.stdout, /destination equals source/);
    assert.doesNotMatch(run.stdout, /DIFFERENT/);
    assert.deepEqual(startedPids(run.stdout).sort(), Object.values(summary.pids).sort());
    assert.deepEqual(startedPids(run.stdout).filter(running), [], 'no process the demo started is left running');
  });

  it('fails with the reason when a step fails, and stops the clusters it started', async () => {
    // Ferry refuses this flag at startup, after both clusters are up and filled.
    const run = await runScript('scripts/demo.js', ['--sizeMB', '1', '--loadLevel', '9']);
    assert.equal(run.code, 1);
    assert.match(run.stderr, /demo failed: ferry exited during startup: .*--loadLevel must be an integer from 1 to 4/);
    const pids = startedPids(run.stdout);
    assert.equal(pids.length, 2, run.stdout);
    assert.deepEqual(pids.filter(running), []);
  });
});
