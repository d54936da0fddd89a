// Runs every compiled `*.test.js` under dist/test with Node's built-in runner.
// Node 20's own discovery treats every file below a `test/` folder as a test,
// which would execute the test cluster's modules; so the list is built here.
// Usage: node dist/scripts/run-tests.js [substring ...]   (filters by path)
import { mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const root = join(fileURLToPath(import.meta.url), '..', '..', 'test');

function findTests(dir: string): string[] {
  const found: string[] = [];
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) found.push(...findTests(path));
    else if (name.endsWith('.test.js')) found.push(path);
  }
  return found;
}

/**
 * The longest files (by a full run on this machine: 50–170 s each), started first: a run that
 * starts them last ends on one of them alone while the other slots are idle.
 */
const LONGEST_FIRST = [
  'e2e/fault-matrix.test',
  'api/cli.test',
  'e2e/verify.test',
  'bench/copy.test',
  'e2e/multi-instance-three.test',
  'e2e/lease.test',
  'e2e/cea-rename-after-copy.test',
  'e2e/sharded-copy-races.test',
];
const rank = (file: string) => {
  const at = LONGEST_FIRST.findIndex((name) => relative(root, file).startsWith(name));
  return at === -1 ? LONGEST_FIRST.length : at;
};

const filters = process.argv.slice(2);
const files = findTests(root)
  .filter((f) => filters.length === 0 || filters.some((s) => relative(root, f).includes(s)))
  .sort()
  .sort((a, b) => rank(a) - rank(b));
if (files.length === 0) {
  console.error(`no test files matched ${filters.join(' ') || '(all)'}`);
  process.exit(1);
}
// Most tests wait on sockets and child processes, not on the CPU: run a few files at once.
const concurrency = process.env.FERRY_TEST_CONCURRENCY ?? '3';
// Tests write logs and files under the temporary directory; give this run its own, removed
// afterwards when everything passed (kept, and named, when something failed: the logs help).
const runTmp = mkdtempSync(join(tmpdir(), 'ferry-test-run-'));
const result = spawnSync(process.execPath, ['--test', `--test-concurrency=${concurrency}`, ...files], {
  stdio: 'inherit',
  env: { ...process.env, TMPDIR: runTmp },
});
if (result.status === 0) rmSync(runTmp, { recursive: true, force: true });
else console.error(`test files and logs of this run kept in ${runTmp}`);
process.exit(result.status ?? 1);
