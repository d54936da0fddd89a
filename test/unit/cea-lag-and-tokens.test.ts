import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Timestamp } from 'bson';
import { LagTracker } from '../../src/cea/lag.js';
import { sameResumeToken, tokenTime } from '../../src/cluster/resume-token.js';
import { describeTime, laterTime } from '../../src/domain/time.js';

const at = (t: number, i = 1) => new Timestamp({ t, i });

describe('resume token times', () => {
  it('reads the cluster time at the front of a token', () => {
    const token = { _data: `82${(1_700_000_123).toString(16).padStart(8, '0')}${(7).toString(16).padStart(8, '0')}2B0229296E04` };
    assert.ok(tokenTime(token)!.equals(at(1_700_000_123, 7)));
  });

  it('gives nothing for a token of another form', () => {
    assert.equal(tokenTime({ _data: '01ABCDEF' }), undefined);
    assert.equal(tokenTime({ _data: 123 }), undefined);
    assert.equal(tokenTime(undefined), undefined);
  });

  it('tells a repeated token (an idle stream) from one that moved', () => {
    const token = (i: number) => ({ _data: `82${(1_700_000_123).toString(16)}${i.toString(16).padStart(8, '0')}2B0229296E04` });
    assert.equal(sameResumeToken(token(7), token(7)), true);
    assert.equal(sameResumeToken(token(7), token(8)), false);
    assert.equal(sameResumeToken(token(7), undefined), false);
    assert.equal(sameResumeToken(undefined, undefined), true);
  });

  it('orders times and says them readably', () => {
    assert.ok(laterTime(at(5), at(4, 9))!.equals(at(5)));
    assert.ok(laterTime(undefined, at(4))!.equals(at(4)));
    assert.equal(describeTime(at(1_700_000_000, 3)), '2023-11-14T22:13:20.000Z#3');
  });
});

describe('lag', () => {
  it('is unknown until a time is known; before the source time is, the clock minus the start position', () => {
    const lag = new LagTracker();
    assert.equal(lag.lag(), undefined);
    lag.applied(at(100));
    assert.deepEqual(lag.lag(107.9), { overallSeconds: 7, crudSeconds: 7, ddlSeconds: 0 }, 'an integer before the stream answers');
    assert.equal(lag.lag(90)!.overallSeconds, 0, 'a clock behind the source never gives a negative lag');
  });

  it('is the source time minus the applied time, in seconds, once the source time is known', () => {
    const lag = new LagTracker();
    lag.applied(at(100));
    lag.observeSource(at(142, 5));
    assert.deepEqual(lag.lag(), { overallSeconds: 42, crudSeconds: 42, ddlSeconds: 0 });
    lag.applied(at(140));
    assert.equal(lag.lag()!.overallSeconds, 2);
    lag.applied(at(120));
    assert.equal(lag.lag()!.overallSeconds, 2, 'the applied time never goes back');
  });

  it('grows with the clock once the source goes unheard for longer than a read waits, caught up or not', () => {
    const lag = new LagTracker({ staleAfterSeconds: 3 });
    lag.applied(at(1000));
    lag.observeSource(at(1000), 1000);
    lag.caughtUp = true;
    assert.equal(lag.lag(1002)!.overallSeconds, 0, 'a read may wait this long: still caught up');
    assert.equal(lag.lag(1010)!.overallSeconds, 7, 'unheard for 10 s, 3 of them a normal wait');
    assert.equal(lag.lag(1020)!.overallSeconds, 17);
    lag.observeSource(at(1020), 1020);
    assert.equal(lag.lag(1020)!.overallSeconds, 0, 'heard again and caught up');
  });

  it('is at least the time since a cluster stopped answering, even when nothing was left to apply', () => {
    const lag = new LagTracker({ staleAfterSeconds: 3 });
    lag.applied(at(1000));
    lag.observeSource(at(1000), 1000);
    lag.caughtUp = true;
    assert.deepEqual(lag.lag(1001, 995), { overallSeconds: 6, crudSeconds: 6, ddlSeconds: 0 });
    assert.equal(lag.lag(1001, undefined)!.overallSeconds, 0);
  });

  it('is 0 when caught up, and counts a waiting DDL separately', () => {
    const lag = new LagTracker();
    lag.applied(at(100));
    lag.observeSource(at(110));
    lag.caughtUp = true;
    assert.deepEqual(lag.lag(), { overallSeconds: 0, crudSeconds: 0, ddlSeconds: 0 });
    lag.waitingDdl = at(104);
    assert.deepEqual(lag.lag(), { overallSeconds: 10, crudSeconds: 10, ddlSeconds: 6 });
    lag.waitingDdl = undefined;
    assert.equal(lag.lag()!.overallSeconds, 0);
  });
});
