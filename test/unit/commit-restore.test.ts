import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Int32 } from 'bson';
import { cappedSteps, describeFailure, indexSteps } from '../../src/commit/restore.js';
import { temporaryIndex } from '../../src/plan/indexes.js';

const ns = { db: 'shop', coll: 'orders' };

function stepsFor(source: Record<string, unknown>) {
  return indexSteps(ns, source, temporaryIndex(source).temporary).map((step) => [step.what, step.change]);
}

describe('commit restore steps', () => {
  it('turn a non-unique index unique through prepareUnique first', () => {
    assert.deepEqual(stepsFor({ v: 2, key: { email: 1 }, name: 'email_1', unique: true }), [
      ['prepareUnique', { index: { name: 'email_1', prepareUnique: true } }],
      ['unique', { index: { name: 'email_1', unique: true } }],
    ]);
  });

  it('put back prepareUnique alone, TTL values and hidden flags', () => {
    assert.deepEqual(stepsFor({ key: { a: 1 }, name: 'a_1', prepareUnique: true }), [['prepareUnique', { index: { name: 'a_1', prepareUnique: true } }]]);
    assert.deepEqual(stepsFor({ key: { at: 1 }, name: 'at_1', expireAfterSeconds: new Int32(3600) }), [
      ['expireAfterSeconds', { index: { name: 'at_1', expireAfterSeconds: new Int32(3600) } }],
    ]);
    assert.deepEqual(stepsFor({ key: { l: 1 }, name: 'l_1', hidden: true }), [['hidden', { index: { name: 'l_1', hidden: true } }]]);
  });

  it('need nothing for an index already in its source form', () => {
    assert.deepEqual(stepsFor({ key: { a: 1 }, name: 'a_1', partialFilterExpression: { a: { $gt: 1 } } }), []);
    const unique = { key: { e: 1 }, name: 'e_1', unique: true };
    assert.deepEqual(indexSteps(ns, unique, unique), []);
  });

  it('give a capped collection its size and document limit back, and nothing when it has them', () => {
    const source = { capped: true, size: 65536, max: 20 };
    assert.deepEqual(cappedSteps(ns, source, { capped: true, size: 1024 ** 5 }).map((s) => s.change), [{ cappedSize: 65536, cappedMax: 20 }]);
    assert.deepEqual(cappedSteps(ns, source, source), []);
    assert.deepEqual(cappedSteps(ns, { capped: true, size: 4096, max: 0 }, { capped: true, size: 4096 }), [], 'max 0 means none');
    assert.deepEqual(cappedSteps(ns, {}, {}), []);
  });

  it('describe a refused conversion by index and namespace, with what to do', () => {
    const [, unique] = indexSteps(ns, { key: { e: 1 }, name: 'e_1', unique: true }, { key: { e: 1 }, name: 'e_1' });
    const text = describeFailure({ step: unique!, codeName: 'CannotConvertIndexToUnique', message: 'Cannot convert the index to unique' });
    assert.match(text, /index "e_1" of shop\.orders/);
    assert.match(text, /CannotConvertIndexToUnique/);
    assert.match(text, /remove the duplicates/);
  });
});
