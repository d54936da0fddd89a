/**
 * `collMod` events (`modify`) and a clustered or time-series collection's collection-level TTL:
 * the destination has none during the sync, so a change is recorded for commit, never applied.
 * Tested without a server: the destination records the commands it receives, the namespace
 * records live in a map.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Int32, Long, type Document } from 'bson';
import type { MongoClient } from 'mongodb';
import { DdlApplier } from '../../src/cea/ddl.js';
import type { Logger } from '../../src/log/logger.js';
import { type NamespaceRecord, type NamespaceRecords } from '../../src/meta/namespaces.js';
import type { NamespaceSelector } from '../../src/plan/namespaces.js';
import { START_REQUEST } from '../api/app.js';
import { namespaceOf } from '../../src/domain/namespaces.js';
import { namespaceRecord } from '../../src/plan/catalog.js';

const request = START_REQUEST;

const clusteredIndex = { v: new Int32(2), key: { _id: new Int32(1) }, name: '_id_', unique: true };

/** A DDL applier over one recorded collection; `commands` collects what the destination receives. */
function setup(options: Document) {
  const commands: Document[] = [];
  const stored = new Map<string, NamespaceRecord>();
  const record = namespaceRecord({ db: 'app', coll: 'sessions', type: 'collection', options, indexes: [] }, 'afterCopy', request);
  stored.set(namespaceOf(record), { ...record, created: true, partitioned: true, indexesBuilt: true });
  const records = {
    get: async (ns: { db: string; coll: string }) => stored.get(namespaceOf(ns)),
    put: async (next: NamespaceRecord) => void stored.set(namespaceOf(next), next),
  } as unknown as NamespaceRecords;
  const destination = {
    db: () => ({ command: async (command: Document) => (commands.push(command), { ok: 1 }) }),
  } as unknown as MongoClient;
  const applier = new DdlApplier({
    source: {} as MongoClient,
    destination,
    records,
    request,
    selector: {} as NamespaceSelector,
    logger: {} as Logger,
  });
  const modify = (operationDescription: Document) =>
    applier.apply({ operationType: 'modify', ns: { db: 'app', coll: 'sessions' }, operationDescription }, false);
  return { commands, modify, current: () => stored.get('app.sessions')! };
}

describe('collMod of a collection-level TTL during the sync', () => {
  it('a changed expireAfterSeconds is recorded for commit and not applied to the destination', async () => {
    const { commands, modify, current } = setup({ clusteredIndex, expireAfterSeconds: new Long(600) });
    await modify({ expireAfterSeconds: new Long(7200) });
    assert.deepEqual(commands, []);
    assert.equal(current().expireAfterSeconds, 7200);
    assert.deepEqual(current().sourceOptions, { clusteredIndex, expireAfterSeconds: new Long(7200) });
    assert.deepEqual(current().createOptions, { clusteredIndex });
  });

  it('one added to a time-series collection without a TTL is recorded, not applied', async () => {
    const timeseries = { timeField: 't', granularity: 'seconds' };
    const { commands, modify, current } = setup({ timeseries });
    assert.equal(current().expireAfterSeconds, undefined);
    await modify({ expireAfterSeconds: new Long(86_400) });
    assert.deepEqual(commands, []);
    assert.equal(current().expireAfterSeconds, 86_400);
  });

  it('one turned off on the source leaves nothing to restore', async () => {
    const { commands, modify, current } = setup({ clusteredIndex, expireAfterSeconds: new Long(600) });
    await modify({ expireAfterSeconds: 'off' });
    assert.deepEqual(commands, []);
    assert.equal('expireAfterSeconds' in current(), false);
    assert.deepEqual(current().sourceOptions, { clusteredIndex });
  });

  it('other options of the same collMod still reach the destination', async () => {
    const { commands, modify, current } = setup({ clusteredIndex, expireAfterSeconds: new Long(600) });
    await modify({ validationLevel: 'moderate', expireAfterSeconds: new Long(60) });
    assert.deepEqual(
      commands.map(({ writeConcern: _w, ...command }) => command),
      [{ collMod: 'sessions', validationLevel: 'moderate' }],
    );
    assert.equal(current().expireAfterSeconds, 60);
  });
});
