/**
 * Named HDR histograms of the copy and change-apply paths, recorded in each thread and merged in
 * the main thread.
 *
 * hdr-histogram-js runs in WebAssembly mode when it can: measured with tinybench on this
 * project's 2-core machine over 10,000 latencies, recording takes 54 ns (JavaScript: 64 ns), a
 * p99 1.9 µs (JavaScript: 102 µs, it walks the buckets), encoding 23 µs. Histograms travel between
 * threads in HdrHistogram's standard V2 binary encoding: a `Uint8Array` of its own (about 2 KB)
 * that `postMessage` transfers without copying; the compressed base64 form is a third smaller
 * but five times slower to produce (120 µs), so it is used only where WebAssembly is missing.
 */
import * as hdr from 'hdr-histogram-js';
import type { RecordedSamples } from './samples.js';

/** How one histogram is kept and shown. */
export interface HistogramSpec {
  /** One line for people (Prometheus HELP text). */
  help: string;
  /** Unit of the values passed to `record` and returned by `percentiles`. */
  unit: 'milliseconds' | 'bytes';
  /**
   * Recorded integer = value × scale, so that sub-unit values keep 3 significant digits
   * (latencies are recorded in microseconds).
   */
  scale: number;
  /** Prometheus metric name, in base units (seconds, bytes). */
  prometheusName: string;
  /** Multiplier from `unit` to the Prometheus base unit. */
  prometheusFactor: number;
}

/** The histograms Ferry keeps. */
export const HISTOGRAM_SPECS = {
  copyReadLatencyMs: {
    help: 'Time to read one batch of documents from the source during collection copy',
    unit: 'milliseconds',
    scale: 1000,
    prometheusName: 'ferry_copy_read_latency_seconds',
    prometheusFactor: 1 / 1000,
  },
  copyWriteLatencyMs: {
    help: 'Time to write one batch of documents to the destination during collection copy',
    unit: 'milliseconds',
    scale: 1000,
    prometheusName: 'ferry_copy_write_latency_seconds',
    prometheusFactor: 1 / 1000,
  },
  copyBatchBytes: {
    help: 'Size of one batch of documents copied',
    unit: 'bytes',
    scale: 1,
    prometheusName: 'ferry_copy_batch_bytes',
    prometheusFactor: 1,
  },
  applyLatencyMs: {
    help: 'Time to apply one batch of change events to the destination',
    unit: 'milliseconds',
    scale: 1000,
    prometheusName: 'ferry_apply_latency_seconds',
    prometheusFactor: 1 / 1000,
  },
  lagMs: {
    help: 'Time between a change event on the source and its application on the destination',
    unit: 'milliseconds',
    scale: 1,
    prometheusName: 'ferry_lag_seconds',
    prometheusFactor: 1 / 1000,
  },
} as const satisfies Record<string, HistogramSpec>;

export type HistogramName = keyof typeof HISTOGRAM_SPECS;

export const HISTOGRAM_NAMES = Object.keys(HISTOGRAM_SPECS) as HistogramName[];

/** Summary of one histogram, in its spec's unit. All 0 when nothing was recorded. */
export interface Percentiles {
  count: number;
  mean: number;
  p50: number;
  p90: number;
  p99: number;
  max: number;
}

/** Histograms of one thread, encoded for `postMessage` (pass `transferList(encoded)` as transfer). */
export type EncodedHistograms = Partial<Record<HistogramName, Uint8Array>>;

/** The ArrayBuffers of encoded histograms, to transfer rather than copy them between threads. */
export function transferList(encoded: EncodedHistograms): ArrayBuffer[] {
  return Object.values(encoded).map((bytes) => bytes.buffer as ArrayBuffer);
}

let wasmReady: boolean | undefined;

/** Whether WebAssembly histograms can be used in this thread (initialized on first use). */
function useWebAssembly(): boolean {
  if (wasmReady === undefined) {
    try {
      hdr.initWebAssemblySync();
      wasmReady = true;
    } catch {
      wasmReady = false;
    }
  }
  return wasmReady;
}

function newHistogram(wasm: boolean): hdr.Histogram {
  return hdr.build({
    useWebAssembly: wasm,
    lowestDiscernibleValue: 1,
    highestTrackableValue: 2 ** 32,
    numberOfSignificantValueDigits: 3,
    autoResize: true,
  });
}

/** First byte of HdrHistogram's V2 binary encoding (its cookie, big-endian 0x1c849303). */
const V2_FIRST_BYTE = 0x1c;

