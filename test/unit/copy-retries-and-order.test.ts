// A partition copy against a flaky source and a slow destination: transient failures are retried
// for as long as each pass makes progress, and a capped collection's documents land on the
// destination in the source's insertion order.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { MongoNetworkError, type MongoClient } from 'mongodb';
import { copyPartition } from '../../src/copy/partition-copier.js';
import { copyResources, fakeSource, idBounds, partitionTask, recordingDestination } from './copy-fakes.js';

/**
 * A source serving `ids` (in this order for a natural-order read, in `_id` order within
 * `min`/`max` otherwise), whose every `failEvery`-th getMore fails with a network error.
 */
function flakySource(ids: number[], failEvery = 0): MongoClient {
  return fakeSource({
    serve: (find) => {
      if (find.hint?.$natural !== undefined) return [...ids];
      const { min, max } = idBounds(find);
      return ids.filter((i) => i >= min && i < max).sort((a, b) => a - b);
    },
    beforeGetMore: (n) => {
      if (failEvery > 0 && n % failEvery === 0) throw new MongoNetworkError('connection reset by the test');
    },
  });
}

describe('a partition copy that meets failures', () => {
  it('retries transient failures for as long as each pass moves on, more often in all than the retry budget', async () => {
    // Every second getMore fails: each pass copies two replies, then fails (7 failures in all).
    const ids = Array.from({ length: 600 }, (_, i) => i);
    const written: number[] = [];
    const outcome = await copyPartition(partitionTask(), copyResources(flakySource(ids, 2), recordingDestination(written)));
    assert.equal(outcome.status, 'done');
    assert.deepEqual(
      ids.filter((i) => !written.includes(i)),
      [],
      'every document is copied',
    );
  });

  it('writes a capped collection one batch at a time, in the source’s insertion order, whatever the batches in flight', async () => {
    // Insertion order is not _id order; the first batch's write is the slowest.
    const ids = Array.from({ length: 300 }, (_, i) => (i * 7919) % 300);
    const written: number[] = [];
    const destination = recordingDestination(written, (batch) => (batch === 0 ? 50 : 0));
    const outcome = await copyPartition(
      partitionTask({ order: 'natural', settings: { batchBytes: 1024, batchesInFlight: 4, checkpointIntervalMs: 0, writePath: 'decode' } }),
      copyResources(flakySource(ids), destination),
    );
    assert.equal(outcome.status, 'done');
    assert.deepEqual(written, ids);
  });

  it('writes a natural-order partition of a collection that is not capped several batches at a time', async () => {
    const ids = Array.from({ length: 300 }, (_, i) => (i * 7919) % 300);
    const written: number[] = [];
    const destination = recordingDestination(written, (batch) => (batch === 0 ? 50 : 0));
    const outcome = await copyPartition(
      partitionTask({
        order: 'natural',
        capped: false,
        settings: { batchBytes: 1024, batchesInFlight: 4, checkpointIntervalMs: 0, writePath: 'decode' },
      }),
      copyResources(flakySource(ids), destination),
    );
    assert.equal(outcome.status, 'done');
    assert.deepEqual(
      [...written].sort((a, b) => a - b),
      [...ids].sort((a, b) => a - b),
      'every document once',
    );
    assert.notDeepEqual(written, ids, 'later batches were written while the first, slow one was in flight');
  });
});
