// What the verifier says about a difference, and what it expects the destination to hold: a
// document difference explained by its first differing field (value, type, order, presence); the
// destination's indexes and options in their temporary form during the sync and the source's
// after commit, with what `buildIndexes` leaves out not expected; definitions equal when only
// numeric types or field order (where it means nothing) differ. A definition difference counts
// only when a settled second check finds it again, the same.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { Double, Int32, Long, serialize, type Document } from 'bson';
import { findId } from '../../src/bson/index.js';
import type { CollectionEntry } from '../../src/cluster/commands.js';
import type { StartRequest } from '../../src/domain/start-request.js';
import { packElement, packValue } from '../../src/meta/store.js';
import { expectedIndexes, expectedOptions, sameDefinition, type CatalogDifference } from '../../src/verify/catalog-check.js';
import { settleDefinitions } from '../../src/verify/catalog-rechecks.js';
import { describeDocumentDifference } from '../../src/verify/difference.js';
import { idValue } from './bson-arbitraries.js';

const bytes = (doc: Document) => new Uint8Array(serialize(doc));

describe('a document difference in words', () => {
  it('names the kind and the first field that differs', () => {
    const source = bytes({ _id: 1, a: new Int32(1), b: 'x' });
    assert.deepEqual(describeDocumentDifference(source, undefined), { kind: 'missing', detail: 'the destination lacks this document' });
    assert.equal(describeDocumentDifference(undefined, source).kind, 'extra');
    assert.match(describeDocumentDifference(source, bytes({ _id: 1, a: new Int32(2), b: 'x' })).detail, /^field "a" differs$/);
    assert.match(
      describeDocumentDifference(source, bytes({ _id: 1, a: new Double(1), b: 'x' })).detail,
      /"a" is int32 on the source, double on the destination/,
    );
    assert.match(describeDocumentDifference(source, bytes({ _id: 1, b: 'x', a: new Int32(1) })).detail, /another order/);
    assert.match(describeDocumentDifference(source, bytes({ _id: 1, a: new Int32(1) })).detail, /field "b" missing on the destination/);
    assert.match(
      describeDocumentDifference(source, bytes({ _id: 1, a: new Int32(1), b: 'x', c: 0 })).detail,
      /"c" only on the destination/,
    );
    assert.equal(describeDocumentDifference(source, bytes({ _id: 1, a: new Int32(1), b: 'x' })).kind, 'different');
  });
});

describe('packing an _id from its bytes', () => {
  it('gives what packValue gives for the decoded value, for every _id (property)', () => {
    fc.assert(
      fc.property(idValue, (id) => {
        const doc = bytes({ _id: id, other: 1 });
        assert.equal(packElement(doc, findId(doc)), packValue(id));
      }),
    );
  });
});

const request = (buildIndexes: StartRequest['buildIndexes']) => ({ buildIndexes }) as StartRequest;