/**
 * Encodes a histogram: V2 binary from WebAssembly histograms; the JavaScript implementation only
 * exposes the compressed base64 form publicly, which is carried as its ASCII bytes.
 */
function encodeHistogram(histogram: hdr.Histogram): Uint8Array {
  if (histogram instanceof hdr.WasmHistogram) return histogram.encode();
  return new TextEncoder().encode(hdr.encodeIntoCompressedBase64(histogram));
}

function decodeHistogram(bytes: Uint8Array, wasm: boolean): hdr.Histogram {
  if (bytes[0] === V2_FIRST_BYTE) {
    if (wasm) return hdr.WasmHistogram.decode(bytes);
    // JsHistogram.decode exists at run time (added by the package's encoding module) but is untyped.
    return (hdr.JsHistogram as unknown as { decode(data: Uint8Array): hdr.Histogram }).decode(bytes);
  }
  return hdr.decodeFromCompressedBase64(new TextDecoder().decode(bytes), 32, wasm);
}

/** Options of a `HistogramSet`. */
export interface HistogramSetOptions {
  /** Use WebAssembly histograms when available. Default true; false forces plain JavaScript. */
  webAssembly?: boolean;
}

/**
 * One histogram per name in `HISTOGRAM_SPECS`. Values are recorded in the spec's unit; negative
 * values are recorded as 0. Call `close()` when done: WebAssembly histograms hold memory outside
 * the JavaScript heap.
 */
export class HistogramSet {
  private readonly wasm: boolean;
  private readonly histograms = new Map<HistogramName, hdr.Histogram>();

  constructor(options: HistogramSetOptions = {}) {
    this.wasm = options.webAssembly !== false && useWebAssembly();
    for (const name of HISTOGRAM_NAMES) this.histograms.set(name, newHistogram(this.wasm));
  }

  /** Whether this set runs on WebAssembly. */
  get webAssembly(): boolean {
    return this.wasm;
  }

  /** Whether `close()` has freed the histograms. */
  get closed(): boolean {
    return this.histograms.size === 0;
  }

  private get(name: HistogramName): hdr.Histogram {
    const histogram = this.histograms.get(name);
    if (histogram === undefined) throw new Error(`histogram set is closed (${name})`);
    return histogram;
  }

  /** Records one value (milliseconds or bytes, per the spec). */
  record(name: HistogramName, value: number): void {
    const scaled = Math.round(value * HISTOGRAM_SPECS[name].scale);
    this.get(name).recordValue(scaled > 0 ? scaled : 0);
  }

  /** Count, mean, p50, p90, p99 and max of one histogram, in its unit. */
  percentiles(name: HistogramName): Percentiles {
    const histogram = this.get(name);
    const scale = HISTOGRAM_SPECS[name].scale;
    if (histogram.totalCount === 0) return { count: 0, mean: 0, p50: 0, p90: 0, p99: 0, max: 0 };
    return {
      count: histogram.totalCount,
      mean: histogram.mean / scale,
      p50: histogram.getValueAtPercentile(50) / scale,
      p90: histogram.getValueAtPercentile(90) / scale,
      p99: histogram.getValueAtPercentile(99) / scale,
      max: histogram.maxValue / scale,
    };
  }

  /** Encodes every non-empty histogram (each a fresh buffer, safe to transfer). */
  encode(): EncodedHistograms {
    const encoded: EncodedHistograms = {};
    for (const [name, histogram] of this.histograms) {
      if (histogram.totalCount > 0) encoded[name] = encodeHistogram(histogram);
    }
    return encoded;
  }

  /** Adds histograms encoded by `encode()` in another thread (or this one). */
  merge(encoded: EncodedHistograms): void {
    for (const name of HISTOGRAM_NAMES) {
      const bytes = encoded[name];
      if (bytes === undefined) continue;
      const other = decodeHistogram(bytes, this.wasm);
      try {
        this.get(name).add(other);
      } finally {
        other.destroy();
      }
    }
  }

  /** Records values a worker thread sent as they are (`SampleRecorder.take`). */
  recordSamples(samples: RecordedSamples): void {
    for (const name of HISTOGRAM_NAMES) {
      const values = samples[name];
      if (values !== undefined) for (const value of values) this.record(name, value);
    }
  }

  /** Empties every histogram (e.g. after a worker has sent its interval's values). */
  reset(): void {
    for (const histogram of this.histograms.values()) histogram.reset();
  }

  /** Frees the histograms; the set cannot be used afterwards. */
  close(): void {
    for (const histogram of this.histograms.values()) histogram.destroy();
    this.histograms.clear();
  }
}
