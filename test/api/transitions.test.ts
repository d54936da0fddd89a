/**
 * Every legal and illegal transition through the real HTTP API (fastify inject) with a test
 * double engine: legal requests move the state as the table says, every other request is refused
 * with its error name and leaves state, progress and engine untouched.
 */
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { MongoServerError } from 'mongodb';
import { buildTestApp, VALID_START, type TestApp } from './app.js';
import { FakeEngine, gate } from './fake-engine.js';
import { assertProgressRules } from './progress-rules.js';
import { COMMANDS, STATES, type Command, type State } from '../../src/domain/states.js';
import { ChangeStreamHistoryLost, ClusterUnreachable, DestinationNotEmpty, FerryError, NotImplemented } from '../../src/errors/errors.js';

const REVERSIBLE_START = { ...VALID_START, reversible: true, enableUserWriteBlocking: true };
const BODIES: Record<Command, object> = { start: VALID_START, pause: {}, resume: {}, commit: {}, reverse: {} };
const open: TestApp[] = [];
after(async () => {
  await Promise.all(open.map((t) => t.close()));
});

/** Lets queued engine events run. */
const settle = () => new Promise((resolve) => setImmediate(resolve));

async function expectOk(t: TestApp, command: Command, body: object = BODIES[command]): Promise<void> {
  const response = await t.post(`/api/v1/${command}`, body);
  assert.deepEqual(response.body, { success: true }, `${command}: ${JSON.stringify(response.body)}`);
  assert.equal(response.status, 200);
}

/** A test app brought to `state` through the API (and engine events where the table needs them). */
async function reach(state: State, options: { reversible?: boolean } = {}): Promise<TestApp> {
  if (state === 'INITIALIZING') {
    const engine = new FakeEngine();
    engine.holdNext.set('recover', new Promise(() => {})); // recovery never finishes
    const t = await buildTestApp({ engine, initialize: false });
    void t.machine.initialize();
    open.push(t);
    return t;
  }
  const t = await buildTestApp();
  open.push(t);
  if (state === 'IDLE') return t;
  await expectOk(t, 'start', options.reversible ? REVERSIBLE_START : VALID_START);
  if (state === 'RUNNING') return t;
  if (state === 'PAUSED') {
    await expectOk(t, 'pause');
    return t;
  }
  t.engine.figures = { ...t.engine.figures, readyToCommit: true };
  await expectOk(t, 'commit');
  if (state === 'COMMITTING') return t;
  t.engine.emit({ type: 'commitCompleted' });
  await settle();
  if (state === 'COMMITTED') return t;
  await expectOk(t, 'reverse');
  return t;
}

