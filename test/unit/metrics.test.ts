import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Worker } from 'node:worker_threads';
import { HistogramSet, type Percentiles } from '../../src/metrics/histograms.js';
import { HISTOGRAM_NAMES } from '../../src/metrics/specs.js';
import { renderPrometheus } from '../../src/metrics/prometheus.js';
import { SampleRecorder } from '../../src/metrics/samples.js';

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

  it('never reports a percentile above the max (HDR rounds a percentile up to its bucket top)', () => {
    const set = new HistogramSet();
    // Two lags a few ms apart in one HDR bucket: the bucket's top lies above both.
    set.record('lagMs', 1_234_567);
    set.record('lagMs', 1_234_000);
    const summary = set.percentiles('lagMs');
    assert.ok(summary.p50 <= summary.p99 && summary.p99 <= summary.max, JSON.stringify(summary));
    near(summary.max, 1_234_567);
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

  it('refuses use after close', () => {
    const set = new HistogramSet();
    set.close();
    assert.throws(() => set.record('lagMs', 1), /closed/);
  });
});

describe('Prometheus text', () => {
  it('renders counters and summaries in base units, one valid sample per line', () => {
    const histograms = new HistogramSet();
    const counters = { copiedDocuments: 10, copiedBytes: 1234, appliedEvents: 3 };
    for (let i = 0; i < 100; i++) histograms.record('copyReadLatencyMs', 250);
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

  it('still renders the counters once the histograms are closed (a sync shutting down)', () => {
    const histograms = new HistogramSet();
    const counters = { copiedDocuments: 1, copiedBytes: 7, appliedEvents: 0 };
    histograms.close();
    const text = renderPrometheus({ histograms, counters });
    assert.match(text, /^ferry_copied_bytes_total 7$/m);
    assert.doesNotMatch(text, /summary/);
  });
});
