/**
 * Piscina task entry point of the apply pool: applies one lane batch of change events
 * (src/cea/apply-batch.ts) with this thread's own clients, created on its first task and kept
 * for the thread's life.
 */
import { connect } from '../src/cluster/connect.js';
import { workerData } from 'piscina';
import { applyBatch, type ApplyOutcome, type ApplyResources, type ApplyTask } from '../src/cea/apply-batch.js';
import type { ApplyWorkerData } from '../src/cea/apply-pool.js';

let resources: Promise<ApplyResources> | undefined;

async function openResources(data: ApplyWorkerData): Promise<ApplyResources> {
  const options = { appName: 'ferry-apply', maxPoolSize: 16 };
  const source = connect(data.sourceUri, options);
  const destination = connect(data.destinationUri, options);
  await Promise.all([source.connect(), destination.connect()]);
  return { source, destination, instance: data.instance };
}

export default async function applyBatchTask(task: ApplyTask): Promise<ApplyOutcome> {
  resources ??= openResources(workerData as ApplyWorkerData).catch((error: unknown) => {
    resources = undefined; // let the next batch try to connect again
    throw error;
  });
  return applyBatch(task, await resources);
}