describe('what the destination should hold', () => {
  const source = [
    { v: 2, key: { _id: 1 }, name: '_id_' },
    { v: 2, key: { email: 1 }, name: 'email_1', unique: true },
    { v: 2, key: { at: 1 }, name: 'at_1', expireAfterSeconds: 3600 },
    { v: 2, key: { h: 'hashed' }, name: 'h_hashed', hidden: true },
  ];

  it('indexes: the temporary form during the sync, the source’s after commit', () => {
    const temporary = expectedIndexes(source, {}, request('afterDataCopy'), 'temporary');
    assert.deepEqual([...temporary.keys()], ['_id_', 'email_1', 'at_1', 'h_hashed']);
    assert.equal(temporary.get('email_1')!.unique, undefined);
    assert.equal(temporary.get('at_1')!.expireAfterSeconds, 2147483647);
    assert.equal(temporary.get('h_hashed')!.hidden, undefined);
    const final = expectedIndexes(source, {}, request('afterDataCopy'), 'final');
    assert.equal(final.get('email_1')!.unique, true);
    assert.equal(final.get('at_1')!.expireAfterSeconds, 3600);
    assert.equal(final.get('h_hashed')!.v, undefined, 'the version is not compared');
  });

  it('indexes buildIndexes leaves out are not expected', () => {
    assert.deepEqual([...expectedIndexes(source, {}, request('never'), 'final').keys()], ['_id_']);
    assert.deepEqual([...expectedIndexes(source, {}, request('excludeHashed'), 'final').keys()], ['_id_', 'email_1', 'at_1']);
  });

  it('a capped collection at the largest size during the sync, its own after commit', () => {
    const entry = {
      name: 'log',
      type: 'collection',
      options: { capped: true, size: new Int32(4096), max: new Int32(10) },
    } as CollectionEntry;
    const temporary = expectedOptions(entry, 'temporary');
    assert.equal(temporary.size, 1024 ** 5);
    assert.equal(temporary.max, undefined);
    assert.deepEqual(expectedOptions(entry, 'final'), entry.options);
  });

  it('a clustered collection’s TTL, shown on its _id index, is off during the sync and back after commit', () => {
    const clustered = [{ v: 2, key: { _id: 1 }, name: '_id_', unique: true, clustered: true, expireAfterSeconds: 3600 }];
    const options = { clusteredIndex: { key: { _id: 1 }, unique: true, v: 2 }, expireAfterSeconds: 3600 };
    assert.equal(expectedIndexes(clustered, options, request('afterDataCopy'), 'temporary').get('_id_')!.expireAfterSeconds, undefined);
    assert.equal(expectedIndexes(clustered, options, request('afterDataCopy'), 'final').get('_id_')!.expireAfterSeconds, 3600);
    assert.equal(
      expectedOptions({ name: 'events', type: 'collection', options } as CollectionEntry, 'temporary').expireAfterSeconds,
      undefined,
    );
  });

  it('a capped collection without a limit is one, however mongod lists "no limit"', () => {
    const wanted = { capped: true, size: 1024 ** 5 };
    for (const max of [0, -1, 2147483647]) assert.ok(sameDefinition(wanted, { ...wanted, max: new Int32(max) }), `max ${max}`);
    assert.ok(!sameDefinition(wanted, { ...wanted, max: new Int32(10) }), 'a limit is a difference');
    assert.ok(!sameDefinition({ ...wanted, max: 10 }, { ...wanted, max: new Int32(2147483647) }), 'and so is its loss');
  });

  it('definitions are equal whatever the numeric type or the order of their fields, but not of an index key', () => {
    assert.ok(sameDefinition({ capped: true, size: new Int32(4096) }, { size: Long.fromNumber(4096), capped: true }));
    assert.ok(
      sameDefinition({ key: { a: 1 }, collation: { locale: 'simple' } }, { key: { a: 1 } }),
      'the simple collation is no collation',
    );
    assert.ok(!sameDefinition({ key: { a: 1, b: 1 } }, { key: { b: 1, a: 1 } }), 'key order is the index');
    assert.ok(!sameDefinition({ validationLevel: 'strict' }, { validationLevel: 'moderate' }));
    assert.ok(!sameDefinition({ pipeline: [{ $match: {} }, { $limit: 1 }] }, { pipeline: [{ $limit: 1 }, { $match: {} }] }));
  });
});

describe('confirming a definition difference', () => {
  const option = (detail: string): CatalogDifference => ({ ns: 'd.c', subject: 'options', kind: 'option', detail });
  const index: CatalogDifference = { ns: 'd.c', subject: 'index:a_1', kind: 'index', detail: 'index "a_1" missing on the destination' };
  const keys = (found: CatalogDifference[]) => found.map((d) => `${d.subject}|${d.detail}`);

  it('the first check confirms nothing: what it finds waits', () => {
    assert.deepEqual(settleDefinitions(undefined, [index], true), { confirmed: [], unconfirmed: [index] });
  });

  it('a settled second check confirms what it finds again, the same; what changed waits again', () => {
    const waiting = { ns: 'd.c', differences: [index, option('expected {"validationAction":"warn"}, the destination has {}')] };
    const moved = option('expected {"validationAction":"error"}, the destination has {"validationAction":"warn"}');
    const { confirmed, unconfirmed } = settleDefinitions(waiting, [index, moved], true);
    assert.deepEqual(keys(confirmed), keys([index]));
    assert.deepEqual(keys(unconfirmed), keys([moved]), 'the source changed again meanwhile: not confirmed');
  });

  it('a check that is not settled (events not applied through the first one, streams behind, DDL waiting) confirms nothing', () => {
    const waiting = { ns: 'd.c', differences: [index] };
    assert.deepEqual(settleDefinitions(waiting, [index], false), { confirmed: [], unconfirmed: [index] });
  });

  it('what a second check no longer finds is neither confirmed nor kept', () => {
    assert.deepEqual(settleDefinitions({ ns: 'd.c', differences: [index] }, [], true), { confirmed: [], unconfirmed: [] });
  });
});
