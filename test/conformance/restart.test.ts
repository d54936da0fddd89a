/**
 * Restarts with data (`dbPath`, mongod's `--dbpath`): a node killed under a write load (SIGKILL)
 * or shut down (SIGTERM) and started again on the same directory has every write it acknowledged
 * with the default (majority) write concern, its namespaces as they were listed (options,
 * indexes, views), its users, and its oplog: the clock goes on from where it was and a resume
 * token from before the restart resumes. Also: freezing a node (SIGSTOP) stalls its clients
 * until it is resumed. These need a server this process can kill: skipped on a real deployment.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type ChangeStream, type Document, Long, MongoClient, type ResumeToken, Timestamp } from 'mongodb';
import { conformance } from './harness.js';
import { type ClusterProcess, spawnCluster } from '../cluster/index.js';

/** A node on a fresh data directory; removed (with the directory) after `body`. */
async function withNode(body: (node: ClusterProcess, client: () => Promise<MongoClient>) => Promise<void>, journalCheckpointMB?: number) {
  const dbPath = await mkdtemp(join(tmpdir(), 'ferry-dbpath-'));
  const node = await spawnCluster({ dbPath, noopIntervalMs: 0, journalCheckpointMB });
  const clients: MongoClient[] = [];
  try {
    await body(node, async () => {
      const client = await MongoClient.connect(node.uri, { serverSelectionTimeoutMS: 10_000 });
      clients.push(client);
      return client;
    });
  } finally {
    for (const client of clients) await client.close().catch(() => {});
    await node.stop();
    await rm(dbPath, { recursive: true, force: true });
  }
}

function later(a: Timestamp, b: Timestamp): boolean {
  return a.t > b.t || (a.t === b.t && a.i > b.i);
}

/** Inserts from `writers` concurrent loops until the node stops answering (or `stop()`). */
class WriteLoad {
  /** `_id`s of the writes the node acknowledged. */
  readonly acknowledged: number[] = [];
  /** The latest operationTime of an acknowledged write. */
  lastTime = new Timestamp({ t: 0, i: 0 });
  readonly finished: Promise<void>;
  private stopped = false;

  constructor(client: MongoClient, writers: number) {
    this.finished = Promise.all(Array.from({ length: writers }, (_, w) => this.writer(client, writers, w))).then(() => undefined);
  }

  private async writer(client: MongoClient, writers: number, w: number): Promise<void> {
    for (let n = 0; !this.stopped; n++) {
      const _id = n * writers + w;
      try {
        const reply = await client.db('load').command({ insert: 'docs', documents: [{ _id, pad: 'x'.repeat(200) }] });
        this.acknowledged.push(_id);
        const time = reply.operationTime as Timestamp;
        if (later(time, this.lastTime)) this.lastTime = time;
      } catch {
        return; // the node is gone: this write was not acknowledged
      }
    }
  }

  /** Resolves once `count` writes were acknowledged (the load is under way). */
  async reached(count: number): Promise<void> {
    const deadline = Date.now() + 60_000;
    while (this.acknowledged.length < count && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20));
  }

  stop(): void {
    this.stopped = true;
  }
}

/** Reads a change stream until `done` says so (or 20 s pass). */
async function readUntil(stream: ChangeStream, done: (events: Document[]) => boolean): Promise<Document[]> {
  const events: Document[] = [];
  const deadline = Date.now() + 20_000;
  while (!done(events) && Date.now() < deadline) {
    const event = await stream.tryNext();
    if (event) events.push(event);
  }
  return events;
}

