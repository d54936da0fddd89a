/**
 * The drivers' streaming server monitoring: an awaitable `hello` sent with `exhaustAllowed` is
 * answered as a stream (`moreToCome`), one reply per `maxAwaitTimeMS`, by mongod and by mongos.
 * Without it every awaited heartbeat fails ("Server ended moreToCome unexpectedly"), the driver
 * marks the server unknown and clears its connection pool, and operations in flight fail with
 * PoolClearedError — about every 10 s, in every client of the cluster.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import { BSON, MongoClient } from 'mongodb';
import { conformance } from './harness.js';
import { shardedConformance } from './sharded/harness.js';

/** Watches a fresh client's heartbeats and pool for `ms`, with a fast heartbeat. */
async function monitor(uri: string, ms: number) {
  const client = new MongoClient(uri, { heartbeatFrequencyMS: 500, serverMonitoringMode: 'stream' });
  const seen = { awaited: 0, failures: [] as string[], poolsCleared: 0 };
  client.on('serverHeartbeatSucceeded', (event) => (seen.awaited += event.awaited ? 1 : 0));
  client.on('serverHeartbeatFailed', (event) => seen.failures.push(event.failure.message));
  client.on('connectionPoolCleared', () => seen.poolsCleared++);
  try {
    await client.connect();
    await client.db('admin').command({ ping: 1 });
    await new Promise((resolve) => setTimeout(resolve, ms));
  } finally {
    await client.close();
  }
  return seen;
}

const OP_MSG = 2013;
const MORE_TO_COME = 1 << 1;
const EXHAUST_ALLOWED = 1 << 16;

/** Sends one OP_MSG with `flags` and collects replies (header flags and body) until `count` or `ms`. */
async function rawReplies(uri: string, body: object, flags: number, count: number, ms: number) {
  const { hostname, port } = new URL(uri.replace(/^mongodb:/, 'http:'));
  const socket = net.connect(Number(port), hostname);
  await new Promise((resolve, reject) => socket.once('connect', resolve).once('error', reject));
  const payload = Buffer.from(BSON.serialize(body));
  const header = Buffer.alloc(21);
  header.writeInt32LE(21 + payload.length, 0);
  header.writeInt32LE(7, 4);
  header.writeInt32LE(OP_MSG, 12);
  header.writeUInt32LE(flags, 16);
  socket.write(Buffer.concat([header, payload]));
  const replies: { requestId: number; responseTo: number; flags: number; body: BSON.Document }[] = [];
  let pending = Buffer.alloc(0);
  await new Promise<void>((resolve) => {
    const timer = setTimeout(resolve, ms);
    socket.on('data', (chunk) => {
      pending = Buffer.concat([pending, chunk]);
      while (pending.length >= 4 && pending.length >= pending.readInt32LE(0)) {
        const length = pending.readInt32LE(0);
        const message = pending.subarray(0, length);
        pending = pending.subarray(length);
        replies.push({
          requestId: message.readInt32LE(4),
          responseTo: message.readInt32LE(8),
          flags: message.readUInt32LE(16),
          body: BSON.deserialize(message.subarray(21)),
        });
        if (replies.length >= count) {
          clearTimeout(timer);
          resolve();
        }
      }
    });
  });
  socket.destroy();
  return replies;
}

conformance('streaming hello', (target) => {
  test('a client monitoring with the streaming protocol sees no failed heartbeat and no cleared pool', async () => {
    const seen = await monitor(target().uri, 2500);
    assert.deepEqual(seen.failures, []);
    assert.equal(seen.poolsCleared, 0);
    assert.ok(seen.awaited >= 2, `awaited heartbeats: ${seen.awaited}`);
  });

  test('an awaitable hello with exhaustAllowed is answered with moreToCome, again after maxAwaitTimeMS, each reply answering the last', async () => {
    const { topologyVersion } = await target().client.db('admin').command({ hello: 1 });
    const body = { hello: 1, maxAwaitTimeMS: 200, topologyVersion, $db: 'admin' };
    const streamed = await rawReplies(target().uri, body, EXHAUST_ALLOWED, 3, 5000);
    assert.equal(streamed.length, 3);
    for (const reply of streamed) {
      assert.equal(reply.body.ok, 1);
      assert.equal(reply.flags & MORE_TO_COME, MORE_TO_COME);
    }
    assert.equal(streamed[0]!.responseTo, 7);
    assert.equal(streamed[1]!.responseTo, streamed[0]!.requestId);
    assert.equal(streamed[2]!.responseTo, streamed[1]!.requestId);
    // Without exhaustAllowed: one reply, no moreToCome.
    const single = await rawReplies(target().uri, body, 0, 2, 1000);
    assert.equal(single.length, 1);
    assert.equal(single[0]!.flags & MORE_TO_COME, 0);
  });
});

shardedConformance('streaming hello through mongos', (target) => {
  test('a client of mongos monitoring with the streaming protocol sees no failed heartbeat and no cleared pool', async () => {
    const seen = await monitor(target().uri, 2500);
    assert.deepEqual(seen.failures, []);
    assert.equal(seen.poolsCleared, 0);
    assert.ok(seen.awaited >= 2, `awaited heartbeats: ${seen.awaited}`);
  });
});
