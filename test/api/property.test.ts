/**
 * Property: from every state (reached by a legal path), for random sequences of API requests (valid and invalid bodies), engine events,
 * engine failures and engine figures, the state only ever moves along the transition table,
 * every response agrees with a simple model of the table, and progress obeys the spec's rules
 * after every step.
 */
import assert from 'node:assert/strict';
import { it } from 'node:test';
import fc from 'fast-check';
import { buildTestApp, VALID_START, type TestApp } from './app.js';
import { assertProgressRules } from './progress-rules.js';
import type { SyncEvent } from '../../src/domain/sync-control.js';
import { COMMANDS, isTransition, type Command, type State } from '../../src/domain/states.js';
import { ClusterUnreachable } from '../../src/errors/errors.js';

type Step =
  | { kind: 'request'; command: Command; body: unknown; valid: boolean; reversible: boolean }
  | { kind: 'event'; event: SyncEvent['type'] }
  | { kind: 'failNext'; command: Command }
  | { kind: 'figures'; ready: boolean; copied: number; total: number; lag: number | undefined; events: number };

/** Picks among values with weights: the ones that lead deeper into the table come up more often. */
function weighted<T>(choices: [T, number][]): fc.Arbitrary<T> {
  return fc.oneof(...choices.map(([value, weight]) => ({ weight, arbitrary: fc.constant(value) })));
}

const INVALID_BODIES = [
  [],
  'start',
  null,
  { source: 'cluster0' },
  { source: 'cluster0', destination: 'cluster0' },
  { ...VALID_START, x: 1 },
];

const requestStep: fc.Arbitrary<Step> = fc
  .record({
    command: weighted<Command>([
      ['start', 2],
      ['pause', 1],
      ['resume', 2],
      ['commit', 3],
      ['reverse', 2],
    ]),
    // Mostly valid bodies, so that sequences get deep into the table.
    valid: weighted([
      [true, 4],
      [false, 1],
    ]),
    reversible: fc.boolean(),
    invalidBody: fc.constantFrom(...INVALID_BODIES),
  })
  .map(({ command, valid, reversible, invalidBody }) => {
    const goodBody =
      command !== 'start' ? {} : reversible ? { ...VALID_START, reversible: true, enableUserWriteBlocking: true } : VALID_START;
    return { kind: 'request', command, valid, reversible, body: valid ? goodBody : invalidBody };
  });

const step: fc.Arbitrary<Step> = fc.oneof(
  { weight: 5, arbitrary: requestStep },
  {
    weight: 3,
    arbitrary: weighted<SyncEvent['type']>([
      ['commitCompleted', 3],
      ['reverseCompleted', 2],
      ['failed', 1],
    ]).map((event) => ({
      kind: 'event' as const,
      event,
    })),
  },
  {
    weight: 1,
    arbitrary: fc
      .constantFrom<Command>('start', 'pause', 'resume', 'commit', 'reverse')
      .map((command) => ({ kind: 'failNext' as const, command })),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constant('figures' as const),
      ready: weighted([
        [true, 3],
        [false, 1],
      ]),
      copied: fc.oneof(fc.nat(), fc.double({ min: -10, max: 1e12, noNaN: false })),
      total: fc.oneof(fc.nat(), fc.constant(0), fc.double({ min: -10, max: 1e12, noNaN: false })),
      lag: fc.option(fc.double({ min: 0, max: 1e5, noNaN: true }), { nil: undefined }),
      events: fc.nat(),
    }),
  },
);

/** What the table says a request should do, given the state and what the model knows. */
function expectedOutcome(state: State, s: Extract<Step, { kind: 'request' }>, model: Model): string {
  if (!s.valid) return 'InvalidRequest';
  if (state !== COMMANDS[s.command].from) return 'InvalidStateTransition';
  if (s.command === 'commit' && !model.ready) return 'NotReadyToCommit';
  if (s.command === 'reverse' && !model.reversible) return 'NotReversible';
  if (model.failNext.has(s.command === 'start' ? 'start' : s.command)) return 'ClusterUnreachable';
  return 'ok';
}

interface Model {
  ready: boolean;
  reversible: boolean;
  failNext: Set<Command>;
}

