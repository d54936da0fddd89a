/**
 * The `wire` write path (src/cluster/wire-writes.ts) against test clusters started with users:
 * Ferry's own connections log in with SCRAM and copy byte for byte; a whole sync over them ends
 * equal, as does one on the `raw` path (the driver's connections, from the bundled worker); and
 * when the destination's connection drops after an insert was sent (the server took it, the reply
 * never came), the copy retries and converges with every document there once.
 * Test clusters only: it needs known users and a proxy in front of the destination.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, connect, type Server, type Socket } from 'node:net';
import { readFileSync } from 'node:fs';
import { Int32, MaxKey, MinKey, type Document } from 'bson';
import { MongoClient } from 'mongodb';
import { copyPartition, type PartitionTask } from '../../src/copy/partition-copier.js';
import { packValue } from '../../src/meta/store.js';
import { spawnCluster, type ClusterHandle } from '../cluster/index.js';
import { assertCopiedEqual, partitionResources, withUser as withRoot } from './wire-helpers.js';
import { compareClusters, temporaryIndexForm } from '../../scripts/lib/compare-clusters.js';
import { temporaryCollectionOptions } from '../../src/plan/collection-options.js';
import { copyFinished, startFerry } from './ferry-process.js';

const ROOT = { user: 'root', password: 'wire-pw-1234', roles: ['root'] };
const DB = 'wire_copy';
const COUNT = 3000;

const withUser = (uri: string) => withRoot(uri, ROOT);

function task(coll: string): PartitionTask {
  return {
    key: { instance: 'test', ns: `${DB}.${coll}`, index: 0 },
    db: DB,
    coll,
    order: 'id',
    min: packValue(new MinKey()),
    max: packValue(new MaxKey()),
    copiedDocs: 0,
    copiedBytes: 0,
    averageDocumentBytes: 300,
    settings: { batchBytes: 16 * 1024, batchesInFlight: 2, checkpointIntervalMs: 0, writePath: 'wire' },
  };
}

/**
 * A TCP proxy in front of `port` that forwards every message, but for the large client messages
 * numbered in `dropAt` (insert batches: over 10 kB) drops the connection when the server's reply
 * arrives: the server did the write, the client never hears of it.
 */
