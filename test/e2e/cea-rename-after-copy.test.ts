/**
 * An update followed, before the change stream reads it, by a rename of its collection, after
 * the initial copy is complete: the update's `updateLookup` finds nothing (the collection is no
 * longer under the event's name), so the document must be found again some other way, or the
 * destination keeps the document as it was before the update. The sync is paused while the
 * source makes both writes, so the stream reads the update only after the rename; then, once
 * application has caught up, the destination's document must equal the source's. Renames across
 * databases (the collection gets a new UUID, and whether the filter selects the temporary
 * collection mongod copies through or only the two names), within a database, and away and back.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { Document } from 'bson';
import { RUN, useClusterPair } from './copy-fixtures.js';
import { commitWhenReady, startFerry } from './ferry-process.js';
import type { NamespaceFilter } from '../../src/domain/start-request.js';

const clusters = useClusterPair();
let run = 0;

interface Scenario {
  /** The filter, given the two databases. */
  filter: (db1: string, db2: string) => NamespaceFilter[];
  /** Source writes while the sync is paused, given both databases; the update comes first. */
  renames: (db1: string, db2: string) => [from: string, to: string][];
  /** Where the document lives at the end. */
  final: (db1: string, db2: string) => [db: string, coll: string];
}

async function updateThenRename(scenario: Scenario): Promise<void> {
  run++;
  const db1 = `ren_${RUN}_${run}_a`;
  const db2 = `ren_${RUN}_${run}_b`;
  const source = clusters.source;
  await source
    .db(db1)
    .collection('A')
    .insertMany(Array.from({ length: 20 }, (_, k) => ({ _id: k, n: k, state: 'before' })) as Document[]);
  await source
    .db(db2)
    .collection('other')
    .insertOne({ _id: 1 } as Document);
  const filter = scenario.filter(db1, db2);
  await clusters.emptyDestination();
  const ferry = await startFerry([
    '--cluster0',
    clusters.pair.cluster0,
    '--cluster1',
    clusters.pair.cluster1,
    '--id',
    `ren-${RUN}-${run}`,
    '--applyLanes',
    '2',
  ]);
  try {
    const started = await ferry.post('start', { source: 'cluster0', destination: 'cluster1', includeNamespaces: filter });
    assert.equal(started.status, 200, JSON.stringify(started.body));
    await ferry.waitForProgress((p) => p.canCommit === true, 60_000);
    // Applied after the copy: not a rename that may have raced it.
    await source
      .db(db1)
      .collection('A')
      .updateOne({ _id: 0 } as Document, { $set: { state: 'warm-up' } });
    await ferry.waitForProgress((p) => p.canCommit === true && p.lagTimeSeconds === 0, 60_000);

    const paused = await ferry.post('pause', {});
    assert.equal(paused.status, 200, JSON.stringify(paused.body));
    await source
      .db(db1)
      .collection('A')
      .updateOne({ _id: 7 } as Document, { $set: { state: 'after' } });
    for (const [from, to] of scenario.renames(db1, db2)) {
      await source.db('admin').command({ renameCollection: from, to });
    }
    assert.equal((await ferry.post('resume', {})).status, 200);

    // Something after the renames, so that reaching it means the renames were applied.
    await source
      .db(db2)
      .collection('other')
      .insertOne({ _id: 2 } as Document);
    await ferry.waitForProgress((p) => p.canCommit === true && p.lagTimeSeconds === 0, 60_000);
    const deadline = Date.now() + 30_000;
    while ((await clusters.destination.db(db2).collection('other').countDocuments()) < 2 && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    const [db, coll] = scenario.final(db1, db2);
    const expected = await source
      .db(db)
      .collection(coll)
      .findOne({ _id: 7 } as Document);
    assert.equal(expected?.state, 'after');
    const actual = await clusters.destination
      .db(db)
      .collection(coll)
      .findOne({ _id: 7 } as Document);
    assert.deepEqual(actual, expected, `the destination's ${db}.${coll} document _id 7 equals the source's`);

    // The verifier scans a renamed collection again, and canCommit waits for it.
    assert.equal((await commitWhenReady(ferry)).status, 200);
    await ferry.waitForProgress((p) => p.state === 'COMMITTED', 60_000);
    const differences = await clusters.differences(filter);
    assert.deepEqual(differences, []);
  } finally {
    await ferry.stop();
  }
}

describe('an update whose collection is renamed before the stream reads it, after the copy', () => {
  it('across databases, both databases selected (the temporary collection mongod copies through too)', () =>
    updateThenRename({
      filter: (db1, db2) => [{ database: db1 }, { database: db2 }],
      renames: (db1, db2) => [[`${db1}.A`, `${db2}.B`]],
      final: (_db1, db2) => [db2, 'B'],
    }));

  it('across databases, only the two collections selected', () =>
    updateThenRename({
      filter: (db1, db2) => [
        { database: db1, collections: ['A'] },
        { database: db2, collections: ['B', 'other'] },
      ],
      renames: (db1, db2) => [[`${db1}.A`, `${db2}.B`]],
      final: (_db1, db2) => [db2, 'B'],
    }));

  it('within a database, then across databases', () =>
    updateThenRename({
      filter: (db1, db2) => [{ database: db1 }, { database: db2 }],
      renames: (db1, db2) => [
        [`${db1}.A`, `${db1}.B`],
        [`${db1}.B`, `${db2}.C`],
      ],
      final: (_db1, db2) => [db2, 'C'],
    }));

  it('within a database', () =>
    updateThenRename({
      filter: (db1, db2) => [{ database: db1 }, { database: db2 }],
      renames: (db1) => [[`${db1}.A`, `${db1}.B`]],
      final: (db1) => [db1, 'B'],
    }));

  it('across databases and back', () =>
    updateThenRename({
      filter: (db1, db2) => [{ database: db1 }, { database: db2 }],
      renames: (db1, db2) => [
        [`${db1}.A`, `${db2}.B`],
        [`${db2}.B`, `${db1}.A`],
      ],
      final: (db1) => [db1, 'A'],
    }));
});
