/**
 * A collection dropped and another renamed while the copy is reading them: the source kills the
 * partitions' read cursors (the next getMore fails with QueryPlanKilled, 175, as mongod since
 * 4.1.7), the partition copier restarts each read from its watermark, finds the collection gone
 * and finishes the partition; change-event application then replays the drop and the rename. The
 * sync never pauses, reaches canCommit, commits, and the destination equals the source.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { Document } from 'bson';
import { insertDocuments, RUN, useClusterPair } from './copy-fixtures.js';
import { startFerry, type FerryProcess, type Progress } from './ferry-process.js';

const clusters = useClusterPair();
const DB = `killed_${RUN}`;
const DOCUMENTS = 6000;
/**
 * A slow copy whose partitions span several read replies (a read reply is about 1 MiB, a
 * collection about 6 MiB in one partition), so a cursor is open on the source while its first
 * reply is being written, 8 KiB at a time.
 */
const COPY_FLAGS = ['--copyWorkers', '1', '--batchesInFlight', '1', '--batchBytes', '8192', '--partitionSizeMB', '16'];

async function fill(coll: string): Promise<void> {
  const docs = Array.from({ length: DOCUMENTS }, (_, i) => ({ _id: i, coll, body: 'x'.repeat(1000) }));
  for (let i = 0; i < docs.length; i += 1000) await insertDocuments(clusters.source.db(DB), coll, docs.slice(i, i + 1000));
}

describe('a collection dropped and another renamed while the copy reads them', () => {
  let ferry: FerryProcess;
  const samples: Progress[] = [];
  const notPaused = (progress: Progress): Progress => {
    samples.push(progress);
    assert.notEqual(progress.state, 'PAUSED', `the sync paused: ${JSON.stringify(progress)}`);
    return progress;
  };

  before(async () => {
    for (const coll of ['dropme', 'renameme', 'stays']) await fill(coll);
    ferry = await startFerry([
      '--cluster0',
      clusters.pair.cluster0,
      '--cluster1',
      clusters.pair.cluster1,
      '--id',
      `killed-${RUN}`,
      ...COPY_FLAGS,
    ]);
    await clusters.emptyDestination();
    const started = await ferry.post('start', { source: 'cluster0', destination: 'cluster1', includeNamespaces: [{ database: DB }] });
    assert.equal(started.status, 200, JSON.stringify(started.body));
  });

  after(async () => {
    if (ferry !== undefined) assert.equal(await ferry.stop(), 0);
  });

  it('drops and renames while their partitions are mid-read, and the sync goes on', async () => {
    const destination = clusters.destination.db(DB);
    const admin = clusters.source.db('admin');
    // Mid-read: some documents written, fewer than the first reply holds, so the cursor is open.
    const midRead = async (coll: string) => {
      const n = await destination
        .collection(coll)
        .estimatedDocumentCount()
        .catch(() => 0);
      return n > 0 && n < DOCUMENTS / 2;
    };
    let dropped = false;
    let renamed = false;
    const deadline = Date.now() + 120_000;
    while (!(dropped && renamed)) {
      assert.ok(Date.now() < deadline, 'the copy never was mid-read on both collections');
      if (!dropped && (await midRead('dropme'))) {
        await clusters.source.db(DB).collection('dropme').drop();
        dropped = true;
      }
      if (!renamed && (await midRead('renameme'))) {
        await admin.command({ renameCollection: `${DB}.renameme`, to: `${DB}.renamed` });
        renamed = true;
      }
      notPaused(await ferry.progress());
      if (!(dropped && renamed)) await new Promise((resolve) => setTimeout(resolve, 5));
    }
    // Writes after the DDL reach the collection under its new name.
    await clusters.source
      .db(DB)
      .collection('renamed')
      .insertOne({ _id: 'after rename' } as Document);
    await clusters.source
      .db(DB)
      .collection('stays')
      .deleteOne({ _id: 0 } as Document);
  });

  it('reaches canCommit without ever pausing, commits, and the destination equals the source', async () => {
    const ready = await ferry.waitForProgress((p) => notPaused(p).canCommit === true, 180_000);
    assert.deepEqual(ready.warnings, []);
    const committed = await ferry.post('commit', {});
    assert.equal(committed.status, 200, JSON.stringify(committed.body));
    await ferry.waitForProgress((p) => notPaused(p).state === 'COMMITTED', 120_000);
    assert.ok(samples.every((p) => p.state !== 'PAUSED'));

    const differences = await clusters.differences([{ database: DB }], []);
    assert.deepEqual(differences, []);
    const names = (await clusters.destination.db(DB).listCollections({}, { nameOnly: true }).toArray()).map((c) => c.name).sort();
    assert.deepEqual(names, ['renamed', 'stays']);
    assert.equal(await clusters.destination.db(DB).collection('renamed').countDocuments(), DOCUMENTS + 1);
  });
});