conformance('restarts with data', (target) => {
  for (const signal of ['SIGKILL', 'SIGTERM'] as const) {
    test(`after ${signal} under a write load: acknowledged writes, the oplog and resume tokens survive`, async (t) => {
      if (!target().local) return t.skip('restarts need a node this process can kill');
      await withNode(async (node, connect) => {
        const client = await connect();
        const docs = client.db('load').collection('docs');
        // A resume token from before the load: every write of the load comes after it.
        const stream = docs.watch();
        await stream.tryNext();
        await docs.insertOne({ _id: -1, marker: true } as Document);
        const [marker] = await readUntil(stream, (events) => events.length > 0);
        const token: ResumeToken = marker._id as ResumeToken;
        await stream.close();

        const load = new WriteLoad(client, 4);
        await load.reached(200);
        await node.kill(signal); // while the writers are still writing
        load.stop();
        await load.finished;
        const { acknowledged, lastTime } = load;
        assert.ok(acknowledged.length >= 200, `the load wrote (${acknowledged.length} writes)`);

        await node.start();
        const after = await connect();
        const ids = await after
          .db('load')
          .collection('docs')
          .find({}, { projection: { _id: 1 } })
          .toArray();
        const stored = new Set<unknown>(ids.map((d) => d._id));
        const lost = acknowledged.filter((id) => !stored.has(id));
        assert.deepEqual(lost, [], 'every acknowledged write is there');

        const reply = await after.db('load').command({ insert: 'docs', documents: [{ _id: 'after' }] });
        assert.ok(later(reply.operationTime as Timestamp, lastTime), 'the clock went on from where it was');

        const resumed = after.db('load').collection('docs').watch([], { resumeAfter: token });
        const events = await readUntil(resumed, (seen) => seen.some((e) => e.documentKey?._id === 'after'));
        await resumed.close();
        const seenIds = new Set(events.map((e) => e.documentKey?._id));
        assert.deepEqual(
          acknowledged.filter((id) => !seenIds.has(id)),
          [],
          'the resumed stream delivers every acknowledged write after the token',
        );
        assert.equal(events[events.length - 1].documentKey._id, 'after');
        assert.equal(events.filter((e) => e.documentKey._id === -1).length, 0, 'nothing before the token');
      });
    });
  }

  test('collection options, indexes, views and users are listed alike after SIGTERM and after SIGKILL', async (t) => {
    if (!target().local) return t.skip('restarts need a node this process can kill');
    await withNode(async (node, connect) => {
      const client = await connect();
      const db = client.db('defs');
      await db.createCollection('validated', {
        validator: { $jsonSchema: { bsonType: 'object', required: ['a'] } },
        validationLevel: 'moderate',
        collation: { locale: 'fr' },
        changeStreamPreAndPostImages: { enabled: true },
      });
      await db.createCollection('capped', { capped: true, size: 8192, max: 5 });
      await db.collection('validated').createIndexes([
        { key: { a: 1 }, name: 'a_unique', unique: true },
        { key: { b: 1 }, name: 'b_partial', partialFilterExpression: { b: { $gt: 5 } } },
        { key: { at: 1 }, name: 'at_ttl', expireAfterSeconds: 3600 },
      ]);
      await db.collection('validated').insertMany([{ a: 1 }, { a: 2, b: 6 }]);
      for (let i = 0; i < 8; i++) await db.collection('capped').insertOne({ i });
      await db.createCollection('view', { viewOn: 'validated', pipeline: [{ $match: { a: 2 } }] });
      await client.db('admin').command({ createUser: 'restarted', pwd: 'secret', roles: ['readAnyDatabase'] });
      await db.command({ collMod: 'validated', index: { name: 'at_ttl', expireAfterSeconds: 60 } });

      const snapshot = async (c: MongoClient) => {
        const d = c.db('defs');
        return {
          collections: await d.listCollections().toArray(),
          indexes: await d.collection('validated').listIndexes().toArray(),
          capped: await d.collection('capped').find().toArray(),
          view: await d
            .collection('view')
            .find({}, { projection: { _id: 0 } })
            .toArray(),
          users: (await c.db('admin').command({ usersInfo: 'restarted' })).users,
        };
      };
      const before = await snapshot(client);
      assert.deepEqual(
        before.capped.map((d) => d.i),
        [3, 4, 5, 6, 7],
      );
      for (const signal of ['SIGTERM', 'SIGKILL'] as const) {
        await node.restart({ signal });
        const again = await connect();
        assert.deepEqual(await snapshot(again), before, `after ${signal}`);
        await assert.rejects(again.db('defs').collection('validated').insertOne({ a: 1 }), { code: 11000 }, 'the unique index holds');
        await assert.rejects(again.db('defs').collection('validated').insertOne({ b: 1 }), { code: 121 }, 'the validator holds');
        const user = await MongoClient.connect(node.uri.replace('mongodb://', 'mongodb://restarted:secret@'));
        assert.equal((await user.db('defs').collection('validated').countDocuments()) > 0, true, 'the user can log in');
        await user.close();
      }
    });
  });

  test('a node whose journal outgrew its checkpoint several times restarts with all its data', async (t) => {
    if (!target().local) return t.skip('restarts need a node this process can kill');
    await withNode(async (node, connect) => {
      const client = await connect();
      const coll = client.db('big').collection<{ _id: number; pad: string }>('docs');
      for (let batch = 0; batch < 6; batch++) {
        await coll.insertMany(Array.from({ length: 500 }, (_, i) => ({ _id: batch * 500 + i, pad: 'p'.repeat(1000) })));
      }
      await coll.deleteMany({ _id: { $lt: 100 } });
      await coll.updateMany({ _id: { $gte: 2900 } }, { $set: { pad: 'updated' } });
      await node.restart({ signal: 'SIGKILL' });
      const again = (await connect()).db('big').collection('docs');
      assert.equal(await again.countDocuments(), 2900);
      assert.equal(await again.countDocuments({ pad: 'updated' }), 100);
    }, 1);
  });

  test('a retryable write retried after a restart gets its first reply, without running again', async (t) => {
    if (!target().local) return t.skip('restarts need a node this process can kill');
    await withNode(async (node, connect) => {
      const client = await connect();
      const session = client.startSession();
      const insert = { insert: 'retried', documents: [{ _id: 1 }], txnNumber: Long.fromNumber(3) };
      const first = await client.db('r').command(insert, { session });
      await node.restart({ signal: 'SIGKILL' });
      const again = await client.db('r').command(insert, { session });
      assert.equal(again.n, first.n);
      assert.equal(again.writeErrors, undefined, 'not a duplicate key: the insert did not run again');
      assert.equal(await client.db('r').collection('retried').countDocuments(), 1);
      await session.endSession();
    });
  });

  test('a frozen node (SIGSTOP) answers nothing until it is resumed', async (t) => {
    if (!target().local) return t.skip('freezing needs a node this process can signal');
    await withNode(async (node) => {
      const client = await MongoClient.connect(node.uri, { socketTimeoutMS: 300 });
      try {
        node.freeze();
        await assert.rejects(client.db('admin').command({ ping: 1 }), { name: 'MongoNetworkTimeoutError' });
        node.resume();
        assert.equal((await client.db('admin').command({ ping: 1 })).ok, 1);
      } finally {
        node.resume();
        await client.close();
      }
    });
  });
});
