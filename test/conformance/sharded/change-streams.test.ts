/**
 * Change streams through mongos: the shards' streams merged in cluster-time order. A property
 * test runs concurrent writers over documents spread across the shards and checks the merged
 * stream: every acknowledged write appears exactly once, tokens only increase, each writer's
 * writes appear in the order it made them (the hybrid logical clock makes a later write on
 * another shard get a later cluster time), and resuming from any event's token gives exactly
 * the events after it. Also: postBatchResumeToken moves while idle, expanded `shardCollection`
 * events, one `drop` and `invalidate` for a sharded collection, ChangeStreamHistoryLost.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import type { Document } from 'mongodb';
import { closeStream, getMore, openStream, type RawStream } from '../change-stream-helpers.js';
import { shardCollection, shardedConformance } from './harness.js';

type Op = { kind: 'insert' | 'update' | 'delete'; id: number };

/** A writer's operations on its own documents: inserts, then updates and deletes of those. */
function writerOps(writer: number, choices: number[]): Op[] {
  const ops: Op[] = [];
  const live: number[] = [];
  let next = 0;
  for (const choice of choices) {
    if (live.length === 0 || choice % 3 === 0) {
      const id = writer * 1000 + next++;
      live.push(id);
      ops.push({ kind: 'insert', id });
    } else if (choice % 3 === 1) {
      ops.push({ kind: 'update', id: live[choice % live.length]! });
    } else {
      const [id] = live.splice(choice % live.length, 1);
      ops.push({ kind: 'delete', id: id! });
    }
  }
  return ops;
}

/** Reads until `count` events arrived (each getMore waits up to 500 ms), or gives up after `idleLimit` empty ones. */
async function collect(stream: RawStream, count: number, idleLimit = 40): Promise<Document[]> {
  const events = [...stream.firstBatch];
  stream.firstBatch = [];
  for (let idle = 0; events.length < count && idle < idleLimit;) {
    const batch = await getMore(stream, 500);
    if (batch.length === 0) idle++;
    events.push(...batch);
  }
  return events;
}

