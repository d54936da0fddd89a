// mongosync's estimatedOplogTimeRemaining and the warning before ChangeStreamHistoryLost.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Timestamp } from 'bson';
import { OPLOG_WARNING_SECONDS, oplogSecondsRemaining, oplogWarning } from '../../src/cea/oplog-window.js';
import { describeOplogTime } from '../../src/domain/oplog-time.js';

const at = (seconds: number) => new Timestamp({ t: seconds, i: 1 });

describe('the source oplog time remaining', () => {
  it("in mongosync's words", () => {
    assert.equal(describeOplogTime(undefined), 'not checked yet');
    assert.equal(describeOplogTime(10 * 60), 'less than 15 minutes');
    assert.equal(describeOplogTime(45 * 60), '45 minutes');
    assert.equal(describeOplogTime(5 * 3600 + 59 * 60), '5 hours');
    assert.equal(describeOplogTime(73 * 3600), 'more than 72 hours');
    assert.equal(describeOplogTime(Number.POSITIVE_INFINITY), 'more than 72 hours');
  });

  it('a full oplog: the window from its oldest entry to the oldest event still needed; 0 once that rolled off', () => {
    const full = { first: at(1000), last: at(9000), size: 990, maxSize: 1000 };
    assert.equal(oplogSecondsRemaining(full, at(1600)), 600);
    assert.equal(oplogSecondsRemaining(full, at(900)), 0);
  });

  it('an oplog not yet full adds the time to fill the rest at its growth rate', () => {
    // Half full after 1000 s: another 1000 s at the same rate before anything rolls off.
    const half = { first: at(0), last: at(1000), size: 500, maxSize: 1000 };
    assert.equal(oplogSecondsRemaining(half, at(200)), 1200);
    assert.equal(oplogSecondsRemaining(half, at(200), 5), 300, 'at a measured 5 bytes/s');
  });

  it('warns under an hour left, naming what happens and what to do; not above', () => {
    assert.equal(oplogWarning(undefined), undefined);
    assert.equal(oplogWarning(OPLOG_WARNING_SECONDS), undefined);
    const warning = oplogWarning(20 * 60);
    assert.match(warning!, /about 20 minutes of oplog are left/);
    assert.match(warning!, /replSetResizeOplog/);
    assert.match(warning!, /ChangeStreamHistoryLost/);
    assert.match(oplogWarning(5 * 60)!, /: less than 15 minutes of oplog are left/, 'not "about less than"');
  });
});