describe('legal transitions', () => {
  for (const [command, { from, to }] of Object.entries(COMMANDS) as [Command, { from: State; to: State }][]) {
    it(`${command}: ${from} → ${to}`, async () => {
      const t = await reach(from, { reversible: true });
      if (command === 'commit') t.engine.figures = { ...t.engine.figures, readyToCommit: true };
      const callsBefore = t.engine.calls.length;
      await expectOk(t, command);
      assert.equal((await t.progress()).state, to);
      assert.equal(t.engine.calls.at(-1), command, 'the engine was asked to act');
      assert.ok(t.engine.calls.length > callsBefore);
      assertProgressRules(await t.progress());
    });
  }

  it('start hands the engine the normalized request after preflight, and progress shows the direction', async () => {
    const t = await reach('IDLE');
    await expectOk(t, 'start', { source: 'cluster1', destination: 'cluster0' });
    assert.deepEqual(t.engine.calls, ['recover', 'preflight', 'start']);
    assert.deepEqual(t.engine.startedWith, {
      source: 'cluster1',
      destination: 'cluster0',
      buildIndexes: 'afterDataCopy',
      reversible: false,
      enableUserWriteBlocking: 'destinationOnly',
      verification: { enabled: true },
      detectRandomId: true,
      preExistingDestinationData: false,
      skipDiskSpaceCheck: false,
    });
    const progress = await t.progress();
    assert.deepEqual(progress.directionMapping, {
      Source: 'cluster1: db1.example.net:27019',
      Destination: 'cluster0: db0.example.net:27018',
    });
    assert.deepEqual(progress.collectionCopy, { estimatedTotalBytes: 1, estimatedCopiedBytes: 0 });
    assert.equal(progress.mongosyncID, 'test-instance');
  });

  it('commit completes by itself: COMMITTING → COMMITTED when the engine reports it; writes become safe', async () => {
    const t = await reach('COMMITTING');
    const committing = await t.progress();
    assert.equal(committing.info, 'waiting for commit to complete');
    assert.equal(committing.canWrite, false);
    t.engine.emit({ type: 'commitCompleted' });
    await settle();
    const committed = await t.progress();
    assert.equal(committed.state, 'COMMITTED');
    assert.equal(committed.info, 'commit completed');
    assert.equal(committed.canWrite, true);
    assert.equal(committed.lagTimeSeconds, 0);
  });

  it('reverse swaps the direction; the engine reporting completion returns to RUNNING the other way', async () => {
    const t = await reach('REVERSING', { reversible: true });
    const reversing = await t.progress();
    assert.equal(reversing.directionMapping!.Source, 'cluster1: db1.example.net:27019');
    assert.equal(reversing.directionMapping!.Destination, 'cluster0: db0.example.net:27018');
    t.engine.emit({ type: 'reverseCompleted' });
    await settle();
    const running = await t.progress();
    assert.equal(running.state, 'RUNNING');
    assert.equal(running.directionMapping!.Source, 'cluster1: db1.example.net:27019');
  });

  it('an engine failure while RUNNING pauses the sync with the reason in warnings; resume clears it', async () => {
    const t = await reach('RUNNING');
    t.engine.emit({ type: 'failed', error: new Error('lost mongodb://ferry:s3cret@db0.example.net:27018') });
    await settle();
    const paused = await t.progress();
    assert.equal(paused.state, 'PAUSED');
    assert.equal(paused.warnings!.length, 1);
    assert.match(paused.warnings![0]!, /stopped on an error.*lost mongodb:\/\/<credentials>@db0/);
    assertProgressRules(paused);
    await expectOk(t, 'resume');
    const resumed = await t.progress();
    assert.equal(resumed.state, 'RUNNING');
    assert.deepEqual(resumed.warnings, []);
  });

  it('a failure the server names pauses the sync with that name in warnings', async () => {
    const t = await reach('RUNNING');
    const error = new MongoServerError({
      ok: 0,
      code: 171,
      codeName: 'CannotIndexParallelArrays',
      errmsg: 'Index build failed: cannot index parallel arrays [b] [a]',
    });
    t.engine.emit({ type: 'failed', error });
    await settle();
    const paused = await t.progress();
    assert.equal(paused.state, 'PAUSED');
    assert.match(paused.warnings![0]!, /paused: CannotIndexParallelArrays: Index build failed: cannot index parallel arrays/);
  });

  it('a failure the sync cannot continue from ends COMMITTING too: PAUSED, and the warning offers no resume', async () => {
    const t = await reach('COMMITTING');
    t.engine.emit({ type: 'failed', error: new ChangeStreamHistoryLost({ reason: 'oplog rolled over' }) });
    await settle();
    const paused = await t.progress();
    assert.equal(paused.state, 'PAUSED');
    assert.match(paused.warnings![0]!, /cannot continue, so resume and commit are refused \(ChangeStreamHistoryLost\)/);
    assert.doesNotMatch(paused.warnings![0]!, /POST \/api\/v1\/resume/);
    assertProgressRules(paused);
  });

  it('a failure it can get past while COMMITTING leaves the commit to retry (still COMMITTING)', async () => {
    const t = await reach('COMMITTING');
    t.engine.emit({ type: 'failed', error: new Error('a passing condition') });
    await settle();
    assert.equal((await t.progress()).state, 'COMMITTING');
  });

  it('recovery at startup puts the machine in the recovered state with its direction', async () => {
    const engine = new FakeEngine();
    const base = await buildTestApp({ engine: new FakeEngine() });
    open.push(base);
    await expectOk(base, 'start');
    engine.recovered = { state: 'PAUSED', request: base.engine.startedWith! };
    const t = await buildTestApp({ engine });
    open.push(t);
    const progress = await t.progress();
    assert.equal(progress.state, 'PAUSED');
    assert.equal(progress.directionMapping!.Source, 'cluster0: db0.example.net:27018');
    await expectOk(t, 'resume');
  });
});

describe('illegal transitions are refused and change nothing', () => {
  for (const state of STATES) {
    for (const [command, { from }] of Object.entries(COMMANDS) as [Command, { from: State }][]) {
      if (from === state) continue;
      it(`${command} in ${state} → 409 InvalidStateTransition`, async () => {
        const t = await reach(state, { reversible: true });
        const before = await t.progress();
        const calls = [...t.engine.calls];
        const response = await t.post(`/api/v1/${command}`, BODIES[command]);
        assert.equal(response.status, 409);
        assert.equal(response.body.success, false);
        assert.equal(response.body.error, 'InvalidStateTransition');
        assert.match(
          response.body.errorDescription,
          new RegExp(`${command} is allowed only in state ${from}; the current state is ${state}`),
        );
        assert.deepEqual(await t.progress(), before);
        assert.deepEqual(t.engine.calls, calls, 'the engine was not asked anything');
      });
    }
  }

  it('commit while RUNNING but not ready → 409 NotReadyToCommit', async () => {
    const t = await reach('RUNNING');
    const response = await t.post('/api/v1/commit', {});
    assert.equal(response.status, 409);
    assert.equal(response.body.error, 'NotReadyToCommit');
    assert.equal((await t.progress()).state, 'RUNNING');
    assert.ok(!t.engine.calls.includes('commit'));
  });

  it('reverse after a sync that was not reversible → 409 NotReversible', async () => {
    const t = await reach('COMMITTED', { reversible: false });
    const response = await t.post('/api/v1/reverse', {});
    assert.equal(response.status, 409);
    assert.equal(response.body.error, 'NotReversible');
    assert.equal((await t.progress()).state, 'COMMITTED');
    assert.ok(!t.engine.calls.includes('reverse'));
  });

  it('engine events that do not fit the state are ignored', async () => {
    const t = await reach('RUNNING');
    t.engine.emit({ type: 'commitCompleted' });
    t.engine.emit({ type: 'reverseCompleted' });
    await settle();
    assert.equal((await t.progress()).state, 'RUNNING');
  });

  it('progress is served while INITIALIZING (recovery still running), with every field but state and canCommit null', async () => {
    const t = await reach('INITIALIZING');
    assertProgressRules(await t.progress());
    assert.equal((await t.progress()).state, 'INITIALIZING');
  });
});

