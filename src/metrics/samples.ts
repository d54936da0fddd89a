/**
 * Values recorded in a worker thread, sent as they are to the main thread's histograms. A copy
 * worker records three values per batch: keeping them raw (one `Float64Array` per histogram,
 * transferred with the task's result) spares every worker thread loading and instantiating
 * hdr-histogram's WebAssembly (~60 ms of CPU per thread) for a few hundred values per partition.
 *
 * This module must not load hdr-histogram.
 */
import type { HistogramName } from './specs.js';

/** Somewhere to record histogram values: a `HistogramSet`, or a `SampleRecorder` in a worker. */
export interface HistogramRecorder {
  record(name: HistogramName, value: number): void;
}

/** Values per histogram, in the spec's unit, as `SampleRecorder.take` hands them over. */
export type RecordedSamples = Partial<Record<HistogramName, Float64Array>>;

export class SampleRecorder implements HistogramRecorder {
  readonly #values = new Map<HistogramName, number[]>();

  record(name: HistogramName, value: number): void {
    let values = this.#values.get(name);
    if (values === undefined) this.#values.set(name, (values = []));
    values.push(value);
  }

  /** The values recorded since the last call, each histogram's in a fresh array; then none. */
  take(): RecordedSamples {
    const samples: RecordedSamples = {};
    for (const [name, values] of this.#values) if (values.length > 0) samples[name] = Float64Array.from(values);
    this.#values.clear();
    return samples;
  }
}

/** The ArrayBuffers of recorded samples, to transfer rather than copy them between threads. */
export function samplesTransferList(samples: RecordedSamples): ArrayBuffer[] {
  return Object.values(samples).map((values) => values.buffer as ArrayBuffer);
}
