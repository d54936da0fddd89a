/** Histograms and counters of the copy and apply paths, mergeable across worker threads. */
export {
  HISTOGRAM_NAMES,
  HISTOGRAM_SPECS,
  HistogramSet,
  transferList,
  type EncodedHistograms,
  type HistogramName,
  type HistogramSetOptions,
  type HistogramSpec,
  type Percentiles,
} from './histograms.js';
export { SampleRecorder, samplesTransferList, type HistogramRecorder, type RecordedSamples } from './samples.js';
export { COUNTER_NAMES, COUNTER_SPECS, Counters, type CounterName, type CounterSpec, type CounterValues } from './counters.js';
export { renderPrometheus, type PrometheusSources } from './prometheus.js';
