import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Binary, Double, Int32, Long, ObjectId, serialize, Timestamp } from 'bson';
import { readChangeEvent, readId } from '../../src/bson/index.js';
import { MissingBsonField, UnexpectedBsonType } from '../../src/errors/errors.js';

describe('readId', () => {
  it('returns _id with its BSON type kept', () => {
    for (const id of [new Int32(7), Long.fromNumber(7), new Double(7), 'seven', new ObjectId(), { a: 1 }]) {
      const doc = serialize({ _id: id, body: 'x'.repeat(100) });
      const read = readId(doc);
      assert.deepStrictEqual(read, typeof id === 'object' && !('_bsontype' in id) ? { a: new Int32(1) } : id);
    }
  });

  it('finds _id wherever it is and inside a batch buffer', () => {
    const first = serialize({ a: 1, _id: 'one' });
    const second = serialize({ b: [1, 2], c: { _id: 'nested' }, _id: 'two' });
    const batch = new Uint8Array(first.length + second.length);
    batch.set(first);
    batch.set(second, first.length);
    assert.equal(readId(batch), 'one');
    assert.equal(readId(batch, first.length), 'two');
  });

  it('throws MissingBsonField when there is no top-level _id', () => {
    assert.throws(() => readId(serialize({ c: { _id: 1 } })), MissingBsonField);
  });
});

describe('readChangeEvent', () => {
  const token = { _data: '8263A1B2C3000000012B022C0100296E5A1004' };
  const clusterTime = new Timestamp({ t: 1_700_000_000, i: 3 });

  it('reads the routing fields of an update event without touching the rest', () => {
    const event = serialize({
      _id: token,
      operationType: 'update',
      clusterTime,
      wallTime: new Date(),
      ns: { db: 'shop', coll: 'orders' },
      documentKey: { _id: new Int32(42), region: 'eu' },
      updateDescription: { updatedFields: { total: 10 }, removedFields: [], truncatedArrays: [] },
    });
    const fields = readChangeEvent(event);
    assert.deepStrictEqual(fields.resumeToken, token);
    assert.deepEqual(Buffer.from(fields.resumeTokenBytes), Buffer.from(serialize(token)));
    assert.equal(fields.operationType, 'update');
    assert.deepEqual(fields.ns, { db: 'shop', coll: 'orders' });
    assert.deepStrictEqual(fields.documentKey, { _id: new Int32(42), region: 'eu' });
    assert.deepStrictEqual(fields.clusterTime, clusterTime);
    assert.equal(fields.to, undefined);
    // The key's raw bytes are the serialized documentKey itself.
    assert.deepEqual(Buffer.from(fields.documentKeyBytes!), Buffer.from(serialize({ _id: new Int32(42), region: 'eu' })));
  });

  it('gives equal key bytes for equal keys and different bytes when only the type differs', () => {
    const eventFor = (id: unknown) =>
      serialize({ _id: token, operationType: 'delete', ns: { db: 'a', coll: 'b' }, documentKey: { _id: id } });
    const a = readChangeEvent(eventFor(new Int32(1))).documentKeyBytes!;
    const b = readChangeEvent(eventFor(new Int32(1))).documentKeyBytes!;
    const c = readChangeEvent(eventFor(Long.fromNumber(1))).documentKeyBytes!;
    assert.deepEqual(Buffer.from(a), Buffer.from(b));
    assert.notDeepEqual(Buffer.from(a), Buffer.from(c));
  });

  it('reads rename targets and database-level namespaces', () => {
    const rename = readChangeEvent(
      serialize({ _id: token, operationType: 'rename', clusterTime, ns: { db: 'a', coll: 'old' }, to: { db: 'b', coll: 'new' } }),
    );
    assert.deepEqual(rename.to, { db: 'b', coll: 'new' });
    const dropDatabase = readChangeEvent(serialize({ _id: token, operationType: 'dropDatabase', ns: { db: 'gone' } }));
    assert.deepEqual(dropDatabase.ns, { db: 'gone' });
    assert.equal(dropDatabase.documentKey, undefined);
  });

  it('rejects events without _id or operationType, or with wrongly typed fields', () => {
    assert.throws(() => readChangeEvent(serialize({ operationType: 'insert' })), MissingBsonField);
    assert.throws(() => readChangeEvent(serialize({ _id: token })), /operationType/);
    assert.throws(() => readChangeEvent(serialize({ _id: token, operationType: 5 })), UnexpectedBsonType);
    assert.throws(
      () => readChangeEvent(serialize({ _id: token, operationType: 'insert', clusterTime: new Date() })),
      /clusterTime.*timestamp/,
    );
    assert.throws(
      () => readChangeEvent(serialize({ _id: token, operationType: 'insert', documentKey: new Binary(Buffer.from('x')) })),
      /documentKey/,
    );
    assert.throws(() => readChangeEvent(serialize({ _id: token, operationType: 'insert', ns: { coll: 'x' } })), /ns\.db/);
    assert.throws(() => readChangeEvent(serialize({ _id: token, operationType: 'insert', ns: { db: 'a', coll: 7 } })), /ns\.coll.*string/);
  });
});
