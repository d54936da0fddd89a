import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Int32, Long } from 'bson';
import type { Document } from 'bson';
import type { MongoClient } from 'mongodb';
import {
  buildSteps,
  cappedSteps,
  collectionTtlSteps,
  describeFailure,
  indexSteps,
  planRestore,
  runRestore,
} from '../../src/commit/restore.js';
import { temporaryIndex } from '../../src/plan/indexes.js';
import { namespaceRecord } from '../../src/plan/catalog.js';

const ns = { db: 'shop', coll: 'orders' };

function stepsFor(source: Record<string, unknown>) {
  return indexSteps(ns, source, temporaryIndex(source).temporary).map((step) => [step.what, step.change]);
}

/** A cluster holding one collection with `options` and only `_id_`; `commands` collects what it receives. */
function fakeCluster(options: Document) {
  const commands: Document[] = [];
  const client = {
    db: () => ({
      collection: () => ({ listIndexes: () => ({ toArray: async () => [{ v: 2, key: { _id: 1 }, name: '_id_' }] }) }),
      listCollections: () => ({ toArray: async () => [{ name: ns.coll, type: 'collection', options }] }),
      command: async (command: Document) => (commands.push(command), { ok: 1 }),
    }),
  } as unknown as MongoClient;
  return { client, commands };
}

describe('commit restore steps', () => {
  it('turn a non-unique index unique through prepareUnique first', () => {
    assert.deepEqual(stepsFor({ v: 2, key: { email: 1 }, name: 'email_1', unique: true }), [
      ['prepareUnique', { index: { name: 'email_1', prepareUnique: true } }],
      ['unique', { index: { name: 'email_1', unique: true } }],
    ]);
  });

  it('put back prepareUnique alone, TTL values and hidden flags', () => {
    assert.deepEqual(stepsFor({ key: { a: 1 }, name: 'a_1', prepareUnique: true }), [
      ['prepareUnique', { index: { name: 'a_1', prepareUnique: true } }],
    ]);
    assert.deepEqual(stepsFor({ key: { at: 1 }, name: 'at_1', expireAfterSeconds: new Int32(3600) }), [
      ['expireAfterSeconds', { index: { name: 'at_1', expireAfterSeconds: new Int32(3600) } }],
    ]);
    assert.deepEqual(stepsFor({ key: { l: 1 }, name: 'l_1', hidden: true }), [['hidden', { index: { name: 'l_1', hidden: true } }]]);
  });

  it('need nothing for an index already in its source form', () => {
    assert.deepEqual(stepsFor({ key: { a: 1 }, name: 'a_1', partialFilterExpression: { a: { $gt: 1 } } }), []);
    const unique = { key: { e: 1 }, name: 'e_1', unique: true };
    assert.deepEqual(indexSteps(ns, unique, unique), []);
  });

  it('give a capped collection its size and document limit back, and nothing when it has them', () => {
    const source = { capped: true, size: 65536, max: 20 };
    assert.deepEqual(
      cappedSteps(ns, source, { capped: true, size: 1024 ** 5 }).map((s) => s.change),
      [{ cappedSize: 65536, cappedMax: 20 }],
    );
    assert.deepEqual(cappedSteps(ns, source, source), []);
    assert.deepEqual(cappedSteps(ns, { capped: true, size: 4096, max: 0 }, { capped: true, size: 4096 }), [], 'max 0 means none');
    // 2^31-1 is what mongod lists for "no limit" given as 0, and a limit a user can set: the source's value either way.
    assert.deepEqual(
      cappedSteps(ns, { capped: true, size: 2 ** 31, max: 2147483647 }, { capped: true, size: 1024 ** 5 }).map((s) => s.change),
      [{ cappedSize: 2 ** 31, cappedMax: 2147483647 }],
    );
    assert.deepEqual(cappedSteps(ns, {}, {}), []);
  });

  it('give a clustered or time-series collection its collection-level TTL back, and nothing when it has it', () => {
    const clusteredIndex = { key: { _id: 1 }, unique: true };
    const source = { clusteredIndex, expireAfterSeconds: new Long(3600) };
    const steps = collectionTtlSteps(ns, source, { clusteredIndex });
    assert.deepEqual(
      steps.map((s) => [s.what, s.change, s.index]),
      [['collection expireAfterSeconds', { expireAfterSeconds: new Long(3600) }, undefined]],
    );
    assert.deepEqual(collectionTtlSteps(ns, source, { clusteredIndex, expireAfterSeconds: new Long(3600) }), []);
    const timeseries = { timeField: 't' };
    assert.deepEqual(
      collectionTtlSteps(ns, { timeseries, expireAfterSeconds: 60 }, { timeseries }).map((s) => s.change),
      [{ expireAfterSeconds: 60 }],
    );
    assert.deepEqual(
      collectionTtlSteps(ns, { timeseries }, { timeseries, expireAfterSeconds: 60 }).map((s) => s.change),
      [{ expireAfterSeconds: 'off' }],
      'turned off on the source',
    );
    assert.deepEqual(collectionTtlSteps(ns, {}, {}), []);
  });

  it("send the collMod that gives a clustered collection created without its TTL the source's back", async () => {
    const sourceOptions = { clusteredIndex: { v: 2, key: { _id: 1 }, name: '_id_', unique: true }, expireAfterSeconds: new Long(3600) };
    const record = namespaceRecord({ db: ns.db, coll: ns.coll, type: 'collection', options: sourceOptions, indexes: [] }, 'afterCopy', {
      source: 'cluster0',
      destination: 'cluster1',
      buildIndexes: 'afterDataCopy',
      reversible: false,
      enableUserWriteBlocking: 'destinationOnly',
      verification: { enabled: true },
    });
    const destination = fakeCluster(record.createOptions);
    const failures = await runRestore(destination.client, await planRestore(destination.client, [record]));
    assert.deepEqual(failures, []);
    assert.deepEqual(destination.commands, [{ collMod: 'orders', expireAfterSeconds: new Long(3600), writeConcern: { w: 'majority' } }]);
  });

  it('describe a refused collection-level TTL restore by namespace', () => {
    const [step] = collectionTtlSteps(ns, { clusteredIndex: {}, expireAfterSeconds: 60 }, { clusteredIndex: {} });
    const text = describeFailure({ step: step!, codeName: 'InvalidOptions', message: 'bad' });
    assert.equal(text, 'Commit could not restore collection expireAfterSeconds on shop.orders: InvalidOptions: bad');
  });

  it('describe a refused conversion by index and namespace, with what to do', () => {
    const [, unique] = indexSteps(ns, { key: { e: 1 }, name: 'e_1', unique: true }, { key: { e: 1 }, name: 'e_1' });
    const text = describeFailure({ step: unique!, codeName: 'CannotConvertIndexToUnique', message: 'Cannot convert the index to unique' });
    assert.match(text, /index "e_1" of shop\.orders/);
    assert.match(text, /CannotConvertIndexToUnique/);
    assert.match(text, /remove the duplicates/);
  });
});

