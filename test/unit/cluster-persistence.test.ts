/**
 * The test cluster's data directory: what a crash leaves behind (a copy of the files taken while
 * the node runs) restarts with every acknowledged write, a torn journal tail is cut off, a damaged
 * checkpoint or a directory in use is refused by name.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { appendFileSync, cpSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MongoClient, type Timestamp } from 'mongodb';
import { startCluster } from '../cluster/index.js';

function tempDir(): string {
  return mkdtempSync(join(tmpdir(), 'ferry-persistence-'));
}

async function withClient<T>(uri: string, body: (client: MongoClient) => Promise<T>): Promise<T> {
  const client = await MongoClient.connect(uri);
  try {
    return await body(client);
  } finally {
    await client.close();
  }
}

test('a copy of the files of a running node (a crash) restarts with its writes; a torn journal tail is cut off', async () => {
  const dbPath = tempDir();
  const crashed = tempDir();
  try {
    const node = await startCluster({ dbPath, noopIntervalMs: 0 });
    let lastTime: Timestamp | undefined;
    await withClient(node.uri, async (client) => {
      for (let i = 0; i < 20; i++)
        lastTime = (await client.db('c').command({ insert: 'docs', documents: [{ _id: i }] })).operationTime as Timestamp;
      await client
        .db('c')
        .collection('docs')
        .deleteOne({ _id: 3 } as never);
    });
    cpSync(dbPath, crashed, { recursive: true });
    await node.stop();

    const journal = readdirSync(crashed).find((f) => f.startsWith('journal-'))!;
    // Half a record: a length, a type and a checksum, then less payload than announced.
    appendFileSync(join(crashed, journal), Buffer.from([200, 0, 0, 0, 0x50, 1, 2, 3, 4, 9, 9]));
    writeFileSync(join(crashed, 'mongod.lock'), '');
    const restarted = await startCluster({ dbPath: crashed, noopIntervalMs: 0 });
    await withClient(restarted.uri, async (client) => {
      const ids = (await client.db('c').collection('docs').find().toArray()).map((d) => d._id);
      assert.deepEqual(ids, [0, 1, 2, ...Array.from({ length: 16 }, (_, i) => i + 4)]);
      const reply = await client.db('c').command({ insert: 'docs', documents: [{ _id: 'next' }] });
      const time = reply.operationTime as Timestamp;
      assert.ok(time.t > lastTime!.t || (time.t === lastTime!.t && time.i > lastTime!.i), 'the clock continues');
    });
    // Records appended after the cut are read on the next start (they did not follow the garbage).
    cpSync(crashed, dbPath + '-again', { recursive: true });
    await restarted.stop();
    writeFileSync(join(dbPath + '-again', 'mongod.lock'), '');
    const again = await startCluster({ dbPath: dbPath + '-again', noopIntervalMs: 0 });
    await withClient(again.uri, async (client) =>
      assert.equal(
        await client
          .db('c')
          .collection('docs')
          .countDocuments({ _id: 'next' } as never),
        1,
      ),
    );
    await again.stop();
  } finally {
    for (const dir of [dbPath, crashed, dbPath + '-again']) rmSync(dir, { recursive: true, force: true });
  }
});

test('a directory in use by a running node is refused (DBPathInUse); a damaged checkpoint is refused', async () => {
  const dbPath = tempDir();
  try {
    const node = await startCluster({ dbPath, noopIntervalMs: 0 });
    await assert.rejects(startCluster({ dbPath }), { name: 'DataDirectoryError', message: /DBPathInUse/ });
    await node.stop();
    const checkpoint = join(dbPath, 'checkpoint.bson');
    const bytes = readFileSync(checkpoint);
    bytes[bytes.length - 3] ^= 0xff;
    writeFileSync(checkpoint, bytes);
    await assert.rejects(startCluster({ dbPath }), { name: 'DataDirectoryError', message: /damaged/ });
  } finally {
    rmSync(dbPath, { recursive: true, force: true });
  }
});
