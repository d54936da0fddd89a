import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { DEFAULT_WORKER_HEAP_MB } from '../../src/copy/worker-heap.js';
import { DEFAULT_CHECKPOINT_INTERVAL_MS, engineSettings } from '../../src/sync/settings.js';

const OPTIONS = { copyWorkers: 4, batchesInFlight: 2, batchBytes: 8 * 1024 * 1024, partitionSizeMB: 64 };

describe('engine settings', () => {
  it('follow the options, with raw writes and a one-second checkpoint interval by default', () => {
    assert.deepEqual(engineSettings(OPTIONS, {}), {
      copyWorkers: 4,
      workerHeapMB: DEFAULT_WORKER_HEAP_MB,
      partitionBytes: 64 * 1024 * 1024,
      copy: { batchBytes: 8 * 1024 * 1024, batchesInFlight: 2, checkpointIntervalMs: DEFAULT_CHECKPOINT_INTERVAL_MS, writePath: 'raw' },
    });
  });

  it('take the checkpoint interval, write path and worker heap from the environment', () => {
    const settings = engineSettings(OPTIONS, {
      FERRY_CHECKPOINT_INTERVAL_MS: '50',
      FERRY_COPY_WRITE_PATH: 'decode',
      FERRY_WORKER_HEAP_MB: '0',
    });
    assert.equal(settings.copy.checkpointIntervalMs, 50);
    assert.equal(settings.copy.writePath, 'decode');
    assert.equal(settings.workerHeapMB, 0);
  });

  it('refuse bad environment values with a message naming the variable', () => {
    assert.throws(() => engineSettings(OPTIONS, { FERRY_CHECKPOINT_INTERVAL_MS: 'soon' }), /FERRY_CHECKPOINT_INTERVAL_MS/);
    assert.throws(() => engineSettings(OPTIONS, { FERRY_COPY_WRITE_PATH: 'fast' }), /FERRY_COPY_WRITE_PATH/);
    assert.throws(
      () => engineSettings(OPTIONS, { FERRY_WORKER_HEAP_MB: '-1' }),
      /FERRY_WORKER_HEAP_MB must be a whole number of megabytes/,
    );
  });
});
