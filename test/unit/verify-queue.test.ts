// The verifier's queue of documents to check again: one entry per document, due once events
// through its time are applied; a change stream's position is recordable only past batches whose
// entries are all decided or written out; memory is bounded (entries spill to the store), and
// an entry touched while being written out stays.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Timestamp } from 'bson';
import { RecheckQueue } from '../../src/verify/recheck-queue.js';
import type { RecheckStore, StoredRecheck } from '../../src/verify/recheck-store.js';
import type { StreamPoint } from '../../src/verify/state.js';

const time = (t: number) => new Timestamp({ t, i: 1 });
const point = (t: number): StreamPoint => ({ resumeToken: { _data: `token-${t}` }, time: time(t) });

function fakeStore(hold?: Promise<void>) {
  const saved: StoredRecheck[] = [];
  const store = {
    save: async (rechecks: StoredRecheck[]) => {
      await hold;
      saved.push(...rechecks.map((r) => ({ ...r })));
    },
  } as unknown as RecheckStore;
  return { saved, store };
}

describe('verifier re-check queue', () => {
  it('keeps one entry per document, due at its latest touch, its confirmation started over', () => {
    const queue = new RecheckQueue(fakeStore().store, 100);
    const first = queue.touch('db.c', 'id1', time(10));
    first.attempts = 1;
    first.sourceHash = 'h';
    const again = queue.touch('db.c', 'id1', time(20));
    assert.equal(again, first);
    assert.equal(queue.size, 1);
    assert.equal(first.dueAt!.getHighBits(), 20);
    assert.equal(first.attempts, 0);
    assert.equal(first.sourceHash, undefined);
    assert.equal(queue.touch('db.c', 'id1', time(15)).dueAt!.getHighBits(), 20, 'an older touch does not move it back');
  });

  it('hands out what is due once events through its time are applied, never what is being checked', () => {
    const queue = new RecheckQueue(fakeStore().store, 100);
    const now = queue.touch('db.c', 'now', undefined);
    const later = queue.touch('db.c', 'later', time(50));
    assert.deepEqual(queue.due(undefined, 10), [now]);
    assert.deepEqual(queue.due(time(49), 10), [now]);
    assert.deepEqual(queue.due(time(50), 10), [now, later]);
    now.inFlight = true;
    assert.deepEqual(queue.due(time(50), 10), [later]);
    assert.deepEqual(queue.due(time(50), 0), []);
  });

  it('records a stream position only past batches whose entries are decided or written out', async () => {
    const { saved, store } = fakeStore();
    const queue = new RecheckQueue(store, 100);
    const b1 = queue.openBatch('source', point(1));
    const a = queue.touch('db.c', 'a', time(1), b1);
    const b2 = queue.openBatch('source', point(2));
    const b = queue.touch('db.c', 'b', time(2), b2);
    queue.openBatch('source', point(3)); // nothing touched
    assert.equal(queue.savablePoint('source'), undefined, 'a pins the first batch');
    queue.remove(a);
    assert.equal(queue.savablePoint('source')!.time!.getHighBits(), 1);
    assert.equal(queue.savablePoint('source'), undefined, 'b pins the second');
    // A later touch of b moves its pin to a later batch: the earlier one is free.
    const b4 = queue.openBatch('source', point(4));
    queue.touch('db.c', 'b', time(4), b4);
    assert.equal(queue.savablePoint('source')!.time!.getHighBits(), 3);
    // Written out: durable, so its batch no longer waits on it.
    assert.equal(await queue.spill(-1), 1);
    assert.deepEqual(
      saved.map((r) => [r.id, r.dueAt!.getHighBits()]),
      [['b', 4]],
    );
    assert.equal(queue.size, 0);
    assert.equal(queue.savablePoint('source')!.time!.getHighBits(), 4);
    assert.equal(queue.savablePoint('destination'), undefined, 'the other stream has its own batches');
    assert.equal(b.pins.source, undefined);
  });

  it('stays within its bound: the oldest entries spill to the store when it is full', async () => {
    const { saved, store } = fakeStore();
    const queue = new RecheckQueue(store, 8);
    for (let i = 0; i < 8; i++) queue.touch('db.c', `id${i}`, time(i), queue.openBatch('destination', point(i)));
    assert.equal(queue.full, true);
    await queue.makeRoom();
    assert.ok(queue.size <= 6, `memory back under its bound (${queue.size})`);
    assert.deepEqual(
      saved.map((r) => r.id),
      ['id0', 'id1'],
      'the oldest first',
    );
    assert.equal(queue.full, false);
  });

  it('keeps an entry touched while it was being written out (its newer state is not lost)', async () => {
    let release!: () => void;
    const hold = new Promise<void>((resolve) => (release = resolve));
    const { saved, store } = fakeStore(hold);
    const queue = new RecheckQueue(store, 100);
    queue.touch('db.c', 'x', time(1), queue.openBatch('source', point(1)));
    const spilling = queue.spill(-1);
    queue.touch('db.c', 'x', time(9), queue.openBatch('source', point(9)));
    release();
    assert.equal(await spilling, 1);
    assert.equal(saved.length, 1);
    assert.equal(queue.size, 1, 'still queued');
    assert.equal(queue.get('db.c', 'x')!.dueAt!.getHighBits(), 9);
  });

  it('takes stored entries back without duplicating one already in memory', () => {
    const queue = new RecheckQueue(fakeStore().store, 100);
    const inMemory = queue.touch('db.c', 'a', undefined);
    const loaded = queue.load([
      { ns: 'db.c', id: 'a', attempts: 0, afterCommit: true },
      { ns: 'db.c', id: 'b', attempts: 1, sourceHash: 'h' },
    ]);
    assert.equal(loaded.length, 1);
    assert.equal(loaded[0]!.id, 'b');
    assert.equal(inMemory.stored, true);
    assert.equal(inMemory.afterCommit, true);
    assert.deepEqual(
      queue.storedInMemory().map((k) => k.id),
      ['a', 'b'],
    );
  });
});
