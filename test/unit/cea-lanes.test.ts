import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { serialize } from 'bson';
import { documentEnd } from '../../src/bson/index.js';
import { Lanes, type LaneBatch } from '../../src/cea/lanes.js';

const tick = () => new Promise<void>((resolve) => setImmediate(resolve));

function eventBytes(key: number, seq: number): Uint8Array {
  return serialize({ key, seq });
}

function seqsOf(batch: LaneBatch): number[] {
  const out: number[] = [];
  for (let offset = 0; offset < batch.events.length; offset = documentEnd(batch.events, offset) + 1) {
    out.push(readSeq(batch.events.subarray(offset)));
  }
  return out;
}

function readSeq(doc: Uint8Array): number {
  const text = Buffer.from(doc);
  const at = text.indexOf(Buffer.from('seq\0'));
  return text.readInt32LE(at + 4);
}

/** Batches whose completion the test controls. */
function controlled() {
  const started: { batch: LaneBatch; lane: number; finish(error?: Error): void }[] = [];
  const apply = (batch: LaneBatch, lane: number) =>
    new Promise<void>((resolve, reject) => started.push({ batch, lane, finish: (error) => (error ? reject(error) : resolve()) }));
  return { started, apply };
}

describe('lanes', () => {
  it('keep one batch in flight per lane and send what queued meanwhile as the next batch', async () => {
    const { started, apply } = controlled();
    const lanes = new Lanes({ lanes: 2, maxBatchEvents: 100, maxBatchBytes: 1 << 20, maxPendingBytes: 1 << 20, apply });
    await lanes.add(0, eventBytes(1, 1), 1);
    await lanes.add(0, eventBytes(1, 2), 2);
    await lanes.add(0, eventBytes(1, 3), 3);
    await lanes.add(1, eventBytes(2, 4), 4);
    assert.equal(started.length, 2, 'one batch per lane');
    assert.deepEqual(seqsOf(started[0]!.batch), [1]);
    assert.equal(lanes.appliedThrough(), 0);
    started[1]!.finish();
    await tick();
    assert.equal(lanes.appliedThrough(), 0, 'lane 0 still holds event 1');
    started[0]!.finish();
    await tick();
    assert.equal(started.length, 3);
    assert.deepEqual(seqsOf(started[2]!.batch), [2, 3], 'the queued events leave together, in order');
    assert.equal(lanes.appliedThrough(), 1);
    const drained = lanes.drain();
    started[2]!.finish();
    await drained;
    assert.equal(lanes.appliedThrough(), 4);
  });

  it('let other lanes go on while one is busy with a hot document', async () => {
    const { started, apply } = controlled();
    const lanes = new Lanes({ lanes: 2, maxBatchEvents: 1000, maxBatchBytes: 1 << 20, maxPendingBytes: 1 << 20, apply });
    let seq = 0;
    for (let i = 0; i < 50; i++) await lanes.add(0, eventBytes(1, ++seq), seq); // the hot document
    for (let round = 0; round < 5; round++) {
      await lanes.add(1, eventBytes(2, ++seq), seq);
      const other = started.filter((s) => s.lane === 1).at(-1)!;
      other.finish();
      await tick();
    }
    assert.equal(started.filter((s) => s.lane === 1).length, 5, 'lane 1 applied five batches meanwhile');
    assert.equal(started.filter((s) => s.lane === 0).length, 1, 'lane 0 still has its first batch out');
    started[0]!.finish();
    await tick();
    assert.equal(started.filter((s) => s.lane === 0).at(-1)!.batch.count, 49, 'the hot document’s queued events leave as one batch');
  });

  it('bound batches by count and bytes (a larger event travels alone)', async () => {
    const { started, apply } = controlled();
    const big = serialize({ key: 1, seq: 0, pad: 'x'.repeat(500) });
    const lanes = new Lanes({ lanes: 1, maxBatchEvents: 3, maxBatchBytes: 400, maxPendingBytes: 1 << 20, apply });
    await lanes.add(0, eventBytes(1, 1), 1);
    for (let seq = 2; seq <= 6; seq++) await lanes.add(0, eventBytes(1, seq), seq);
    await lanes.add(0, big, 7);
    started[0]!.finish();
    await tick();
    assert.equal(started[1]!.batch.count, 3);
    started[1]!.finish();
    await tick();
    assert.equal(started[2]!.batch.count, 2, 'the big event does not join a batch it would overfill');
    started[2]!.finish();
    await tick();
    assert.equal(started[3]!.batch.count, 1);
  });

  it('make the reader wait while too many bytes are pending', async () => {
    const { started, apply } = controlled();
    const one = eventBytes(1, 1).length;
    const lanes = new Lanes({ lanes: 1, maxBatchEvents: 10, maxBatchBytes: 1 << 20, maxPendingBytes: one * 2, apply });
    await lanes.add(0, eventBytes(1, 1), 1);
    await lanes.add(0, eventBytes(1, 2), 2);
    let third = false;
    const adding = lanes.add(0, eventBytes(1, 3), 3).then(() => (third = true));
    await tick();
    assert.equal(third, false);
    started[0]!.finish();
    await adding;
    assert.equal(third, true);
  });

  it('fail as a whole on the first failed batch: nothing more is sent, drain and add reject', async () => {
    const { started, apply } = controlled();
    const lanes = new Lanes({ lanes: 2, maxBatchEvents: 10, maxBatchBytes: 1 << 20, maxPendingBytes: 1 << 20, apply });
    await lanes.add(0, eventBytes(1, 1), 1);
    await lanes.add(0, eventBytes(1, 2), 2);
    const drained = lanes.drain();
    started[0]!.finish(new Error('refused'));
    await assert.rejects(drained, /refused/);
    await assert.rejects(lanes.add(1, eventBytes(2, 3), 3), /refused/);
    assert.equal(started.length, 1);
    assert.equal(lanes.appliedThrough(), 0);
  });

  it('apply every document’s events in stream order and never report an unapplied event as applied (property)', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.nat({ max: 6 }), { minLength: 1, maxLength: 60 }),
        fc.integer({ min: 1, max: 4 }),
        fc.array(fc.nat(), { minLength: 1, maxLength: 200 }),
        async (keys, laneCount, schedule) => {
          const { started, apply } = controlled();
          const applied = new Set<number>();
          const perKey = new Map<number, number[]>();
          const lanes = new Lanes({ lanes: laneCount, maxBatchEvents: 3, maxBatchBytes: 1 << 20, maxPendingBytes: 1 << 20, apply });
          let step = 0;
          const finishSome = async () => {
            const open = started.filter((s) => !(s as { done?: boolean }).done);
            if (open.length === 0) return;
            const chosen = open[schedule[step++ % schedule.length]! % open.length]!;
            (chosen as { done?: boolean }).done = true;
            for (const seq of seqsOf(chosen.batch)) {
              applied.add(seq);
              const key = keys[seq - 1]!;
              perKey.set(key, [...(perKey.get(key) ?? []), seq]);
            }
            chosen.finish();
            await tick();
            const through = lanes.appliedThrough();
            for (let seq = 1; seq <= through; seq++) assert.ok(applied.has(seq), `watermark ${through} covers unapplied ${seq}`);
          };
          for (let i = 0; i < keys.length; i++) {
            await lanes.add(keys[i]! % laneCount, eventBytes(keys[i]!, i + 1), i + 1);
            if (schedule[i % schedule.length]! % 2 === 0) await finishSome();
          }
          while (!lanes.idle) await finishSome();
          assert.equal(lanes.appliedThrough(), keys.length);
          for (const seqs of perKey.values())
            assert.deepEqual(
              seqs,
              [...seqs].sort((a, b) => a - b),
            );
        },
      ),
      { numRuns: 200 },
    );
  });

  it('name a lane whose batch has been in flight since before a moment as stalled, with its events', async () => {
    const { started, apply } = controlled();
    const lanes = new Lanes({ lanes: 3, maxBatchEvents: 100, maxBatchBytes: 1 << 20, maxPendingBytes: 1 << 20, apply });
    await lanes.add(1, eventBytes(1, 1), 1);
    await lanes.add(1, eventBytes(2, 2), 2);
    await tick();
    assert.equal(started.length, 1);
    const sent = Date.now();
    assert.deepEqual(lanes.stalled(sent - 60_000), [], 'not in flight that long');
    const [stall] = lanes.stalled(sent + 1);
    assert.deepEqual({ lane: stall!.lane, events: stall!.events }, { lane: 1, events: seqsOf(started[0]!.batch).length });
    assert.ok(stall!.since <= sent);
    // The event queued meanwhile goes as the next batch, in flight from now on.
    started[0]!.finish();
    await tick();
    assert.equal(started.length, 2);
    assert.ok(lanes.stalled(Date.now() + 1)[0]!.since >= stall!.since);
    started[1]!.finish();
    await tick();
    assert.deepEqual(lanes.stalled(Date.now() + 1), [], 'nothing in flight, nothing stalled');
  });
});
