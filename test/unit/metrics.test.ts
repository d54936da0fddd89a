import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Worker } from 'node:worker_threads';
import {
  Counters,
  HISTOGRAM_NAMES,
  HistogramSet,
  renderPrometheus,
  SampleRecorder,
  transferList,
  type EncodedHistograms,
  type Percentiles,
} from '../../src/metrics/index.js';

/** Asserts `actual` is within HDR's 3-significant-digit precision of `expected`. */
function near(actual: number, expected: number, message?: string): void {
  assert.ok(Math.abs(actual - expected) <= Math.max(expected * 0.002, 1e-9), `${message ?? ''} ${actual} ≈ ${expected}`);
}

/** Same count, and every figure equal within HDR precision (a decoded max is its bucket's top). */
function assertSameSummary(actual: Percentiles, expected: Percentiles): void {
  assert.equal(actual.count, expected.count);
  for (const key of ['mean', 'p50', 'p90', 'p99', 'max'] as const) near(actual[key], expected[key], key);
}

describe('histograms', () => {
  it('reports count, mean, p50, p90, p99 and max of what was recorded', () => {
    const set = new HistogramSet();
    for (let ms = 1; ms <= 1000; ms++) set.record('copyReadLatencyMs', ms);
    const summary = set.percentiles('copyReadLatencyMs');
    assert.equal(summary.count, 1000);
    near(summary.p50, 500);
    near(summary.p90, 900);
    near(summary.p99, 990);
    near(summary.max, 1000);
    near(summary.mean, 500.5);
    assert.equal(set.percentiles('applyLatencyMs').count, 0, 'other histograms are untouched');
    set.close();
  });

  it('keeps sub-millisecond latencies and large byte counts', () => {
    const set = new HistogramSet();
    set.record('copyWriteLatencyMs', 0.25);
    set.record('copyBatchBytes', 48 * 1024 * 1024);
    set.record('lagMs', -5); // a clock step backwards is recorded as no lag
    near(set.percentiles('copyWriteLatencyMs').p50, 0.25);
    near(set.percentiles('copyBatchBytes').max, 48 * 1024 * 1024);
    assert.equal(set.percentiles('lagMs').max, 0);
    set.close();
  });

  it('merging encoded histograms equals recording everything in one place', () => {
    const workerA = new HistogramSet();
    const workerB = new HistogramSet();
    const together = new HistogramSet();
    for (let i = 0; i < 500; i++) {
      workerA.record('applyLatencyMs', i);
      together.record('applyLatencyMs', i);
      workerB.record('applyLatencyMs', 10_000 + i);
      together.record('applyLatencyMs', 10_000 + i);
    }
    const main = new HistogramSet();
    main.merge(workerA.encode());
    main.merge(workerB.encode());
    assertSameSummary(main.percentiles('applyLatencyMs'), together.percentiles('applyLatencyMs'));
    for (const set of [workerA, workerB, together, main]) set.close();
  });

  it('encodes only histograms that hold values, and reset empties them', () => {
    const set = new HistogramSet();
    set.record('lagMs', 1200);
    assert.deepEqual(Object.keys(set.encode()), ['lagMs']);
    set.reset();
    assert.deepEqual(set.encode(), {});
    assert.equal(set.percentiles('lagMs').count, 0);
    set.close();
  });

  it('JavaScript and WebAssembly histograms read each other’s encodings', () => {
    const js = new HistogramSet({ webAssembly: false });
    const wasm = new HistogramSet();
    assert.equal(js.webAssembly, false);
    assert.equal(wasm.webAssembly, true, 'WebAssembly is available on Node 20');
    for (let i = 1; i <= 100; i++) {
      js.record('copyBatchBytes', i * 1000);
      wasm.record('copyBatchBytes', i * 1000);
    }
    const fromJs = js.encode();
    const fromWasm = wasm.encode();
    js.merge(fromWasm);
    wasm.merge(fromJs);
    assert.equal(js.percentiles('copyBatchBytes').count, 200);
    assertSameSummary(js.percentiles('copyBatchBytes'), wasm.percentiles('copyBatchBytes'));
    js.close();
    wasm.close();
  });

  it('travels from a worker thread by transfer and merges in the main thread', async () => {
    const moduleUrl = new URL('../../src/metrics/index.js', import.meta.url).href;
    const worker = new Worker(
      `
      const { parentPort } = require('node:worker_threads');
      import(${JSON.stringify(moduleUrl)}).then(({ HistogramSet, transferList }) => {
        const set = new HistogramSet();
        for (let i = 1; i <= 1000; i++) set.record('copyReadLatencyMs', i / 10);
        const encoded = set.encode();
        parentPort.postMessage(encoded, transferList(encoded));
        set.close();
      });
      `,
      { eval: true },
    );
    const encoded = await new Promise<EncodedHistograms>((resolve, reject) => {
      worker.once('message', resolve);
      worker.once('error', reject);
    });
    await worker.terminate();
    const main = new HistogramSet();
    main.merge(encoded);
    const summary = main.percentiles('copyReadLatencyMs');
    assert.equal(summary.count, 1000);
    near(summary.p99, 99);
    main.close();
  });

  it('values a copy worker records raw come out as if recorded in the main thread', () => {
    const direct = new HistogramSet();
    const worker = new SampleRecorder();
    for (let i = 1; i <= 500; i++) {
      direct.record('copyWriteLatencyMs', i / 7);
      worker.record('copyWriteLatencyMs', i / 7);
      worker.record('copyBatchBytes', i * 1000);
      direct.record('copyBatchBytes', i * 1000);
    }
    const main = new HistogramSet();
    main.recordSamples(worker.take());
    assertSameSummary(main.percentiles('copyWriteLatencyMs'), direct.percentiles('copyWriteLatencyMs'));
    assertSameSummary(main.percentiles('copyBatchBytes'), direct.percentiles('copyBatchBytes'));
    assert.deepEqual(worker.take(), {}, 'taken values are not sent twice');
    main.close();
    direct.close();
  });

  it('a copy worker thread does not load hdr-histogram (its WebAssembly costs each thread ~60 ms)', async () => {
    const taskUrl = new URL('../../src/copy/worker-task.js', import.meta.url).href;
    const worker = new Worker(
      `
      const { parentPort } = require('node:worker_threads');
      import(${JSON.stringify(taskUrl)}).then(() => {
        parentPort.postMessage(Object.keys(require.cache).filter((path) => path.includes('hdr-histogram')));
      });
      `,
      { eval: true },
    );
    const loaded = await new Promise<string[]>((resolve, reject) => {
      worker.once('message', resolve);
      worker.once('error', reject);
    });
    await worker.terminate();
    assert.deepEqual(loaded, []);
  });

  it('transfer leaves the sender’s encoded buffers detached, not copied', () => {
    const set = new HistogramSet();
    set.record('lagMs', 5);
    const encoded = set.encode();
    const { port1, port2 } = new MessageChannel();
    port1.postMessage(encoded, transferList(encoded));
    assert.equal(encoded.lagMs!.byteLength, 0);
    port1.close();
    port2.close();
    set.close();
  });

  it('refuses use after close', () => {
    const set = new HistogramSet();
    set.close();
    assert.throws(() => set.record('lagMs', 1), /closed/);
  });
});

