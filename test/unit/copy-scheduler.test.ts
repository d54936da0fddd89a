import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { pino } from 'pino';
import type { PartitionOutcome, PartitionTask } from '../../src/copy/partition-copier.js';
import { copyThreads, type CopyPool } from '../../src/copy/pool.js';
import { CopyScheduler, SMALL_PARTITION_LANES } from '../../src/copy/scheduler.js';
import { SharedCounters, StopFlag } from '../../src/copy/shared-state.js';
import type { Logger } from '../../src/log/logger.js';
import type { PartitionRow, PartitionTable } from '../../src/meta/partitions.js';
import { PartitionCopyFailed } from '../../src/errors/errors.js';
import { HistogramSet } from '../../src/metrics/histograms.js';

const logger = pino({ level: 'silent' }) as unknown as Logger;
const settings = { batchBytes: 1024, batchesInFlight: 1, checkpointIntervalMs: 0, writePath: 'raw' as const };

function row(index: number, extra: Partial<PartitionRow> = {}): PartitionRow {
  return {
    key: { instance: 'i', ns: 'db.c', index },
    db: 'db',
    coll: 'c',
    order: 'id',
    min: `min${index}`,
    max: `max${index}`,
    // Larger than one batch: the scheduler runs --copyWorkers of these at once.
    estimatedBytes: 10_000,
    status: 'not started',
    copiedDocs: 0,
    copiedBytes: 0,
    attempts: 0,
    ...extra,
  };
}

/** A partition table that records calls, and a pool whose workers run `work` for each task. */
function harness(partitionsAtOnce: number, work: (task: PartitionTask, stop: StopFlag) => Promise<PartitionOutcome>) {
  const events: string[] = [];
  let running = 0;
  let mostRunning = 0;
  const stopFlag = new StopFlag();
  const pool = {
    partitions: partitionsAtOnce,
    stopFlag,
    counters: new SharedCounters(),
    run: async (task: PartitionTask) => {
      events.push(`run ${task.key.index}`);
      running++;
      mostRunning = Math.max(mostRunning, running);
      try {
        return { outcome: await work(task, stopFlag), samples: {} };
      } finally {
        running--;
      }
    },
  } as unknown as CopyPool;
  const partitions = {
    start: async (r: PartitionRow) => void events.push(`start ${r.key.index}`),
    finish: async (key: PartitionRow['key'], position: { copiedDocs: number }) =>
      void events.push(`finish ${key.index} ${position.copiedDocs}`),
  } as unknown as PartitionTable;
  const scheduler = new CopyScheduler({
    pool,
    partitions,
    settings,
    averageDocumentBytes: new Map(),
    cappedNamespaces: new Set(['db.capped']),
    histograms: new HistogramSet(),
    logger,
  });
  return { scheduler, events, mostRunning: () => mostRunning, running: () => running };
}

const done = (docs: number): PartitionOutcome => ({ status: 'done', copiedDocs: docs, copiedBytes: docs * 10, writePath: 'raw' });
const tick = () => new Promise((resolve) => setTimeout(resolve, 1));

