/**
 * What the end-to-end tests of Ferry's safety guarantees share (not a test file): a source and a
 * destination test cluster as child processes a test can freeze, restart and restart empty, a
 * client on each, small data, and a running sync of one database. These tests break clusters on
 * purpose, so they run only on the project's own test clusters (`LOCAL_ONLY` says why they skip
 * against real deployments).
 */
import { after, before } from 'node:test';
import type { Document } from 'bson';
import { MongoClient } from 'mongodb';
import { spawnCluster, type ClusterOptions, type ClusterProcess } from '../cluster/index.js';
import { RUN } from './copy-fixtures.js';
import { emptyDestination, startFerry, type FerryProcess, type Progress } from './ferry-process.js';

/** `skip` for a suite that breaks clusters: a string (the reason) against real deployments. */
export const LOCAL_ONLY: string | false =
  process.env.FERRY_TEST_CLUSTER0_URI && process.env.FERRY_TEST_CLUSTER1_URI ? 'breaks clusters on purpose: test clusters only' : false;

export interface FaultPair {
  source: ClusterProcess;
  destination: ClusterProcess;
  sourceClient: MongoClient;
  destinationClient: MongoClient;
}

/** Registers before/after hooks giving the file a pair of child-process clusters (fields set once `before` ran). */
export function useFaultPair(options: ClusterOptions = {}): FaultPair {
  const pair = {} as FaultPair;
  before(async () => {
    [pair.source, pair.destination] = await Promise.all([spawnCluster(options), spawnCluster(options)]);
    pair.sourceClient = await MongoClient.connect(pair.source.uri);
    pair.destinationClient = await MongoClient.connect(pair.destination.uri);
  });
  after(async () => {
    for (const node of [pair.source, pair.destination]) if (node?.frozen) node.resume();
    await Promise.allSettled([pair.sourceClient?.close(), pair.destinationClient?.close()]);
    await Promise.allSettled([pair.source?.stop(), pair.destination?.stop()]);
  });
  return pair;
}

/** `count` small documents in `db.coll` on `client`. */
export async function seed(client: MongoClient, db: string, coll: string, count: number): Promise<void> {
  const docs = Array.from({ length: count }, (_, i) => ({ _id: i, name: `item ${i}`, pad: 'x'.repeat(200) }));
  await client
    .db(db)
    .collection(coll)
    .insertMany(docs as Document[]);
}

/** Environment that makes Ferry's safety mechanisms quick enough for tests. */
export const QUICK: Record<string, string> = {
  FERRY_GUARD_INTERVAL_MS: '200',
  FERRY_LEASE_DURATION_MS: '4000',
  FERRY_HEALTH_INTERVAL_MS: '300',
  FERRY_COMMIT_RETRY_INTERVAL_MS: '300',
  // Long enough for a stop that lands while a restarted Ferry is still starting its phases on a
  // loaded machine (3 s was not, once, in a full run); a Ferry that never stops still fails.
  FERRY_STOP_TIMEOUT_MS: '10000',
};

/** Database names unique to this run and this test. */
export function dbName(what: string): string {
  return `${what}_${RUN}`;
}

/** A Ferry syncing database `db` from `pair.source` to an emptied `pair.destination`, once it can commit. */
export async function runningSync(
  pair: FaultPair,
  id: string,
  db: string,
  env: Record<string, string> = {},
): Promise<{ ferry: FerryProcess; ready: Progress }> {
  await emptyDestination(pair.destination.uri);
  const ferry = await startFerry(['--cluster0', pair.source.uri, '--cluster1', pair.destination.uri, '--id', id], { ...QUICK, ...env });
  try {
    const started = await ferry.post('start', { source: 'cluster0', destination: 'cluster1', includeNamespaces: [{ database: db }] });
    if (started.status !== 200) throw new Error(`start refused: ${JSON.stringify(started.body)}`);
    const ready = await ferry.waitForProgress((p) => p.canCommit === true, 60_000);
    return { ferry, ready };
  } catch (error) {
    await ferry.stop('SIGKILL');
    throw error;
  }
}

/** The warning of progress that matches `pattern`, or a failure listing them all. */
export function warningMatching(progress: Progress, pattern: RegExp): string {
  const found = (progress.warnings as string[] | null)?.find((warning) => pattern.test(warning));
  if (found === undefined) throw new Error(`no warning matches ${pattern}: ${JSON.stringify(progress.warnings)}`);
  return found;
}