describe('counters', () => {
  it('add, merge another thread’s snapshot, and reset', () => {
    const main = new Counters();
    const worker = new Counters();
    worker.add('copiedDocuments', 10);
    worker.add('copiedBytes', 4096);
    main.add('appliedEvents');
    main.merge(worker.snapshot());
    assert.deepEqual(main.snapshot(), { copiedDocuments: 10, copiedBytes: 4096, appliedEvents: 1 });
    main.reset();
    assert.equal(main.get('copiedBytes'), 0);
    assert.throws(() => main.add('copiedBytes', -1), RangeError);
  });
});

describe('Prometheus text', () => {
  it('renders counters and summaries in base units, one valid sample per line', () => {
    const histograms = new HistogramSet();
    const counters = new Counters();
    for (let i = 0; i < 100; i++) histograms.record('copyReadLatencyMs', 250);
    counters.add('copiedBytes', 1234);
    const text = renderPrometheus({ histograms, counters });
    assert.match(text, /^# TYPE ferry_copied_bytes_total counter$/m);
    assert.match(text, /^ferry_copied_bytes_total 1234$/m);
    assert.match(text, /^# TYPE ferry_copy_read_latency_seconds summary$/m);
    const p99 = /^ferry_copy_read_latency_seconds\{quantile="0.99"\} (\S+)$/m.exec(text);
    near(Number(p99?.[1]), 0.25, 'p99 in seconds');
    assert.match(text, /^ferry_copy_read_latency_seconds_count 100$/m);
    for (const line of text.trimEnd().split('\n')) {
      if (line.startsWith('#')) continue;
      assert.match(line, /^[a-z_]+(\{quantile="[0-9.]+"\})? -?[0-9.e+-]+$/, line);
    }
    assert.equal(text.split('# TYPE').length - 1, HISTOGRAM_NAMES.length + 3);
    histograms.close();
  });

  it('still renders the counters once the histograms are closed (an engine shutting down)', () => {
    const histograms = new HistogramSet();
    const counters = new Counters();
    counters.add('copiedBytes', 7);
    histograms.close();
    const text = renderPrometheus({ histograms, counters });
    assert.match(text, /^ferry_copied_bytes_total 7$/m);
    assert.doesNotMatch(text, /summary/);
  });
});
