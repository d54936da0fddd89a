/**
 * Piscina task entry point of the verifier's pool: compares one `_id` range on the two clusters
 * (src/verify/compare-range.ts) with this thread's own clients, created on its first task and
 * kept for the thread's life.
 */
import type { MongoClient } from 'mongodb';
import { workerData } from 'piscina';
import { connect } from '../src/cluster/connect.js';
import { retryTransient } from '../src/cluster/retry.js';
import { compareRange, type RangeOutcome, type RangeTask } from '../src/verify/compare-range.js';
import { VERIFY_APP_NAME, type VerifyWorkerData } from '../src/verify/range-pool.js';

let clients: Promise<{ source: MongoClient; destination: MongoClient }> | undefined;

async function openClients(data: VerifyWorkerData): Promise<{ source: MongoClient; destination: MongoClient }> {
  const options = { appName: VERIFY_APP_NAME, maxPoolSize: 8 };
  const source = connect(data.sourceUri, options);
  const destination = connect(data.destinationUri, options);
  await Promise.all([source.connect(), destination.connect()]);
  return { source, destination };
}

export default async function verifyRangeTask(task: RangeTask): Promise<RangeOutcome> {
  clients ??= openClients(workerData as VerifyWorkerData).catch((error: unknown) => {
    clients = undefined; // let the next task try to connect again
    throw error;
  });
  const { source, destination } = await clients;
  // Read-only: a passing failure (the network, a failover) repeats the whole task.
  return retryTransient(() => compareRange(source, destination, task));
}
