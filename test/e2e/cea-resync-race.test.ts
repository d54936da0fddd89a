/**
 * DDL racing Ferry's own re-read of a collection (issue 18, defect 7). A rename into the synced
 * namespaces has Ferry read the renamed collection whole from the source (src/cea/resync.ts);
 * while it reads, the source renames that collection again, drops and re-creates it, or renames
 * it away and creates a new one under its name. The read's cursor is killed (QueryPlanKilled) or
 * reads a collection that is no longer the one the event named; either way Ferry must follow the
 * DDL that comes next in the stream, not pause, and the committed destination must equal the
 * source. The race is made certain with a `failCommand` fail point that holds the re-read's
 * `getMore` until the test has made its DDL.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { Document } from 'bson';
import type { MongoClient } from 'mongodb';
import { RUN, useClusterPair, waitForMarker } from './copy-fixtures.js';
import { startFerry, type FerryProcess } from './ferry-process.js';

const clusters = useClusterPair({ enableTestCommands: true });

/** More documents than one batch of the re-read (1000), so that it needs a getMore. */
const DOCUMENTS = 2500;

function docs(tag: string, count = DOCUMENTS): Document[] {
  return Array.from({ length: count }, (_, i) => ({ _id: i, tag, pad: 'p'.repeat(50) }));
}

/** Holds the next `getMore` on `ns` of the source until `race` has run; then lets it fail or go on. */
async function duringReRead(source: MongoClient, ns: string, rename: () => Promise<void>, race: () => Promise<void>): Promise<void> {
  const admin = source.db('admin');
  const { count } = await admin.command({
    configureFailPoint: 'failCommand',
    mode: { times: 1 },
    data: { failCommands: ['getMore'], namespace: ns, blockConnection: true, blockTimeMS: 1500 },
  });
  await rename();
  await admin.command({ waitForFailPoint: 'failCommand', timesEntered: Number(count) + 1, maxTimeMS: 60_000 });
  await race();
}

/** Waits until application has the marker written now, the sync running all along. */
async function caughtUp(ferry: FerryProcess, marker: Document, db: string): Promise<void> {
  await waitForMarker(clusters, db, marker, {
    collection: 'keep',
    check: async () => {
      const progress = await ferry.progress();
      assert.equal(progress.state, 'RUNNING', `the sync keeps running: ${JSON.stringify(progress.warnings)}`);
    },
  });
}

describe('DDL racing a re-read of a collection', () => {
  it('a rename chain, a drop and re-create, and a rename away with a new collection under the name are followed', async (t) => {
    const db = `resync_race_${RUN}`;
    const source = clusters.source;
    try {
      await source.db('admin').command({ configureFailPoint: 'failCommand', mode: 'off' });
    } catch {
      t.skip('the source refuses configureFailPoint (a deployment without enableTestCommands)');
      return;
    }
    for (const name of ['X', 'Y', 'Z']) await source.db(db).collection(name).insertMany(docs(name));
    await source
      .db(db)
      .collection('keep')
      .insertOne({ _id: 'first' } as Document);
    const filter = [{ database: db, collections: ['keep', 'B', 'C', 'D', 'E', 'F'] }];
    const ferry = await startFerry(['--cluster0', clusters.pair.cluster0, '--cluster1', clusters.pair.cluster1, '--id', `race-${RUN}`]);
    try {
      const started = await ferry.post('start', { source: 'cluster0', destination: 'cluster1', includeNamespaces: filter });
      assert.equal(started.status, 200, JSON.stringify(started.body));
      await ferry.waitForProgress((p) => p.canCommit === true, 60_000);
      const rename = (from: string, to: string) => () =>
        source
          .db('admin')
          .command({ renameCollection: `${db}.${from}`, to: `${db}.${to}` })
          .then(() => undefined);

      // X (not synced) → B: B is read whole; meanwhile B → C.
      await duringReRead(source, `${db}.B`, rename('X', 'B'), rename('B', 'C'));
      await caughtUp(ferry, { _id: 'after-chain' }, db);

      // Y → D: D is read whole; meanwhile D is dropped and created again with other documents.
      await duringReRead(source, `${db}.D`, rename('Y', 'D'), async () => {
        await source.db(db).collection('D').drop();
        await source.db(db).collection('D').insertMany(docs('new D', 30));
      });
      await caughtUp(ferry, { _id: 'after-recreate' }, db);

      // Z → E: E is read whole; meanwhile E → F and a new E.
      await duringReRead(source, `${db}.E`, rename('Z', 'E'), async () => {
        await rename('E', 'F')();
        await source.db(db).collection('E').insertMany(docs('new E', 40));
      });
      await caughtUp(ferry, { _id: 'after-replace' }, db);

      await ferry.waitForProgress((p) => p.canCommit === true, 60_000);
      assert.equal((await ferry.post('commit', {})).status, 200);
      await ferry.waitForProgress((p) => p.state === 'COMMITTED', 60_000);
      assert.deepEqual(await clusters.differences(filter), []);
      assert.equal(await clusters.destination.db(db).collection('C').countDocuments({ tag: 'X' }), DOCUMENTS);
      assert.equal(await clusters.destination.db(db).collection('F').countDocuments({ tag: 'Z' }), DOCUMENTS);
    } finally {
      await source
        .db('admin')
        .command({ configureFailPoint: 'failCommand', mode: 'off' })
        .catch(() => undefined);
      await ferry.stop();
    }
  });
});
