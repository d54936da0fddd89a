/**
 * The `wire` read path (src/cluster/wire-reads.ts, src/cluster/reply-reader.ts) against test clusters
 * started with users: Ferry's own connections to the source log in with SCRAM and read each
 * partition, and with the `wire` write path each reply's documents are written from where they were
 * received; the copy ends byte for byte equal when the source drops the connection in the middle
 * of a reply, when the source's cursor is killed under the copy (CursorNotFound), and a stopped
 * copy kills its cursor. Test clusters only: it needs known users and a proxy in front of the source.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, connect, type Server, type Socket } from 'node:net';
import { Binary, Int32, Long, MaxKey, MinKey, type Document } from 'bson';
import { MongoClient } from 'mongodb';
import { OP_MSG, parseMessage } from '../../src/cluster/op-msg.js';
import { copyPartition, type PartitionTask } from '../../src/copy/partition-copier.js';
import { StopFlag } from '../../src/copy/shared-state.js';
import type { WritePath } from '../../src/config/settings.js';
import { packValue } from '../../src/meta/store.js';
import { spawnCluster, type ClusterHandle } from '../cluster/index.js';
import { assertCopiedEqual, partitionResources, withUser as withRoot } from './wire-helpers.js';

const ROOT = { user: 'root', password: 'wire-read-pw-1234', roles: ['root'] };
const DB = 'wire_read';
const COUNT = 3000;

const withUser = (uri: string) => withRoot(uri, ROOT);

/**
 * A partition of the whole collection, read ~50 documents a reply (the average size said is larger
 * than the documents) and written in 16 kB batches: each reply is written in two or three slices.
 */
function task(coll: string, writePath: WritePath = 'wire'): PartitionTask {
  return {
    key: { instance: 'test', ns: `${DB}.${coll}`, index: 0 },
    db: DB,
    coll,
    order: 'id',
    min: packValue(new MinKey()),
    max: packValue(new MaxKey()),
    copiedDocs: 0,
    copiedBytes: 0,
    averageDocumentBytes: 20_000,
    settings: { batchBytes: 16 * 1024, batchesInFlight: 2, checkpointIntervalMs: 0, writePath, readPath: 'wire' },
  };
}

/** What the proxy does with a server reply: forward it, or forward its first half and drop the connection. */
type ReplyAction = 'forward' | 'cut';

/**
 * A TCP proxy in front of the source that reassembles each message both ways: the client's
 * commands are recorded by name, and `onReply` decides each reply's fate (it may act on the
 * server first, e.g. kill the cursor the reply names).
 */
