/**
 * The fault matrix (issue 18), a seeded representative part of it: the real `ferry` process
 * syncing a pair of test clusters while faults hit it (test/e2e/fault-matrix.ts). Every case must
 * end with the destination equal to the source once committed, or with a named error and no
 * COMMITTED: never a wrong destination reported as committed.
 *
 * - `failCommand`: one case for each command Ferry issues at start, copy, change-event
 *   application and commit, the fault kinds (transient error, dropped connection, blocked
 *   connection, write concern error) taking turns by the seed.
 * - Each cluster SIGKILLed and restarted with its data mid-copy, mid-application and during
 *   COMMITTING.
 * - Ferry SIGKILLed at seeded moments under a workload.
 *
 * `FERRY_FAULT_SEED=<n>` picks the seed (printed with every failure); `FERRY_FAULT_TRACE=1` prints
 * each case. The whole matrix (every kind on every command, more seeds and kills) is
 * `npm run bench:faults`.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import {
  describeCase,
  rotatedCases,
  runFailCommandCases,
  runKillScenario,
  runRestartScenario,
  runStartCases,
  startMatrixClusters,
  TARGETS,
  summarize,
  type MatrixClusters,
  type ScenarioResult,
} from './fault-matrix.js';

const SEED = Number(process.env.FERRY_FAULT_SEED ?? 1);
/** An error's name in a message (`ClusterUnreachable`, `WriteConcernFailed`, ...). */
const NAMED = /\b[A-Z][a-z]+[A-Z][A-Za-z]+\b/;

/** Asserts the scenario's end: COMMITTED over a destination equal to the source, every pause or refusal named. */
function assertSound(scenario: ScenarioResult, context: string): void {
  const where = `${context} (seed ${SEED}, FERRY_FAULT_SEED=${SEED} reproduces)`;
  if (scenario.stuck !== undefined) assert.match(scenario.stuck, NAMED, `${where}: the sync kept pausing without a named error`);
  assert.deepEqual(scenario.differences, [], `${where}: the destination differs from the source`);
  for (const result of scenario.results) {
    if (result.outcome === 'paused' || result.outcome === 'refused') {
      assert.match(
        result.error ?? '',
        /\b[A-Z][a-z]+[A-Z][A-Za-z]+\b/,
        `${where}: ${describeCase(result.case)} ${result.outcome} without a named error`,
      );
    }
  }
}

describe('fault matrix', () => {
  let clusters: MatrixClusters;
  before(async () => {
    clusters = await startMatrixClusters();
  });
  after(async () => {
    await clusters?.stop();
  });

  it('a fault on each command Ferry issues at start, copy, change-event application and commit', async (t) => {
    const cases = rotatedCases(SEED);
    const { scenarios, unreached } = await runFailCommandCases(clusters, `f${SEED}_`, cases, { seed: SEED, maxScenarios: 3 });
    t.diagnostic(summarize(scenarios, unreached));
    for (const scenario of scenarios) assertSound(scenario, scenario.name);
    assert.ok(
      scenarios.filter((s) => s.name !== `f${SEED}_s`).every((s) => s.committed || s.stuck !== undefined),
      'every sync with faults was committed, or stopped on a named error',
    );
    // A single passing failure is retried or the run relaunched from its records: the sync never pauses for it.
    const results = scenarios.flatMap((s) => s.results);
    const stopped = results.filter((r) => r.case.target.phase !== 'start' && r.outcome !== 'absorbed');
    assert.deepEqual(
      stopped.map((r) => `${describeCase(r.case)}: ${r.outcome} (${r.error ?? ''})`),
      [],
      `seed ${SEED}: a single passing failure stopped the sync or a request`,
    );
    const injected = results.length;
    // Most commands are reached in a sync or two; a few depend on timing (a batch in flight at the moment).
    assert.ok(
      injected >= cases.length * 0.8,
      `${injected} of ${cases.length} cases injected; not reached: ${unreached.map(describeCase).join(', ')}`,
    );
  });

  it('a start refused after its metadata write changes nothing: the next start is not refused for it', async (t) => {
    // The write concern error comes after the insert took effect on the primary (as on mongod).
    const target = (command: string) => TARGETS.find((x) => x.phase === 'start' && x.command === command)!;
    const cases = [
      { target: target('insert'), kind: 'writeConcernError' as const, variant: 0 }, // WriteConcernFailed: the driver does not retry it
      { target: target('setUserWriteBlockMode'), kind: 'error' as const },
    ];
    const { scenario, left } = await runStartCases(clusters, `s${SEED}`, cases, SEED);
    t.diagnostic(summarize([scenario], left));
    assertSound(scenario, 'start');
    assert.deepEqual(left.map(describeCase), [], 'every start case was reached');
    assert.equal(scenario.results[0]?.outcome, 'refused', 'the start whose metadata write failed is refused by name');
  });

  it('each cluster killed and restarted with its data mid-copy, mid-application and during COMMITTING', async (t) => {
    const scenario = await runRestartScenario(clusters, `r${SEED}`, SEED);
    t.diagnostic(summarize([scenario]));
    assert.ok(scenario.committed || scenario.stuck !== undefined, 'COMMITTED, or stopped on a named error');
    assert.ok(scenario.injected.length >= 4, `restarts: ${scenario.injected.join(', ')}`);
    assertSound(scenario, 'restarts');
  });

  it('Ferry SIGKILLed at seeded moments under a workload', async (t) => {
    const scenario = await runKillScenario(clusters, `k${SEED}`, SEED, 3);
    t.diagnostic(summarize([scenario]));
    assert.ok(scenario.committed || scenario.stuck !== undefined, 'COMMITTED, or stopped on a named error');
    assertSound(scenario, 'kills');
  });
});