describe('CopyScheduler', () => {
  it('records each partition in progress before its worker starts and done after, at most --copyWorkers at a time', async () => {
    const { scheduler, events, mostRunning } = harness(2, async (task) => {
      await tick();
      return done(task.key.index * 100);
    });
    assert.equal(await scheduler.run([row(0), row(1), row(2), row(3), row(4)]), 'done');
    for (let i = 0; i < 5; i++) {
      const start = events.indexOf(`start ${i}`);
      assert.ok(
        start >= 0 && start < events.indexOf(`run ${i}`) && events.indexOf(`run ${i}`) < events.indexOf(`finish ${i} ${i * 100}`),
        events.join(', '),
      );
    }
    assert.equal(mostRunning(), 2);
  });

  it(`runs ${SMALL_PARTITION_LANES}× --copyWorkers at once while the partitions are smaller than a batch, and --copyWorkers again after`, async () => {
    let running = 0;
    const seen: { index: number; running: number }[] = [];
    const { scheduler, mostRunning } = harness(2, async (task) => {
      running++;
      seen.push({ index: task.key.index, running });
      await tick();
      await tick();
      running--;
      return done(1);
    });
    const small = Array.from({ length: 20 }, (_, i) => row(i, { estimatedBytes: 100 }));
    const large = Array.from({ length: 6 }, (_, i) => row(20 + i));
    assert.equal(await scheduler.run([...small, ...large]), 'done');
    assert.equal(mostRunning(), 2 * SMALL_PARTITION_LANES);
    const whileLarge = seen.filter((entry) => entry.index >= 20);
    assert.ok(
      whileLarge.every((entry) => entry.running <= 2),
      `large partitions ran at most 2 at once once the small ones were done: ${JSON.stringify(seen)}`,
    );
  });

  it('hands a worker the checkpoint to resume after', async () => {
    const seen: PartitionTask[] = [];
    const { scheduler } = harness(1, async (task) => {
      seen.push(task);
      return done(1);
    });
    await scheduler.run([row(0, { lastId: 'checkpoint', copiedDocs: 40, copiedBytes: 400, status: 'in progress' })]);
    assert.equal(seen[0]!.lastId, 'checkpoint');
    assert.equal(seen[0]!.copiedDocs, 40);
    assert.equal(seen[0]!.copiedBytes, 400);
  });

  it('on stop, starts no more partitions and does not mark stopped ones done', async () => {
    const { scheduler, events } = harness(1, async (_task, stop) => {
      while (!stop.raised) await tick();
      return { status: 'stopped', copiedDocs: 5, copiedBytes: 50, writePath: 'raw' };
    });
    const run = scheduler.run([row(0), row(1), row(2)]);
    await tick();
    scheduler.stop();
    assert.equal(await run, 'stopped');
    assert.deepEqual(events, ['start 0', 'run 0']);
  });

  it('fails loudly with the partition named when one fails, after stopping the others', async () => {
    let stoppedOthers = false;
    const { scheduler, events } = harness(2, async (task, stop) => {
      if (task.key.index === 1) throw new Error('write refused: code 2');
      while (!stop.raised) await tick();
      stoppedOthers = true;
      return { status: 'stopped', copiedDocs: 0, copiedBytes: 0, writePath: 'raw' };
    });
    await assert.rejects(scheduler.run([row(0), row(1), row(2)]), (error: Error) => {
      assert.ok(error instanceof PartitionCopyFailed);
      assert.match(error.message, /partition 1 of db\.c failed: write refused: code 2/);
      return true;
    });
    assert.ok(stoppedOthers, 'the partition running beside it was stopped');
    assert.equal(events.includes('start 2'), false, 'no partition started after the failure');
  });
});

describe('copyThreads', () => {
  it('runs the partitions copied at once in at most one thread per core but one, and never more threads than partitions', () => {
    assert.equal(copyThreads(4, 2), 1);
    assert.equal(copyThreads(4, 1), 1);
    assert.equal(copyThreads(8, 4), 3);
    assert.equal(copyThreads(4, 16), 4);
    assert.equal(copyThreads(1, 16), 1);
  });

  it('retune: more partitions at once start at once, fewer once running ones finish; the next partition gets new settings', async () => {
    const release: (() => void)[] = [];
    const seenSettings: number[] = [];
    const { scheduler, running } = harness(1, async (task) => {
      seenSettings.push(task.settings.batchBytes);
      await new Promise<void>((resolve) => release.push(resolve));
      return done(1);
    });
    const rows = Array.from({ length: 8 }, (_, i) => row(i));
    const run = scheduler.run(rows);
    const until = async (what: () => boolean) => {
      while (!what()) await tick();
    };
    await until(() => running() === 1);
    scheduler.retune(3, { ...settings, batchBytes: 4096 });
    await until(() => running() === 3);
    assert.equal(scheduler.running, 3);
    assert.deepEqual(seenSettings, [1024, 4096, 4096]);
    scheduler.retune(1, settings);
    // The three running finish; only one lane goes on.
    release.splice(0).forEach((open) => open());
    await until(() => release.length === 1);
    await tick();
    assert.equal(running(), 1);
    while (release.length > 0 || running() > 0) {
      release.splice(0).forEach((open) => open());
      await tick();
    }
    assert.equal(await run, 'done');
    assert.equal(seenSettings.length, 8);
  });

  it('tells a natural-order partition whether its collection is capped (capped: one batch at a time, in order)', async () => {
    const seen: [string, boolean | undefined][] = [];
    const { scheduler } = harness(1, async (task) => {
      seen.push([task.coll, task.capped]);
      return done(1);
    });
    const at = (index: number, coll: string, order: 'id' | 'natural') =>
      row(index, { key: { instance: 'i', ns: `db.${coll}`, index }, coll, order });
    assert.equal(await scheduler.run([at(0, 'capped', 'natural'), at(1, 'uuids', 'natural'), at(2, 'c', 'id')]), 'done');
    assert.deepEqual(seen, [
      ['capped', true],
      ['uuids', false],
      ['c', undefined],
    ]);
  });
});