async function sourceProxy(port: number, onReply: (reply: Document, size: number) => Promise<ReplyAction> | ReplyAction) {
  const commands: Document[] = [];
  let cut = 0;
  const sockets = new Set<Socket>();
  const server: Server = createServer((client) => {
    const upstream = connect(port, '127.0.0.1');
    sockets.add(client).add(upstream);
    const close = () => {
      client.destroy();
      upstream.destroy();
    };
    let fromClient = Buffer.alloc(0);
    client.on('data', (chunk: Buffer) => {
      fromClient = Buffer.concat([fromClient, chunk]);
      while (fromClient.length >= 4 && fromClient.length >= fromClient.readInt32LE(0)) {
        const message = fromClient.subarray(0, fromClient.readInt32LE(0));
        // The driver's handshake is a legacy OP_QUERY: forwarded, not recorded.
        if (message.readInt32LE(12) === OP_MSG) commands.push(parseMessage(message).body);
        upstream.write(message);
        fromClient = fromClient.subarray(message.length);
      }
    });
    let fromServer = Buffer.alloc(0);
    let replies = Promise.resolve();
    upstream.on('data', (chunk: Buffer) => {
      fromServer = Buffer.concat([fromServer, chunk]);
      while (fromServer.length >= 4 && fromServer.length >= fromServer.readInt32LE(0)) {
        const message = Buffer.from(fromServer.subarray(0, fromServer.readInt32LE(0)));
        fromServer = fromServer.subarray(message.length);
        // In order: each reply waits for the previous one's fate.
        replies = replies.then(async () => {
          if (client.destroyed) return;
          const action = message.readInt32LE(12) === OP_MSG ? await onReply(parseMessage(message).body, message.length) : 'forward';
          if (action === 'forward') return void client.write(message);
          cut++;
          client.write(message.subarray(0, message.length >> 1), () => setTimeout(close, 20));
        });
      }
    });
    client.on('close', close).on('error', close);
    upstream.on('close', close).on('error', close);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    uri: withUser(`mongodb://127.0.0.1:${(server.address() as { port: number }).port}/?directConnection=true`),
    commands,
    cut: () => cut,
    close: async () => {
      for (const socket of sockets) socket.destroy();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

/** A reply carrying a batch of the copy's cursor (`find`'s first or a `getMore`'s next). */
const batchReply = (reply: Document) => reply.cursor !== undefined && (reply.cursor.firstBatch ?? reply.cursor.nextBatch) !== undefined;

describe('the wire read path [test cluster]', () => {
  let sourceCluster: ClusterHandle;
  let destinationCluster: ClusterHandle;
  let source: MongoClient;
  let destination: MongoClient;

  before(async () => {
    [sourceCluster, destinationCluster] = (await Promise.all([
      spawnCluster({ users: [ROOT], enableTestCommands: true }),
      spawnCluster({ users: [ROOT] }),
    ])) as [ClusterHandle, ClusterHandle];
    source = await MongoClient.connect(withUser(sourceCluster.uri));
    destination = await MongoClient.connect(withUser(destinationCluster.uri));
    // Documents of varied sizes (some larger than a batch), so replies split at varied places.
    const docs: Document[] = Array.from({ length: COUNT }, (_, i) => ({
      _id: new Int32(i),
      name: `n${i}`,
      pad: new Binary(Buffer.alloc(i % 97 === 0 ? 20_000 : 100 + ((i * 37) % 600), i % 251)),
    }));
    for (const coll of ['both', 'driverWrite', 'cutReply', 'killed', 'stopped', 'steppedDown', 'reuseLarger', 'reuseSmaller'])
      await source
        .db(DB)
        .collection(coll)
        .insertMany(docs as never[]);
  });
  after(async () => {
    await Promise.allSettled([source?.close(), destination?.close()]);
    await Promise.allSettled([sourceCluster?.stop(), destinationCluster?.stop()]);
  });

  it('reads on its own SCRAM connections and writes each reply from where it was received, byte for byte', async () => {
    const outcome = await copyPartition(task('both'), partitionResources(source, destination));
    assert.equal(outcome.readPath, 'wire', 'the wire read path served');
    assert.equal(outcome.writePath, 'wire');
    assert.equal(outcome.copiedDocs, COUNT);
    await assertCopiedEqual(source, destination, DB, 'both', COUNT);
  });

  it('reads on its own connections for the driver write path too, byte for byte', async () => {
    const outcome = await copyPartition(task('driverWrite', 'raw'), partitionResources(source, destination));
    assert.equal(outcome.readPath, 'wire');
    assert.equal(outcome.writePath, 'raw');
    assert.equal(outcome.copiedDocs, COUNT);
    await assertCopiedEqual(source, destination, DB, 'driverWrite', COUNT);
  });

  it('copies partitions of collections with different average documents, one after another, in the same buffers', async () => {
    const resources = partitionResources(source, destination);
    // Buffers are sized from the collection's average document: these two ask for slightly different sizes.
    await copyPartition({ ...task('reuseLarger'), averageDocumentBytes: 20_000 }, resources);
    await copyPartition({ ...task('reuseSmaller'), averageDocumentBytes: 5_000 }, resources);
    assert.equal(resources.idleBatchBuffers!.created, 1, 'the second partition allocated buffers of its own');
    assert.equal(resources.idleBatchBuffers!.size, 1);
    await assertCopiedEqual(source, destination, DB, 'reuseLarger', COUNT);
    await assertCopiedEqual(source, destination, DB, 'reuseSmaller', COUNT);
  });

  it('converges with nothing lost or duplicated when the source drops the connection in the middle of a reply', async () => {
    let batches = 0;
    const proxy = await sourceProxy(Number(new URL(sourceCluster.uri).port), (reply) =>
      batchReply(reply) && [5, 20].includes(++batches) ? 'cut' : 'forward',
    );
    const proxied = await MongoClient.connect(proxy.uri);
    try {
      const outcome = await copyPartition(task('cutReply'), partitionResources(proxied, destination));
      assert.equal(proxy.cut(), 2, 'two replies were cut short');
      assert.equal(outcome.readPath, 'wire');
      assert.equal(outcome.copiedDocs, COUNT);
      await assertCopiedEqual(source, destination, DB, 'cutReply', COUNT);
    } finally {
      await proxied.close();
      await proxy.close();
    }
  });

  it('resumes from its position when the source kills its cursor mid-partition (CursorNotFound)', async () => {
    let batches = 0;
    const proxy = await sourceProxy(Number(new URL(sourceCluster.uri).port), async (reply): Promise<ReplyAction> => {
      if (batchReply(reply) && ++batches === 4) {
        // Killed on the server before the copy sees this reply: its next getMore finds no cursor.
        const killed = await source.db(DB).command({ killCursors: 'killed', cursors: [reply.cursor.id as Long] });
        assert.equal(killed.cursorsKilled.length, 1);
      }
      return 'forward';
    });
    const proxied = await MongoClient.connect(proxy.uri);
    try {
      const outcome = await copyPartition(task('killed'), partitionResources(proxied, destination));
      const finds = proxy.commands.filter((command) => command.find === 'killed');
      assert.equal(finds.length, 2, 'the read started again once, after CursorNotFound');
      assert.notDeepEqual(finds[1]!.min, { _id: new MinKey() }, 'from its position, not from the start');
      assert.equal(outcome.readPath, 'wire');
      assert.equal(outcome.copiedDocs, COUNT);
      await assertCopiedEqual(source, destination, DB, 'killed', COUNT);
    } finally {
      await proxied.close();
      await proxy.close();
    }
  });

  it('asks the driver for the primary again when the source says it is no longer primary, and converges', async () => {
    // The 3rd getMore is refused as by a stepped-down primary (NotPrimaryNoSecondaryOk).
    await source.db('admin').command({
      configureFailPoint: 'failCommand',
      mode: { skip: 2, times: 1 },
      data: { failCommands: ['getMore'], errorCode: 13435 },
    });
    try {
      const outcome = await copyPartition(task('steppedDown'), partitionResources(source, destination));
      assert.equal(outcome.readPath, 'wire');
      assert.equal(outcome.copiedDocs, COUNT);
      await assertCopiedEqual(source, destination, DB, 'steppedDown', COUNT);
      const failPoint = await source.db('admin').command({ configureFailPoint: 'failCommand', mode: 'off' });
      assert.equal(failPoint.count, 1, 'the copy met the refusal');
    } finally {
      await source.db('admin').command({ configureFailPoint: 'failCommand', mode: 'off' });
    }
  });

  it('kills its cursor on the source when the copy is stopped mid-partition', async () => {
    const stop = new StopFlag();
    let batches = 0;
    const proxy = await sourceProxy(Number(new URL(sourceCluster.uri).port), (reply) => {
      if (batchReply(reply) && ++batches === 3) stop.raise();
      return 'forward';
    });
    const proxied = await MongoClient.connect(proxy.uri);
    try {
      const outcome = await copyPartition(task('stopped'), partitionResources(proxied, destination, stop));
      assert.equal(outcome.status, 'stopped');
      assert.ok(outcome.copiedDocs > 0 && outcome.copiedDocs < COUNT);
      const kills = proxy.commands.filter((command) => command.killCursors === 'stopped');
      assert.equal(kills.length, 1, 'the open cursor was killed');
      const getMore = proxy.commands.find((command) => command.getMore !== undefined);
      assert.deepEqual(kills[0]!.cursors, [getMore!.getMore]);
    } finally {
      await proxied.close();
      await proxy.close();
    }
  });
});
