/**
 * Commit restores what the source has, even where the source's value equals a temporary one or
 * where the temporary form would make two indexes one (issue 18, defects 8 and 9):
 * - a capped collection with `max: 2147483647` (and `size` 2^31): 2^31-1 is also what mongod
 *   lists for "no limit", but it is the source's listed value and must come back;
 * - a capped collection at 1 PB (the temporary size) with a small `max`;
 * - a TTL index of 2147483647 seconds (the temporary TTL);
 * - indexes on the same key that differ only in `unique` (mongod 5.0+), plain, sparse, partial,
 *   and with the unique one hidden, present when the sync starts and created by change events
 *   after the copy in either order: both must exist through the sync and come back exactly.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { Document } from 'bson';
import { RUN, useClusterPair } from './copy-fixtures.js';
import { startFerry } from './ferry-process.js';

const clusters = useClusterPair();

describe('commit restores the source values, never a temporary look-alike', () => {
  it('capped max 2^31-1, capped size 1 PB, TTL 2^31-1, and indexes differing only in unique', async () => {
    const db = `originals_${RUN}`;
    const source = clusters.source.db(db);
    await source.createCollection('capped_max', { capped: true, size: 2 ** 31, max: 2147483647 });
    await source.createCollection('capped_petabyte', { capped: true, size: 1024 ** 5, max: 5 });
    for (const name of ['capped_max', 'capped_petabyte']) {
      await source.collection(name).insertMany(Array.from({ length: 8 }, (_, i) => ({ _id: i })) as Document[]);
    }
    const ttl = source.collection('ttl');
    await ttl.insertMany(Array.from({ length: 10 }, (_, i) => ({ _id: i, at: new Date() })) as Document[]);
    await ttl.createIndex({ at: 1 }, { name: 'at_max', expireAfterSeconds: 2147483647 });

    const twins = source.collection('twins');
    await twins.insertMany(
      Array.from({ length: 50 }, (_, i) => ({ _id: i, email: `u${i}`, p: i, ...(i % 2 === 0 ? { s: i } : {}) })) as Document[],
    );
    await twins.createIndex({ email: 1 }, { name: 'email_unique', unique: true });
    await twins.createIndex({ email: 1 }, { name: 'email_plain' });
    await twins.createIndex({ s: 1 }, { name: 's_unique_sparse', unique: true, sparse: true });
    await twins.createIndex({ s: 1 }, { name: 's_sparse', sparse: true });
    await twins.createIndex({ p: 1 }, { name: 'p_unique_partial', unique: true, partialFilterExpression: { p: { $gt: 10 } } });
    await twins.createIndex({ p: 1 }, { name: 'p_partial', partialFilterExpression: { p: { $gt: 10 } } });
    await twins.createIndex({ _id: 1, email: 1 }, { name: 'id_email_unique_hidden', unique: true, hidden: true });
    await twins.createIndex({ _id: 1, email: 1 }, { name: 'id_email_plain' });

    const later = source.collection('later');
    await later.insertMany(Array.from({ length: 30 }, (_, i) => ({ _id: i, a: i, b: i })) as Document[]);

    const filter = [{ database: db }];
    const ferry = await startFerry([
      '--cluster0',
      clusters.pair.cluster0,
      '--cluster1',
      clusters.pair.cluster1,
      '--id',
      `originals-${RUN}`,
    ]);
    try {
      const started = await ferry.post('start', { source: 'cluster0', destination: 'cluster1', includeNamespaces: filter });
      assert.equal(started.status, 200, JSON.stringify(started.body));
      await ferry.waitForProgress((p) => p.canCommit === true, 60_000);
      // Twins made by change events after the copy, in both orders.
      await later.createIndex({ a: 1 }, { name: 'a_unique', unique: true });
      await later.createIndex({ a: 1 }, { name: 'a_plain' });
      await later.createIndex({ b: 1 }, { name: 'b_plain' });
      await later.createIndex({ b: 1 }, { name: 'b_unique', unique: true });
      await later.insertOne({ _id: 'last', a: 'last', b: 'last' } as Document);
      const deadline = Date.now() + 60_000;
      while (
        (await clusters.destination
          .db(db)
          .collection('later')
          .countDocuments({ _id: 'last' } as Document)) === 0
      ) {
        const progress = await ferry.progress();
        assert.equal(progress.state, 'RUNNING', JSON.stringify(progress.warnings));
        assert.ok(Date.now() < deadline, 'the events after the index builds were applied');
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      const midSync = await clusters.destination.db(db).collection('later').listIndexes().toArray();
      assert.deepEqual(midSync.map((index) => index.name).sort(), ['_id_', 'a_plain', 'a_unique', 'b_plain', 'b_unique']);

      await ferry.waitForProgress((p) => p.canCommit === true, 60_000);
      assert.equal((await ferry.post('commit', {})).status, 200);
      const committed = await ferry.waitForProgress((p) => p.state === 'COMMITTED', 60_000);
      assert.deepEqual(committed.warnings, []);
      assert.deepEqual(await clusters.differences(filter), []);
      const [cappedMax] = await clusters.destination.db(db).listCollections({ name: 'capped_max' }).toArray();
      assert.equal((cappedMax as Document).options.max, 2147483647);
    } finally {
      await ferry.stop();
    }
  });
});
