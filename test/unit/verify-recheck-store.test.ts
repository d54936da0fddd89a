/**
 * The verifier's stored re-checks (src/verify/recheck-store.ts): progress asks their count every
 * second, so it is read again only after a write; a count read while a write was on its way must
 * not be kept past it (the final pass ends on a count of 0). Tested with a collection double whose
 * write lands when the test says.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { MetadataStore } from '../../src/meta/store.js';
import { RecheckStore } from '../../src/verify/recheck-store.js';

function heldStore() {
  let stored = 1;
  let counts = 0;
  let land!: () => void;
  const landed = new Promise<void>((resolve) => (land = resolve));
  const collection = {
    bulkWrite: async (operations: unknown[]) => {
      await landed;
      stored += operations.length;
      return {};
    },
    countDocuments: async () => {
      counts++;
      return stored;
    },
  };
  const store = new RecheckStore({ instance: 'i', collection: () => collection } as unknown as MetadataStore);
  return { store, land, counts: () => counts };
}

describe('stored re-checks', () => {
  it('are counted once until a write, and again after a write that landed while they were counted', async () => {
    const { store, land, counts } = heldStore();
    assert.equal(await store.count(), 1);
    assert.equal(await store.count(), 1);
    assert.equal(counts(), 1, 'nothing written: the count is not read again');
    const saving = store.save([{ ns: 'db.c', id: 'x', attempts: 0 }]);
    assert.equal(await store.count(), 1, 'read while the write is on its way');
    land();
    await saving;
    assert.equal(await store.count(), 2, 'the count read before the write landed is not kept');
    assert.equal(counts(), 2);
  });
});
