// mongosync's periodic log lines while a sync runs, with its field names (for log shippers), and
// --disableMetricsLogging turning off the metrics one.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { startPeriodicWork } from '../../src/cli/periodic.js';
import type { Logger } from '../../src/log/logger.js';
import { HistogramSet } from '../../src/metrics/histograms.js';
import { ProgressHistory } from '../../src/state/history.js';
import type { Progress } from '../../src/state/progress.js';

async function linesWritten(state: string, metricsLogging: boolean): Promise<Record<string, any>[]> {
  const lines: Record<string, any>[] = [];
  const sink = new Writable({
    write(chunk, _encoding, done) {
      for (const line of String(chunk).split('\n').filter(Boolean)) lines.push(JSON.parse(line) as Record<string, any>);
      done();
    },
  });
  const logger = pino({ level: 'info' }, sink) as unknown as Logger;
  const histograms = new HistogramSet();
  histograms.record('applyLatencyMs', 4);
  histograms.record('applyLatencyMs', 6);
  const progress = {
    state,
    totalEventsApplied: 42,
    lagTimeSeconds: 3,
    estimatedOplogTimeRemaining: '5 hours',
    collectionCopy: null,
  } as unknown as Progress;
  const stop = startPeriodicWork({
    progress: () => progress,
    history: new ProgressHistory(),
    histograms,
    pings: () => ({ source: 2.4, destination: -1 }),
    logger,
    logIntervalMs: 20,
    metricsLogging,
  });
  await new Promise((resolve) => setTimeout(resolve, 90));
  stop();
  histograms.close();
  return lines;
}

describe('periodic log lines', () => {
  it("RUNNING: mongosync's Replication progress. and Operation duration stats. lines, with its field names", async () => {
    const lines = await linesWritten('RUNNING', true);
    const replication = lines.find((line) => line.msg === 'Replication progress.');
    assert.ok(replication !== undefined);
    const { totalEventsApplied, lagTimeSeconds, estimatedOplogTimeRemaining } = replication;
    assert.deepEqual(
      { totalEventsApplied, lagTimeSeconds, estimatedOplogTimeRemaining },
      {
        totalEventsApplied: 42,
        lagTimeSeconds: 3,
        estimatedOplogTimeRemaining: '5 hours',
      },
    );
    const stats = lines.find((line) => line.msg === 'Operation duration stats.');
    assert.deepEqual(stats?.CEADestinationWrite, { averageDurationMs: '5.00', maximumDurationMs: '6.00', numOperations: 2 });
    assert.deepEqual(stats?.CollectionCopySourceRead, {}, 'nothing recorded: no figures');
    assert.equal(stats?.sourcePingLatencyMs, 2);
    assert.equal(stats?.destinationPingLatencyMs, -1);
  });

  it('--disableMetricsLogging: progress lines only', async () => {
    const lines = await linesWritten('RUNNING', false);
    assert.ok(lines.some((line) => line.msg === 'Replication progress.'));
    assert.ok(!lines.some((line) => line.msg === 'Operation duration stats.'));
  });

  it('nothing while no sync runs (IDLE) or once COMMITTED', async () => {
    for (const state of ['IDLE', 'COMMITTED']) assert.deepEqual(await linesWritten(state, true), [], state);
  });
});