describe('commit rebuilds', () => {
  const record = (indexes: object[]) =>
    namespaceRecord({ db: ns.db, coll: ns.coll, type: 'collection', options: {}, indexes: indexes as Document[] }, 'afterCopy', {
      source: 'cluster0',
      destination: 'cluster1',
      buildIndexes: 'afterDataCopy',
      reversible: false,
      enableUserWriteBlocking: 'destinationOnly',
      verification: { enabled: true },
    });

  it('convert the unique twin first, then build the distinguished one as the source has it', async () => {
    const planned = record([
      { key: { e: 1 }, name: 'e_unique', unique: true },
      { key: { e: 1 }, name: 'e_plain' },
    ]);
    const destinationIndexes = planned.indexes.map((plan) => plan.temporary);
    const commands: Document[] = [];
    const client = {
      db: () => ({
        collection: () => ({ listIndexes: () => ({ toArray: async () => destinationIndexes }) }),
        listCollections: () => ({ toArray: async () => [{ name: ns.coll, type: 'collection', options: {} }] }),
        command: async (command: Document) => (commands.push(command), { ok: 1 }),
      }),
    } as unknown as MongoClient;
    const steps = await planRestore(client, [planned]);
    assert.deepEqual(
      steps.map((step) => [step.what, step.index]),
      [
        ['prepareUnique', 'e_unique'],
        ['unique', 'e_unique'],
        ['index', 'e_plain'],
      ],
    );
    assert.deepEqual(await runRestore(client, steps), []);
    assert.deepEqual(
      commands.slice(-2).map(({ writeConcern: _w, ...command }) => command),
      [
        { dropIndexes: 'orders', index: 'e_plain' },
        { createIndexes: 'orders', indexes: [{ key: { e: 1 }, name: 'e_plain' }] },
      ],
    );
  });

  it('build nothing once the destination holds the source form, and nothing after a refused conversion', async () => {
    const planned = record([
      { key: { e: 1 }, name: 'e_unique', unique: true },
      { key: { e: 1 }, name: 'e_plain' },
    ]);
    const [unique, plain] = planned.indexes;
    assert.deepEqual(buildSteps(ns, plain!, plain!.original), []);
    assert.equal(buildSteps(ns, plain!, plain!.temporary).length, 1);
    assert.equal(buildSteps(ns, unique!, undefined).length, 1, 'an index the destination lacks is built');
    const commands: Document[] = [];
    const refusing = {
      db: () => ({
        command: async (command: Document) => {
          commands.push(command);
          if (command.collMod !== undefined) throw Object.assign(new Error('duplicates'), { codeName: 'CannotConvertIndexToUnique' });
          return { ok: 1 };
        },
      }),
    } as unknown as MongoClient;
    const steps = [...indexSteps(ns, unique!.original, unique!.temporary), ...buildSteps(ns, plain!, plain!.temporary)];
    const failures = await runRestore(refusing, steps);
    assert.deepEqual(
      failures.map((f) => f.step.what),
      ['prepareUnique'],
    );
    assert.equal(
      commands.some((command) => command.dropIndexes !== undefined),
      false,
      'the twin is not dropped while the unique one is not unique',
    );
  });
});
