/**
 * Convergence, as a property: for random initial data, random workloads (CRUD, transactions,
 * DDL) played while the initial copy runs and after it, random lane counts and copy batch
 * sizes, a sync that is committed leaves the destination equal to the source (documents, options,
 * indexes restored). Each case is a real sync through the `ferry` process on two test clusters;
 * fast-check shrinks a failing case and prints its seed.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { RUN, useClusterPair } from './copy-fixtures.js';
import { operation, playOperations, SYNCED, type Op } from './cea-workload.js';
import { copyFinished, startFerry } from './ferry-process.js';
import type { Document } from 'bson';

const clusters = useClusterPair();
let run = 0;

interface Case {
  initial: number;
  duringCopy: Op[];
  afterCopy: Op[];
  lanes: number;
  copyBatchBytes: number;
}

const cases: fc.Arbitrary<Case> = fc.record({
  initial: fc.integer({ min: 0, max: 400 }),
  duringCopy: fc.array(operation(2), { maxLength: 80 }),
  afterCopy: fc.array(operation(2), { maxLength: 80 }),
  lanes: fc.integer({ min: 1, max: 4 }),
  copyBatchBytes: fc.constantFrom(1024, 4096, 65536),
});

async function converges(testCase: Case): Promise<void> {
  run++;
  const db = `prop_${RUN}_${run}`;
  const source = clusters.source.db(db);
  for (const coll of SYNCED) {
    if (testCase.initial === 0) continue;
    const docs = Array.from({ length: testCase.initial }, (_, k) => ({ _id: k, n: k, pad: 'p'.repeat(400) }));
    await source.collection(coll).insertMany(docs as Document[]);
  }
  await clusters.emptyDestination();
  const ferry = await startFerry([
    '--cluster0',
    clusters.pair.cluster0,
    '--cluster1',
    clusters.pair.cluster1,
    '--id',
    `prop-${RUN}-${run}`,
    '--applyLanes',
    String(testCase.lanes),
    '--copyWorkers',
    '1',
    '--batchesInFlight',
    '1',
    '--batchBytes',
    String(testCase.copyBatchBytes),
    '--partitionSizeMB',
    '1',
  ]);
  try {
    const filter = [{ database: db }];
    const started = await ferry.post('start', { source: 'cluster0', destination: 'cluster1', includeNamespaces: filter });
    assert.equal(started.status, 200, JSON.stringify(started.body));
    await playOperations(clusters.source, db, testCase.duringCopy);
    await ferry.waitForProgress(copyFinished, 60_000);
    await playOperations(clusters.source, db, testCase.afterCopy);
    await ferry.waitForProgress((p) => p.canCommit === true, 60_000);
    assert.equal((await ferry.post('commit', {})).status, 200);
    await ferry.waitForProgress((p) => p.state === 'COMMITTED', 60_000);
    const differences = await clusters.differences(filter);
    assert.deepEqual(differences, []);
  } finally {
    await ferry.stop();
  }
}

describe('convergence (property)', () => {
  it('a committed sync leaves the destination equal to the source, whatever the workload and its interleaving with the copy', async () => {
    // FERRY_PROPERTY_RUNS for a longer hunt; FERRY_PROPERTY_SEED (and _PATH) to replay a failure.
    const replay =
      process.env.FERRY_PROPERTY_SEED === undefined
        ? {}
        : { seed: Number(process.env.FERRY_PROPERTY_SEED), path: process.env.FERRY_PROPERTY_PATH };
    await fc.assert(fc.asyncProperty(cases, converges), {
      numRuns: Number(process.env.FERRY_PROPERTY_RUNS ?? 6),
      endOnFailure: true,
      includeErrorInReport: true,
      ...replay,
    });
  });
});