/** States seen across all runs, to check that the sequences reach every part of the table. */
const visited = new Set<State>();

async function run(t: TestApp, steps: Step[]): Promise<void> {
  const model: Model = { ready: false, reversible: false, failNext: new Set() };
  for (const s of steps) {
    const before = (await t.progress()).state;
    if (s.kind === 'request') {
      const expected = expectedOutcome(before, s, model);
      const response = await t.post(`/api/v1/${s.command}`, s.body);
      const outcome = response.body.success === true ? 'ok' : response.body.error;
      assert.equal(outcome, expected, `${s.command} in ${before}`);
      const after = (await t.progress()).state;
      if (outcome === 'ok') {
        assert.equal(after, COMMANDS[s.command].to);
        if (s.command === 'start') model.reversible = s.reversible;
      } else {
        assert.equal(after, before, 'a refused request changes nothing');
        if (expected === 'ClusterUnreachable') model.failNext.delete(s.command);
      }
    } else if (s.kind === 'event') {
      t.engine.emit(s.event === 'failed' ? { type: 'failed', error: new Error('network gone') } : { type: s.event });
      await new Promise((resolve) => setImmediate(resolve));
      const moves: Record<SyncEvent['type'], [State, State]> = {
        commitCompleted: ['COMMITTING', 'COMMITTED'],
        reverseCompleted: ['REVERSING', 'RUNNING'],
        failed: ['RUNNING', 'PAUSED'],
      };
      const [from, to] = moves[s.event];
      assert.equal((await t.progress()).state, before === from ? to : before, `${s.event} in ${before}`);
    } else if (s.kind === 'failNext') {
      t.engine.failNext.set(s.command, new ClusterUnreachable({ cluster: 'cluster1 (db1:27019)', operation: 'hello', reason: 'gone' }));
      model.failNext.add(s.command);
    } else {
      model.ready = s.ready;
      t.engine.figures = {
        info: 'change event application',
        readyToCommit: s.ready,
        estimatedCopiedBytes: s.copied,
        estimatedTotalBytes: s.total,
        lag: s.lag === undefined ? undefined : { overallSeconds: s.lag, crudSeconds: s.lag, ddlSeconds: 0 },
        eventsApplied: s.events,
        warnings: [],
      };
    }
    const progress = await t.progress();
    assert.ok(progress.state === before || isTransition(before, progress.state), `${before} → ${progress.state} is not in the table`);
    visited.add(progress.state);
    assertProgressRules(progress);
  }
}

const request = (command: Command, reversible = false): Step => ({
  kind: 'request',
  command,
  valid: true,
  reversible,
  body: command !== 'start' ? {} : reversible ? { ...VALID_START, reversible: true, enableUserWriteBlocking: true } : VALID_START,
});
const ready: Step = { kind: 'figures', ready: true, copied: 10, total: 10, lag: 1, events: 5 };

/** Legal steps from IDLE to a state, so that random steps start from every part of the table. */
function pathTo(state: State, reversible: boolean): Step[] {
  const running = [request('start', reversible)];
  const committing = [...running, ready, request('commit')];
  const committed = [...committing, { kind: 'event', event: 'commitCompleted' } as Step];
  const paths: Partial<Record<State, Step[]>> = {
    IDLE: [],
    RUNNING: running,
    PAUSED: [...running, request('pause')],
    COMMITTING: committing,
    COMMITTED: committed,
    REVERSING: [...committed, request('reverse')],
  };
  return paths[state]!;
}

it('random request sequences keep the state machine in its table and progress within the spec', async () => {
  const startState = fc.constantFrom<State>('IDLE', 'RUNNING', 'PAUSED', 'COMMITTING', 'COMMITTED', 'REVERSING');
  await fc.assert(
    fc.asyncProperty(startState, fc.boolean(), fc.array(step, { maxLength: 40 }), async (state, reversible, steps) => {
      const t = await buildTestApp();
      try {
        await run(t, [...pathTo(state, reversible || state === 'REVERSING'), ...steps]);
      } finally {
        await t.close();
      }
    }),
    { numRuns: 150 },
  );
  assert.deepEqual([...visited].sort(), ['COMMITTED', 'COMMITTING', 'IDLE', 'PAUSED', 'REVERSING', 'RUNNING']);
});
