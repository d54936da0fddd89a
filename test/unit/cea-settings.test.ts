import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ceaSettings } from '../../src/cea/settings.js';
import { commitRetryInterval } from '../../src/commit/commit.js';

const OPTIONS = { applyLanes: 4, batchBytes: 32 * 1024 * 1024 };

describe('settings of change-event application and commit', () => {
  it('follow the options, a lane batch staying within 16 MiB', () => {
    const settings = ceaSettings(OPTIONS, {});
    assert.equal(settings.applyLanes, 4);
    assert.equal(settings.maxBatchBytes, 16 * 1024 * 1024);
    assert.equal(settings.maxPendingBytes, 4 * settings.maxBatchBytes);
    assert.equal(ceaSettings({ applyLanes: 2, batchBytes: 4096 }, {}).maxBatchBytes, 4096);
  });

  it('read their tuning variables as whole milliseconds, default when unset, and refuse anything else by name', () => {
    assert.equal(ceaSettings(OPTIONS, {}).checkpointIntervalMs, 1000);
    assert.equal(ceaSettings(OPTIONS, { FERRY_CEA_CHECKPOINT_INTERVAL_MS: '250' }).checkpointIntervalMs, 250);
    assert.throws(() => ceaSettings(OPTIONS, { FERRY_CEA_CHECKPOINT_INTERVAL_MS: '1.5' }), /FERRY_CEA_CHECKPOINT_INTERVAL_MS/);
    assert.equal(commitRetryInterval({}), 10_000);
    assert.equal(commitRetryInterval({ FERRY_COMMIT_RETRY_INTERVAL_MS: '200' }), 200);
    assert.throws(
      () => commitRetryInterval({ FERRY_COMMIT_RETRY_INTERVAL_MS: '0' }),
      /FERRY_COMMIT_RETRY_INTERVAL_MS must be a whole number of milliseconds of at least 1/,
    );
  });
});
