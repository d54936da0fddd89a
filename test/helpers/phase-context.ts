/**
 * A CommitContext (src/phase/contract.ts) around test doubles of the two clusters, for unit tests
 * of a phase without a cluster.
 */
import type { MongoClient } from 'mongodb';
import { pino } from 'pino';
import type { Cluster } from '../../src/cluster/connect.js';
import type { SyncSettings } from '../../src/config/settings.js';
import type { StartRequest } from '../../src/domain/start-request.js';
import type { Logger } from '../../src/log/logger.js';
import type { ResumeDocument } from '../../src/meta/resume.js';
import { fixedFence } from '../../src/meta/fence.js';
import { MetadataStore } from '../../src/meta/store.js';
import { HistogramSet } from '../../src/metrics/histograms.js';
import type { CommitContext } from '../../src/phase/contract.js';

export const silentLogger = pino({ level: 'silent' }) as unknown as Logger;

export function fakeCluster(name: 'cluster0' | 'cluster1', client: MongoClient): Cluster {
  return { endpoint: { name, uri: `mongodb://${name}.example:27017`, address: `${name}.example:27017` }, client };
}

/** A context whose clients are `source` and `destination`; the change-application hand-off is unused unless given. */
export function commitContext(
  source: MongoClient,
  destination: MongoClient,
  request: Partial<StartRequest>,
  overrides: Partial<CommitContext> = {},
): CommitContext {
  const full = { source: 'cluster0', destination: 'cluster1', enableUserWriteBlocking: 'destinationOnly', ...request } as StartRequest;
  return {
    source: fakeCluster('cluster0', source),
    destination: fakeCluster('cluster1', destination),
    request: full,
    store: new MetadataStore(destination, 'test', fixedFence(1)),
    resume: { phase: 'copied' } as ResumeDocument,
    settings: { commit: { retryIntervalMs: 10 } } as SyncSettings,
    histograms: new HistogramSet({ webAssembly: false }),
    logger: silentLogger,
    syncPhase: () => 'copied',
    enterSyncPhase: async () => {},
    clusterOutageSince: () => undefined,
    checkDestination: async () => {},
    changingCatalog: (_names, change) => change(),
    changeEventsCaughtUp: async () => false,
    changeApplication: {
      take: async () => {
        throw new Error('no change-event application in this test');
      },
      retire: async () => {},
    },
    ...overrides,
  };
}
