/**
 * Many small collections: planning creates, measures and records them a chunk at a time, several
 * at once. A Ferry killed (SIGKILL) while planning them is started again: every collection is
 * planned exactly once (no partition recorded twice, none lost to a half-written chunk), and the
 * destination ends equal to the source.
 */
import { it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { RUN, useClusterPair } from './copy-fixtures.js';
import { copyFinished, startFerry } from './ferry-process.js';
import { METADATA_DATABASE } from '../../src/domain/namespaces.js';

const clusters = useClusterPair();
const COLLECTIONS = 1200;

it('a SIGKILL while planning 1,200 collections: after a restart each is planned once and copied', async () => {
  const db = `many_${RUN}`;
  const source = clusters.source.db(db);
  let next = 0;
  const lane = async () => {
    for (let i = next++; i < COLLECTIONS; i = next++)
      await source.collection<{ _id: number; n: number }>(`c${i}`).insertOne({ _id: i, n: i });
  };
  await Promise.all(Array.from({ length: 16 }, lane));

  const instance = `many-${RUN}`;
  const logDir = mkdtempSync(join(tmpdir(), 'ferry-many-'));
  const args = ['--cluster0', clusters.pair.cluster0, '--cluster1', clusters.pair.cluster1, '--id', instance];
  const first = await startFerry(args, {}, logDir);
  const started = await first.post('start', { source: 'cluster0', destination: 'cluster1', includeNamespaces: [{ database: db }] });
  assert.equal(started.status, 200, JSON.stringify(started.body));
  const records = clusters.destination.db(METADATA_DATABASE).collection('namespaces');
  // Kill once planning has recorded some of the collections but not all.
  for (;;) {
    const created = await records.countDocuments({ instance, created: true });
    if (created > 0) break;
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
  first.child.kill('SIGKILL');
  await first.exit;
  const partitionedAtKill = await records.countDocuments({ instance, partitioned: true });
  assert.ok(partitionedAtKill < COLLECTIONS, 'planning was interrupted before it finished');

  const second = await startFerry(args, {}, logDir);
  try {
    assert.equal((await second.progress()).state, 'RUNNING', 'the restarted Ferry continues the sync by itself');
    await second.waitForProgress(copyFinished, 300_000);
  } finally {
    assert.equal(await second.stop(), 0);
  }

  const partitions = await clusters.destination
    .db(METADATA_DATABASE)
    .collection('partitions')
    .aggregate([{ $match: { instance } }, { $group: { _id: '$_id.ns', n: { $sum: 1 }, docs: { $sum: '$copiedDocs' } } }])
    .toArray();
  assert.equal(partitions.length, COLLECTIONS, 'every collection planned');
  assert.deepEqual(
    partitions.filter((p) => p.n !== 1 || p.docs !== 1),
    [],
    'each collection planned once and its document copied once',
  );
  const differences = await clusters.differences([{ database: db }], undefined, true);
  assert.deepEqual(differences, []);
});
