/**
 * The spec's progress rules (§2.1, §8) as one assertion, applied after every step of the API
 * tests and the property test.
 */
import assert from 'node:assert/strict';
import type { Progress } from '../../src/state/progress.js';
import { INSTANCE_ID } from './app.js';
import { STATES } from '../../src/domain/states.js';

const FIELDS = [
  'state',
  'canCommit',
  'canWrite',
  'info',
  'lagTimeSeconds',
  'lag',
  'totalEventsApplied',
  'collectionCopy',
  'indexBuilding',
  'directionMapping',
  'mongosyncID',
  'coordinatorID',
  'verification',
  'warnings',
  'estimatedSecondsToCEACatchup',
  'estimatedOplogTimeRemaining',
  'source',
  'destination',
  'tuning',
].sort();

/** mongosync's `estimatedOplogTimeRemaining` wordings. */
const OPLOG_TIME = /^(not checked yet|more than 72 hours|less than 15 minutes|\d+ minutes|\d+ hours)$/;

export function assertProgressRules(progress: Progress): void {
  assert.deepEqual(Object.keys(progress).sort(), FIELDS, 'progress has exactly the documented fields');
  assert.ok(STATES.includes(progress.state), `unknown state ${progress.state}`);
  assert.equal(typeof progress.canCommit, 'boolean');
  assert.doesNotMatch(JSON.stringify(progress), /s3cret|ferry:/, 'no credentials in progress');

  if (progress.state === 'IDLE' || progress.state === 'INITIALIZING') {
    for (const [field, value] of Object.entries(progress)) {
      if (field !== 'state' && field !== 'canCommit') assert.equal(value, null, `${field} is null in ${progress.state}`);
    }
    assert.equal(progress.canCommit, false);
    return;
  }
  if (progress.state === 'PAUSED') assert.equal(progress.lagTimeSeconds, null, 'lagTimeSeconds is null in PAUSED');
  if (progress.canCommit) assert.equal(progress.state, 'RUNNING', 'canCommit only in RUNNING');
  assert.equal(progress.canWrite, progress.state === 'COMMITTED');

  const copy = progress.collectionCopy!;
  assert.ok(Number.isInteger(copy.estimatedCopiedBytes) && copy.estimatedCopiedBytes >= 0);
  assert.ok(Number.isInteger(copy.estimatedTotalBytes) && copy.estimatedTotalBytes >= 1);
  assert.ok(copy.estimatedCopiedBytes <= copy.estimatedTotalBytes, 'copied never exceeds total');
  if (progress.lagTimeSeconds !== null) assert.ok(Number.isInteger(progress.lagTimeSeconds) && progress.lagTimeSeconds >= 0);
  assert.ok(Number.isInteger(progress.totalEventsApplied) && progress.totalEventsApplied! >= 0);

  assert.match(progress.directionMapping!.Source, /^cluster[01]: [^\s@/]+:\d+$/);
  assert.match(progress.directionMapping!.Destination, /^cluster[01]: [^\s@/]+:\d+$/);
  assert.notEqual(progress.directionMapping!.Source.slice(0, 8), progress.directionMapping!.Destination.slice(0, 8));
  assert.equal(progress.mongosyncID, INSTANCE_ID);
  assert.equal(progress.coordinatorID, INSTANCE_ID);
  assert.ok(Array.isArray(progress.warnings));

  if (progress.state === 'RUNNING') assert.match(progress.estimatedOplogTimeRemaining!, OPLOG_TIME);
  else assert.equal(progress.estimatedOplogTimeRemaining, null, 'estimatedOplogTimeRemaining only in RUNNING');
  const catchUp = progress.estimatedSecondsToCEACatchup;
  if (catchUp !== null) {
    assert.equal(progress.state, 'RUNNING');
    assert.ok(Number.isInteger(catchUp) && catchUp >= 0);
  }
  for (const side of [progress.source, progress.destination]) {
    assert.ok(side !== null && typeof side === 'object');
    const ping = side.pingLatencyMs;
    if (ping !== undefined) assert.ok(Number.isInteger(ping) && (ping === -1 || ping >= 1), `pingLatencyMs ${ping}`);
  }
  if (progress.tuning !== null) assert.ok(Number.isInteger(progress.tuning!.copyWorkers));
}
