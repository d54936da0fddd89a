/**
 * What runs inside a copy worker thread: per thread, one source and one destination
 * `MongoClient` (created on the first task, reused by every later one), a recorder of histogram
 * values, idle batch buffers, and views of the shared counters and stop flag; per task, one
 * partition copied with them (a thread may copy several partitions at once, see pool.ts). The
 * result carries the histogram values recorded, which the main thread keeps; their buffers are
 * transferred, not copied.
 */
import { connect } from '../cluster/connect.js';
import { hello } from '../cluster/commands.js';
import { fixedFence } from '../meta/fence.js';
import { MetadataStore } from '../meta/store.js';
import { PartitionTable } from '../meta/partitions.js';
// Not metrics/histograms.ts: it would load hdr-histogram in every worker thread.
import { SampleRecorder, samplesTransferList, type RecordedSamples } from '../metrics/samples.js';
import { copyPartition, type CopyResources, type PartitionOutcome, type PartitionTask } from './partition-copier.js';
import { SharedCounters, StopFlag } from './shared-state.js';

/** Given to every worker thread of the pool (`workerData`); holds no transferable. */
export interface CopyWorkerData {
  /** Connection strings (they may hold credentials: never logged). */
  sourceUri: string;
  destinationUri: string;
  /** The instance id, for the partition table's keys. */
  instance: string;
  /** The lease epoch of the instance: checkpoints are fenced by it. */
  epoch: number;
  counters: SharedArrayBuffer;
  stop: SharedArrayBuffer;
}

export interface PartitionTaskResult {
  outcome: PartitionOutcome;
  /** Read and write latencies and batch sizes recorded by the task, for the main thread's histograms. */
  samples: RecordedSamples;
}

/** A result whose histogram buffers Piscina transfers rather than clones. */
export interface TransferableResult {
  transferList: ArrayBuffer[];
  value: PartitionTaskResult;
}

/** A copy's resources in a worker thread, whose histogram values go to the main thread. */
interface WorkerResources extends CopyResources {
  histograms: SampleRecorder;
}

let resources: Promise<WorkerResources> | undefined;

async function createResources(data: CopyWorkerData): Promise<WorkerResources> {
  const options = { appName: 'ferry-copy', maxPoolSize: 16 };
  const source = connect(data.sourceUri, options);
  const destination = connect(data.destinationUri, options);
  await Promise.all([source.connect(), destination.connect()]);
  const { maxMessageSizeBytes, maxWriteBatchSize, maxBsonObjectSize } = await hello(destination);
  const partitions = new PartitionTable(new MetadataStore(destination, data.instance, fixedFence(data.epoch)));
  return {
    source,
    destination,
    checkpoint: (key, position) => partitions.checkpoint(key, position),
    histograms: new SampleRecorder(),
    counters: new SharedCounters(data.counters),
    stop: new StopFlag(data.stop),
    serverLimits: { maxMessageSizeBytes, maxWriteBatchSize, maxBsonObjectSize },
  };
}

/** Copies one partition in this thread. */
export async function runPartitionTask(task: PartitionTask, data: CopyWorkerData): Promise<TransferableResult> {
  resources ??= createResources(data).catch((error: unknown) => {
    resources = undefined; // let the next task try to connect again
    throw error;
  });
  const context = await resources;
  const outcome = await copyPartition(task, context);
  // Partitions copied at once in this thread share the recorder: all its values go to the main thread either way.
  const samples = context.histograms.take();
  return { transferList: samplesTransferList(samples), value: { outcome, samples } };
}
