/**
 * Test cluster: how many change events per second a cluster-wide change stream delivers to a raw
 * driver cursor while a bulk insert load runs. The cluster runs in its own process (as in tests
 * and the demo); one client inserts 1 KiB documents in batches of 1,000, another reads
 * `$changeStream: {allChangesForCluster: true, showExpandedEvents: true}` as raw BSON.
 * Then a second stream reads the same events again from the start time (a catch-up read of a
 * backlog, the stream's own ceiling without the insert load).
 *
 *   npm run build && node dist/bench/cluster-change-stream.js [events=200000]
 */
import { performance } from 'node:perf_hooks';
import { MongoClient } from 'mongodb';
import { spawnCluster } from '../test/cluster/index.js';

const total = Number(process.argv[2] ?? 200_000);
const batch = 1000;
const pad = 'x'.repeat(1024 - 40);

const cluster = await spawnCluster({ oplogSizeMB: 1024 });
const writer = await MongoClient.connect(cluster.uri);
const reader = await MongoClient.connect(cluster.uri);

/** Reads `count` events from a raw cluster-wide stream; returns events/s and MB read. */
async function drain(cursor: AsyncIterable<unknown>, count: number): Promise<{ seconds: number; bytes: number }> {
  const started = performance.now();
  let bytes = 0;
  let received = 0;
  for await (const event of cursor) {
    bytes += (event as Buffer).length;
    if (++received >= count) break;
  }
  return { seconds: (performance.now() - started) / 1000, bytes };
}

try {
  const startAt = (await writer.db('admin').command({ ping: 1 })).operationTime;
  const cursor = reader.db('admin').aggregate([{ $changeStream: { allChangesForCluster: true, showExpandedEvents: true } }], {
    raw: true,
    maxAwaitTimeMS: 100,
    batchSize: 10_000,
  });
  // Open the stream (first batch) before the load starts.
  await cursor.tryNext();
  let received = 0;
  let bytes = 0;
  let lastEventAt = 0;
  const reading = (async () => {
    for await (const event of cursor) {
      bytes += (event as unknown as Buffer).length;
      received++;
      if (received >= total) break;
    }
    lastEventAt = performance.now();
  })();
  const coll = writer.db('bench').collection('events');
  const started = performance.now();
  for (let i = 0; i < total; i += batch) {
    const docs = Array.from({ length: Math.min(batch, total - i) }, (_, j) => ({ _id: i + j, pad }));
    await coll.insertMany(docs as never[], { ordered: true });
  }
  const writtenAt = performance.now();
  await reading;
  await cursor.close();
  const seconds = (lastEventAt - started) / 1000;
  console.log(`inserted ${total} x 1 KiB documents in ${((writtenAt - started) / 1000).toFixed(2)} s`);
  const backlog = reader
    .db('admin')
    .aggregate([{ $changeStream: { allChangesForCluster: true, showExpandedEvents: true, startAtOperationTime: startAt } }], {
      raw: true,
      batchSize: 10_000,
    });
  // The backlog holds the collection's create event too.
  const caughtUp = await drain(backlog, total + 1);
  await backlog.close();
  console.log(
    `stream delivered ${received} events (${(bytes / 1e6).toFixed(0)} MB) in ${seconds.toFixed(2)} s: ` +
      `${Math.round(received / seconds)} events/s, lag at end ${((lastEventAt - writtenAt) / 1000).toFixed(2)} s`,
  );
  console.log(
    `catch-up read of the backlog: ${Math.round((total + 1) / caughtUp.seconds)} ` +
      `events/s (${(caughtUp.bytes / 1e6 / caughtUp.seconds).toFixed(0)} MB/s)`,
  );
} finally {
  await writer.close();
  await reader.close();
  await cluster.stop();
}