async function droppingProxy(port: number, dropAt: ReadonlySet<number>) {
  let large = 0;
  let dropped = 0;
  const sockets = new Set<Socket>();
  const server: Server = createServer((client) => {
    const upstream = connect(port, '127.0.0.1');
    sockets.add(client).add(upstream);
    let pending = Buffer.alloc(0);
    let dropReply = false;
    client.on('data', (chunk: Buffer) => {
      pending = Buffer.concat([pending, chunk]);
      while (pending.length >= 4 && pending.length >= pending.readInt32LE(0)) {
        const length = pending.readInt32LE(0);
        if (length > 10_000 && dropAt.has(++large)) dropReply = true;
        upstream.write(pending.subarray(0, length));
        pending = pending.subarray(length);
      }
    });
    upstream.on('data', (chunk: Buffer) => {
      if (!dropReply) return void client.write(chunk);
      dropped++;
      client.destroy();
      upstream.destroy();
    });
    const close = () => {
      client.destroy();
      upstream.destroy();
    };
    client.on('close', close).on('error', close);
    upstream.on('close', close).on('error', close);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as { port: number }).port,
    dropped: () => dropped,
    close: async () => {
      for (const socket of sockets) socket.destroy();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

describe('the wire write path [test cluster]', () => {
  let sourceCluster: ClusterHandle;
  let destinationCluster: ClusterHandle;
  let source: MongoClient;
  let destination: MongoClient;

  before(async () => {
    [sourceCluster, destinationCluster] = (await Promise.all([
      spawnCluster({ users: [ROOT] }),
      spawnCluster({ users: [ROOT], enableTestCommands: true }),
    ])) as [ClusterHandle, ClusterHandle];
    source = await MongoClient.connect(withUser(sourceCluster.uri));
    destination = await MongoClient.connect(withUser(destinationCluster.uri));
    const docs: Document[] = Array.from({ length: COUNT }, (_, i) => ({ _id: new Int32(i), name: `n${i}`, pad: 'x'.repeat(250) }));
    for (const coll of ['logged', 'dropped', 'failover'])
      await source
        .db(DB)
        .collection(coll)
        .insertMany(docs as never[]);
  });
  after(async () => {
    await Promise.allSettled([source?.close(), destination?.close()]);
    await Promise.allSettled([sourceCluster?.stop(), destinationCluster?.stop()]);
  });

  it('logs in with SCRAM on its own connections and copies byte for byte', async () => {
    const outcome = await copyPartition(task('logged'), partitionResources(source, destination));
    assert.equal(outcome.writePath, 'wire', 'the wire path served (it did not step aside for the driver)');
    assert.equal(outcome.copiedDocs, COUNT);
    await assertCopiedEqual(source, destination, DB, 'logged', COUNT);
  });

  it('converges with nothing lost or duplicated when the destination drops the connection after taking a batch', async () => {
    // The 3rd batch's reply is lost, and so is its retry's: the retryable-write retry, then the partition's own.
    const proxy = await droppingProxy(Number(new URL(destinationCluster.uri).port), new Set([3, 4]));
    const proxied = await MongoClient.connect(withUser(`mongodb://127.0.0.1:${proxy.port}/?directConnection=true`));
    try {
      const outcome = await copyPartition(task('dropped'), partitionResources(source, proxied));
      assert.equal(proxy.dropped(), 2, 'the proxy dropped two connections mid-batch');
      assert.equal(outcome.writePath, 'wire');
      assert.equal(outcome.copiedDocs, COUNT);
      await assertCopiedEqual(source, destination, DB, 'dropped', COUNT);
    } finally {
      await proxied.close();
      await proxy.close();
    }
  });

  it('asks the driver for the primary again when the server says it is no longer primary, and converges', async () => {
    // The 2nd and 3rd inserts are refused as by a stepped-down primary: the retryable-write retry, then the partition's own.
    await destination.db('admin').command({
      configureFailPoint: 'failCommand',
      mode: { skip: 1, times: 2 },
      data: { failCommands: ['insert'], errorCode: 10107 },
    });
    try {
      const outcome = await copyPartition(task('failover'), partitionResources(source, destination));
      assert.equal(outcome.writePath, 'wire');
      assert.equal(outcome.copiedDocs, COUNT);
      await assertCopiedEqual(source, destination, DB, 'failover', COUNT);
      // The copy met both refusals: inserts now (one attempt each, no retry) go through.
      for (const _id of [1, 2]) assert.equal((await destination.db(DB).command({ insert: 'probe', documents: [{ _id }] })).n, 1);
    } finally {
      await destination.db('admin').command({ configureFailPoint: 'failCommand', mode: 'off' });
    }
  });

  // `raw` too: the copy worker is one bundled file (scripts/bundle-workers.ts), whose driver must
  // recognise the document sequences Ferry hands it as its own.
  for (const writePath of ['wire', 'raw']) {
    it(`carries a whole sync between clusters with users to an equal destination (${writePath} write path)`, async () => {
      // A fresh destination: the data and the metadata of the sync before.
      const { databases } = await destination.db('admin').admin().listDatabases({ nameOnly: true });
      for (const { name } of databases) if (!['admin', 'config', 'local'].includes(name)) await destination.db(name).dropDatabase();
      const ferry = await startFerry(
        ['--cluster0', withUser(sourceCluster.uri), '--cluster1', withUser(destinationCluster.uri), '--id', `${writePath}-e2e`],
        { FERRY_COPY_WRITE_PATH: writePath },
      );
      try {
        assert.equal((await ferry.post('start', { source: 'cluster0', destination: 'cluster1' })).status, 200);
        await ferry.waitForProgress(copyFinished);
        const differences = await compareClusters(withUser(sourceCluster.uri), withUser(destinationCluster.uri), {
          expectedIndex: temporaryIndexForm,
          expectedOptions: temporaryCollectionOptions,
        });
        assert.deepEqual(differences, []);
        const log = readFileSync(ferry.logFile, 'utf8');
        assert.doesNotMatch(
          log,
          /cannot serve this destination|write path is not available/,
          `the ${writePath} path served every partition`,
        );
        assert.equal(log.includes(ROOT.password), false);
      } finally {
        await ferry.stop();
      }
    });
  }
});
