/**
 * Piscina task entry point of the copy pool: copies one partition (src/copy/worker-task.ts) and
 * returns its outcome, transferring the buffers of the histogram values it recorded.
 */
import { move, transferableSymbol, valueSymbol, workerData } from 'piscina';
import type { PartitionTask } from '../src/copy/partition-copier.js';
import { runPartitionTask, type CopyWorkerData, type PartitionTaskResult } from '../src/copy/worker-task.js';

export default async function copyPartitionTask(task: PartitionTask): Promise<PartitionTaskResult> {
  const result = await runPartitionTask(task, workerData as CopyWorkerData);
  return move({
    get [transferableSymbol]() {
      return result.transferList;
    },
    get [valueSymbol]() {
      return result.value;
    },
  }) as unknown as PartitionTaskResult;
}
