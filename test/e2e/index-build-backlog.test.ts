/**
 * An index built after the copy while change events still replay onto newer copies of documents
 * (the fault matrix's known defect): the source inserts a document with two arrays, fixes it, and
 * only then creates a compound index over both fields, all after T0 and before planning reads the
 * catalog. The copy writes the fixed document; application replays the insert (two arrays again)
 * and is held, by a fail point on the destination, before the fix. A build then would meet
 * CannotIndexParallelArrays, and a build before the replay would make the replay meet it: the
 * build must wait for application to catch up and build then, never pause the sync; after commit
 * the destination has the index and the source's documents.
 *
 * The order is made certain with `failCommand`: on the source, every `listIndexes` of the
 * collection waits a while, so planning reads the catalog after the test's writes; on the
 * destination, the second `update` on the collection (application of the fix) waits.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { Document } from 'bson';
import { RUN, useClusterPair } from './copy-fixtures.js';
import { startFerry } from './ferry-process.js';

const clusters = useClusterPair({ enableTestCommands: true });

describe('an index build after the copy', () => {
  it('waits for change events a document is still replaying instead of pausing on CannotIndexParallelArrays', async (t) => {
    const { source, destination } = clusters;
    const db = `ixbacklog_${RUN}`;
    const ns = `${db}.shapes`;
    try {
      await source.db('admin').command({ configureFailPoint: 'failCommand', mode: 'off' });
      await destination.db('admin').command({ configureFailPoint: 'failCommand', mode: 'off' });
    } catch {
      t.skip('a cluster refuses configureFailPoint (a deployment without enableTestCommands)');
      return;
    }
    const shapes = source.db(db).collection('shapes');
    await shapes.insertMany(Array.from({ length: 200 }, (_, i) => ({ _id: i, a: [i, i + 1], b: i })) as never[]);
    await clusters.emptyDestination();
    const hold = (commands: string[], ms: number) => ({ failCommands: commands, namespace: ns, blockConnection: true, blockTimeMS: ms });
    await source.db('admin').command({ configureFailPoint: 'failCommand', mode: 'alwaysOn', data: hold(['listIndexes'], 4000) });
    // The first update (application of the replayed insert) goes through; the next (the fix) waits.
    await destination.db('admin').command({ configureFailPoint: 'failCommand', mode: { skip: 1 }, data: hold(['update'], 10_000) });
    const ferry = await startFerry(['--cluster0', clusters.pair.cluster0, '--cluster1', clusters.pair.cluster1]);
    try {
      const started = await ferry.post('start', { source: 'cluster0', destination: 'cluster1', includeNamespaces: [{ database: db }] });
      assert.equal(started.status, 200, JSON.stringify(started.body));
      // After T0, while planning waits for the catalog: two arrays, then one, then the index over both.
      await shapes.insertOne({ _id: 'x', a: [1, 2], b: [3, 4] } as Document);
      await shapes.updateOne({ _id: 'x' } as Document, { $set: { b: 5 } });
      await shapes.createIndex({ a: 1, b: 1 }, { name: 'a_b' });
      await source.db('admin').command({ configureFailPoint: 'failCommand', mode: 'off' });

      const ready = await ferry.waitForProgress((p) => p.canCommit === true || p.state === 'PAUSED', 120_000);
      assert.equal(ready.state, 'RUNNING', `the sync never pauses: ${JSON.stringify(ready.warnings)}`);
      assert.ok(
        ferry.log().some((line) => /waits for change-event application to catch up/.test(String(line.message))),
        'the build waited for change-event application',
      );
      assert.equal((await ferry.post('commit', {})).status, 200);
      await ferry.waitForProgress((p) => p.state === 'COMMITTED', 120_000);
    } finally {
      for (const client of [source, destination]) {
        await client
          .db('admin')
          .command({ configureFailPoint: 'failCommand', mode: 'off' })
          .catch(() => undefined);
      }
      assert.equal(await ferry.stop(), 0);
    }
    assert.deepEqual(await clusters.differences([{ database: db }]), []);
    const indexes = await destination.db(db).collection('shapes').listIndexes().toArray();
    assert.deepEqual(indexes.find((index) => index.name === 'a_b')?.key, { a: 1, b: 1 }, 'the index is built');
  });
});