describe('engine failures are reported with their names and leave the state as it was', () => {
  const cases: [string, () => FerryError, number][] = [
    ['DestinationNotEmpty', () => new DestinationNotEmpty('db.coll holds documents'), 422],
    [
      'ClusterUnreachable',
      () => new ClusterUnreachable({ cluster: 'cluster1 (db1:27019)', operation: 'hello', reason: 'connection refused' }),
      502,
    ],
    ['NotImplemented', () => new NotImplemented('no engine'), 501],
  ];
  for (const [name, makeError, status] of cases) {
    it(`preflight throwing ${name} → ${status} ${name}, still IDLE, engine.start never called`, async () => {
      const t = await reach('IDLE');
      t.engine.failNext.set('preflight', makeError());
      const response = await t.post('/api/v1/start', VALID_START);
      assert.equal(response.status, status);
      assert.deepEqual(Object.keys(response.body).sort(), ['error', 'errorDescription', 'success']);
      assert.equal(response.body.error, name);
      assert.equal((await t.progress()).state, 'IDLE');
      assert.ok(!t.engine.calls.includes('start'));
    });
  }

  it('a non-Ferry error from the engine → 500 InternalError, state kept', async () => {
    const t = await reach('RUNNING');
    t.engine.failNext.set('pause', new TypeError('boom'));
    const response = await t.post('/api/v1/pause', {});
    assert.equal(response.status, 500);
    assert.equal(response.body.error, 'InternalError');
    assert.match(response.body.errorDescription, /boom/);
    assert.equal((await t.progress()).state, 'RUNNING');
  });

  it('after a failed start, a second start can succeed', async () => {
    const t = await reach('IDLE');
    t.engine.failNext.set('start', new ClusterUnreachable({ cluster: 'cluster1 (db1:27019)', operation: 'hello', reason: 'gone' }));
    assert.equal((await t.post('/api/v1/start', VALID_START)).body.error, 'ClusterUnreachable');
    await expectOk(t, 'start');
    assert.equal((await t.progress()).state, 'RUNNING');
  });
});

describe('shutdown', () => {
  it(
    'once closing, requests are refused as shutting down, progress is ' +
      'still served, and the engine closes after the request in progress',
    async () => {
      const t = await reach('RUNNING');
      const hold = gate();
      t.engine.holdNext.set('pause', hold.promise);
      const pausing = t.post('/api/v1/pause', {});
      while (!t.engine.calls.includes('pause')) await settle();
      const closed = t.machine.close();
      const refused = await t.post('/api/v1/resume', {});
      assert.equal(refused.status, 409);
      assert.equal(refused.body.error, 'InvalidStateTransition');
      assert.match(refused.body.errorDescription, /Ferry is shutting down/);
      assert.equal((await t.progress()).state, 'RUNNING');
      assert.ok(!t.engine.calls.includes('close'), 'the engine is not closed under a request in progress');
      hold.open();
      assert.deepEqual((await pausing).body, { success: true });
      await closed;
      assert.deepEqual(t.engine.calls.slice(-2), ['pause', 'close']);
      assert.equal((await t.progress()).state, 'PAUSED');
    },
  );
});

describe('serialization', () => {
  it('two simultaneous starts: exactly one succeeds, the other is refused as RUNNING', async () => {
    const t = await reach('IDLE');
    const hold = gate();
    t.engine.holdNext.set('preflight', hold.promise);
    const first = t.post('/api/v1/start', VALID_START);
    const second = t.post('/api/v1/start', VALID_START);
    await settle();
    // Progress does not wait for the start in progress.
    assert.equal((await t.progress()).state, 'IDLE');
    hold.open();
    const results = await Promise.all([first, second]);
    const errors = results.map((r) => r.body.error ?? 'ok').sort();
    assert.deepEqual(errors, ['InvalidStateTransition', 'ok']);
    assert.deepEqual(
      t.engine.calls.filter((c) => c === 'start'),
      ['start'],
    );
  });
});
