/**
 * buildProgress on the figures an engine can hand it: missing, fractional, negative, NaN, copy
 * overtaking the estimate; and what each state shows.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseClusterUri } from '../../src/config/clusters.js';
import { buildProgress } from '../../src/state/progress.js';
import { START_REQUEST as request } from '../api/app.js';
import type { SyncSnapshot } from '../../src/domain/sync-control.js';
import type { State } from '../../src/domain/states.js';

const clusters = {
  cluster0: parseClusterUri('cluster0', 'mongodb://u:p@a.example:1/?replicaSet=rs0'),
  cluster1: parseClusterUri('cluster1', 'mongodb+srv://u:p@b.example.net/'),
};
const quiet: SyncSnapshot = { info: 'collection copy', eventsApplied: 0, readyToCommit: false, warnings: [] };

function progress(state: State, snapshot: Partial<SyncSnapshot> = {}, warnings: string[] = []) {
  return buildProgress({ state, request, clusters, id: 'i', snapshot: { ...quiet, ...snapshot }, warnings });
}

describe('collectionCopy', () => {
  const cases: [string, Partial<SyncSnapshot>, { estimatedTotalBytes: number; estimatedCopiedBytes: number }][] = [
    ['no estimate yet: 0 of 1', {}, { estimatedTotalBytes: 1, estimatedCopiedBytes: 0 }],
    [
      'nothing to copy (empty collections only): 1 of 1, 100%',
      { estimatedTotalBytes: 0, estimatedCopiedBytes: 0 },
      { estimatedTotalBytes: 1, estimatedCopiedBytes: 1 },
    ],
    [
      'an estimate of 0 the copy overtakes: total raised to copied',
      { estimatedTotalBytes: 0, estimatedCopiedBytes: 500 },
      { estimatedTotalBytes: 500, estimatedCopiedBytes: 500 },
    ],
    ['plain figures', { estimatedTotalBytes: 1000, estimatedCopiedBytes: 250 }, { estimatedTotalBytes: 1000, estimatedCopiedBytes: 250 }],
    [
      'copy overtook the estimate: total raised to copied',
      { estimatedTotalBytes: 1000, estimatedCopiedBytes: 1200 },
      { estimatedTotalBytes: 1200, estimatedCopiedBytes: 1200 },
    ],
    [
      'fractions are floored',
      { estimatedTotalBytes: 10.9, estimatedCopiedBytes: 3.7 },
      { estimatedTotalBytes: 10, estimatedCopiedBytes: 3 },
    ],
    [
      'negative and NaN copied count as 0',
      { estimatedTotalBytes: 10, estimatedCopiedBytes: Number.NaN },
      { estimatedTotalBytes: 10, estimatedCopiedBytes: 0 },
    ],
    [
      'negative total counts as no estimate',
      { estimatedTotalBytes: -5, estimatedCopiedBytes: 3 },
      { estimatedTotalBytes: 1, estimatedCopiedBytes: 0 },
    ],
  ];
  for (const [what, snapshot, expected] of cases) {
    it(what, () => assert.deepEqual(progress('RUNNING', snapshot).collectionCopy, expected));
  }
});

describe('by state', () => {
  it("RUNNING reports the engine: info, lag (whole seconds), events, readiness, warnings after the machine's own", () => {
    const p = progress(
      'RUNNING',
      {
        info: 'change event application',
        lag: { overallSeconds: 2.8, crudSeconds: 2.8, ddlSeconds: 0.4 },
        eventsApplied: 42,
        readyToCommit: true,
        warnings: ['slow destination'],
      },
      ['paused earlier'],
    );
    assert.equal(p.info, 'change event application');
    assert.equal(p.lagTimeSeconds, 2);
    assert.deepEqual(p.lag, { overallLagSeconds: 2, crudLagSeconds: 2, ddlLagSeconds: 0 });
    assert.equal(p.totalEventsApplied, 42);
    assert.equal(p.canCommit, true);
    assert.equal(p.canWrite, false);
    assert.deepEqual(p.warnings, ['paused earlier', 'slow destination']);
    assert.deepEqual(p.directionMapping, { Source: 'cluster0: a.example:1', Destination: 'cluster1: b.example.net' });
  });

  it('lag is null until the engine measures it', () => {
    assert.equal(progress('RUNNING').lagTimeSeconds, null);
    assert.equal(progress('RUNNING').lag, null);
  });

  it('PAUSED: no lag, no commit, even if the engine still has figures', () => {
    const p = progress('PAUSED', { lag: { overallSeconds: 5, crudSeconds: 5, ddlSeconds: 0 }, readyToCommit: true });
    assert.equal(p.lagTimeSeconds, null);
    assert.equal(p.lag, null);
    assert.equal(p.canCommit, false);
  });

  it('COMMITTING and COMMITTED say so in info; COMMITTED allows writes with zero lag', () => {
    assert.equal(progress('COMMITTING', { readyToCommit: true }).info, 'waiting for commit to complete');
    assert.equal(progress('COMMITTING', { readyToCommit: true }).canCommit, false);
    const committed = progress('COMMITTED', { lag: { overallSeconds: 9, crudSeconds: 9, ddlSeconds: 9 } });
    assert.equal(committed.info, 'commit completed');
    assert.equal(committed.canWrite, true);
    assert.equal(committed.lagTimeSeconds, 0);
  });

  it('IDLE: everything but state and canCommit is null, whatever the engine says', () => {
    const p = buildProgress({
      state: 'IDLE',
      clusters,
      id: 'i',
      snapshot: { ...quiet, readyToCommit: true, eventsApplied: 3 },
      warnings: ['x'],
    });
    assert.deepEqual(
      Object.entries(p).filter(([, value]) => value !== null),
      [
        ['state', 'IDLE'],
        ['canCommit', false],
      ],
    );
  });
});

describe('warnings Ferry adds by itself', () => {
  const blocking = { ...request, enableUserWriteBlocking: 'sourceAndDestination' as const };
  const withRequest = (state: State, req: typeof request) =>
    buildProgress({ state, request: req, clusters, id: 'i', snapshot: quiet, warnings: [] });

  it('the source stays write-blocked after a commit with sourceAndDestination: named, with the command that lifts it', () => {
    for (const state of ['COMMITTING', 'COMMITTED'] as const) {
      const [warning, ...rest] = withRequest(state, blocking).warnings!;
      assert.deepEqual(rest, []);
      assert.match(warning!, /User writes are blocked on the source \(cluster0: a\.example:1\)/);
      assert.match(warning!, /setUserWriteBlockMode: 1, global: false/);
      assert.doesNotMatch(warning!, /u:p@/);
    }
    assert.deepEqual(withRequest('RUNNING', blocking).warnings, [], 'not before the commit');
    assert.deepEqual(withRequest('COMMITTED', { ...request, enableUserWriteBlocking: 'destinationOnly' }).warnings, [], 'not unblocked');
  });
});