shardedConformance(
  'sharded change streams',
  (target) => {
    test('merged streams: concurrent writes across shards arrive once each, in order, resumable from any token', async () => {
      const t = target();
      let run = 0;
      await fc.assert(
        fc.asyncProperty(
          fc.array(fc.array(fc.nat({ max: 99 }), { minLength: 3, maxLength: 12 }), { minLength: 2, maxLength: 4 }),
          fc.nat(),
          async (writers, pick) => {
            const name = `merged${++run}`;
            await shardCollection(t, name, { _id: 'hashed' });
            const coll = t.db.collection(name);
            const stream = await openStream(t.db, name);
            const plans = writers.map((choices, w) => writerOps(w + 1, choices));
            await Promise.all(
              plans.map(async (ops) => {
                for (const op of ops) {
                  if (op.kind === 'insert') await coll.insertOne({ _id: op.id, v: 0 } as Document);
                  else if (op.kind === 'update') await coll.updateOne({ _id: op.id } as Document, { $inc: { v: 1 } });
                  else await coll.deleteOne({ _id: op.id } as Document);
                }
              }),
            );
            const total = plans.reduce((n, ops) => n + ops.length, 0);
            const events = await collect(stream, total);
            await closeStream(stream);
            assert.equal(events.length, total, 'every acknowledged write, none twice');
            for (let i = 1; i < events.length; i++) {
              assert.ok(events[i]!._id._data > events[i - 1]!._id._data, 'resume tokens increase');
              assert.ok(!events[i]!.clusterTime.lessThan(events[i - 1]!.clusterTime), 'cluster times never go back');
            }
            plans.forEach((ops, w) => {
              const mine = events.filter((e) => Math.floor(e.documentKey._id / 1000) === w + 1);
              assert.deepEqual(
                mine.map((e) => [e.operationType, e.documentKey._id]),
                ops.map((op) => [op.kind, op.id]),
                `writer ${w + 1}'s writes in the order it made them`,
              );
            });
            // Resume after any event: exactly the events that followed it.
            const k = pick % events.length;
            const resumed = await openStream(t.db, name, { resumeAfter: events[k]!._id });
            const rest = await collect(resumed, events.length - k - 1, 6);
            await closeStream(resumed);
            assert.deepEqual(
              rest.map((e) => e._id._data),
              events.slice(k + 1).map((e) => e._id._data),
            );
          },
        ),
        { numRuns: 6 },
      );
    });

    test('the postBatchResumeToken moves on while nothing is written (the shards’ no-op writes)', async () => {
      const t = target();
      await shardCollection(t, 'idle', { _id: 'hashed' });
      const stream = await openStream(t.db, 'idle');
      const first = stream.pbrt._data as string;
      let later = first;
      for (let i = 0; i < 30 && later === first; i++) {
        await getMore(stream, 500);
        later = stream.pbrt._data as string;
      }
      await closeStream(stream);
      assert.ok(later > first, 'the token advanced');
      // Resuming from it skips nothing that follows.
      const resumed = await openStream(t.db, 'idle', { resumeAfter: { _data: later } });
      await t.db.collection('idle').insertOne({ _id: 1 } as Document);
      const [event] = await collect(resumed, 1);
      await closeStream(resumed);
      assert.equal(event?.documentKey._id, 1);
      // A whole-cluster stream (admin, allChangesForCluster) advances the same way.
      const cluster = await openStream(t.client.db('admin'), undefined, { allChangesForCluster: true });
      const clusterFirst = cluster.pbrt._data as string;
      let clusterLater = clusterFirst;
      for (let i = 0; i < 30 && clusterLater === clusterFirst; i++) {
        await getMore(cluster, 500);
        clusterLater = cluster.pbrt._data as string;
      }
      await t.db.collection('idle').insertOne({ _id: 0 } as Document);
      const [clusterEvent] = await collect(cluster, 1);
      await closeStream(cluster);
      assert.ok(clusterLater > clusterFirst);
      assert.deepEqual(clusterEvent?.ns, { db: t.db.databaseName, coll: 'idle' });
    });

    test('showExpandedEvents reports shardCollection with its shard key', async () => {
      const t = target();
      const stream = await openStream(t.db, undefined, { showExpandedEvents: true });
      await shardCollection(t, 'announced', { region: 1, n: 1 });
      await t.db.collection('announced').insertOne({ region: 'eu', n: 1 });
      const events = await collect(stream, 3);
      await closeStream(stream);
      const sharded = events.find((e) => e.operationType === 'shardCollection');
      assert.ok(sharded, `events: ${events.map((e) => e.operationType).join(', ')}`);
      assert.deepEqual(sharded.ns, { db: t.db.databaseName, coll: 'announced' });
      assert.deepEqual(sharded.operationDescription.shardKey, { region: 1, n: 1 });
      assert.equal(sharded.operationDescription.unique, false);
      assert.ok(events.findIndex((e) => e.operationType === 'insert') > events.indexOf(sharded));
    });

    test('dropping a sharded collection reports one drop, then invalidate', async () => {
      const t = target();
      await shardCollection(t, 'dropped', { _id: 'hashed' });
      await t.db.collection('dropped').insertMany(Array.from({ length: 20 }, (_, i) => ({ _id: i })) as never[]);
      const stream = await openStream(t.db, 'dropped');
      await t.db.collection('dropped').drop();
      const events = await collect(stream, 2, 10);
      assert.deepEqual(
        events.map((e) => e.operationType),
        ['drop', 'invalidate'],
      );
      assert.equal(Number(stream.id), 0, 'the cursor closed after invalidate');
    });

    test('a resume token from before the shards’ oldest oplog entry is ChangeStreamHistoryLost', async (ctx) => {
      const t = target();
      if (!t.local) return ctx.skip('needs the test cluster’s small oplog');
      await shardCollection(t, 'rolled', { _id: 'hashed' });
      const stream = await openStream(t.db, 'rolled');
      await t.db.collection('rolled').insertOne({ _id: -1 } as Document);
      const [first] = await collect(stream, 1);
      await closeStream(stream);
      const pad = 'x'.repeat(16 * 1024);
      for (let batch = 0; batch < 6; batch++) {
        await t.db
          .collection('rolled')
          .insertMany(Array.from({ length: 40 }, (_, i) => ({ _id: batch * 100 + i, pad })) as never[], { ordered: false });
      }
      await assert.rejects(openStream(t.db, 'rolled', { resumeAfter: first!._id }), { code: 286, codeName: 'ChangeStreamHistoryLost' });
    });
  },
  { oplogSizeMB: 1 },
);
