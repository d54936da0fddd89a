import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Decimal128, deserialize, Double, Int32, Long, serialize, Timestamp, UUID, type Document } from 'bson';
import { readCrudEvent } from '../../src/cea/crud-event.js';
import { idKey, laneOf } from '../../src/cea/document-key.js';
import { concatDocuments } from '../../src/cea/raw-document.js';
import { readBatch } from '../../src/cea/apply-batch.js';
import { planWrites } from '../../src/cea/write-plan.js';
import { TYPE_FAITHFUL, findId } from '../../src/bson/index.js';

const uuid = new UUID();
let time = 1;

function event(operationType: string, id: unknown, fullDocument?: Document | null, coll = 'c'): Uint8Array {
  const doc: Document = {
    _id: { _data: `82${(time++).toString(16).padStart(16, '0')}` },
    operationType,
    clusterTime: new Timestamp({ t: 1, i: time }),
    collectionUUID: uuid,
  };
  if (fullDocument !== undefined) doc.fullDocument = fullDocument;
  doc.ns = { db: 'd', coll };
  doc.documentKey = { _id: id };
  return serialize(doc);
}

function keyOf(id: unknown): string {
  const doc = serialize({ _id: id });
  return idKey(doc, findId(doc));
}

const decode = (bytes: Uint8Array) => deserialize(bytes, TYPE_FAITHFUL);

describe('document keys', () => {
  it('are the same for every numeric type of one value, as the server matches _id', () => {
    const one = [new Int32(1), Long.fromNumber(1), new Double(1), Decimal128.fromString('1.000'), Decimal128.fromString('0.1E1')].map(
      keyOf,
    );
    assert.equal(new Set(one).size, 1, JSON.stringify(one));
    assert.equal(keyOf(new Double(-0)), keyOf(new Int32(0)));
    assert.equal(keyOf(new Double(0.5)), keyOf(Decimal128.fromString('5E-1')));
    assert.equal(keyOf({ a: new Int32(2), b: [new Double(3)] }), keyOf({ a: Long.fromNumber(2), b: [new Int32(3)] }));
  });

  it('differ for different values and types', () => {
    const keys = [new Int32(1), new Int32(2), '1', { a: 1 }, { b: 1 }, [1], new Double(1.5), Decimal128.fromString('1.05'), true, null].map(
      keyOf,
    );
    assert.equal(new Set(keys).size, keys.length, JSON.stringify(keys));
  });

  it('cannot be forged by strings or field names that hold the key punctuation', () => {
    const ids = [{ a: 'x,b=sy' }, { a: 'x', b: 'y' }, { 'a=sx,b': 'y' }, ['x,=sy'], ['x', 'y'], 'o{a=sx}', { a: 'x' }, 's1:x', 'x'];
    const keys = ids.map(keyOf);
    assert.equal(new Set(keys).size, keys.length, JSON.stringify(keys));
    const plan = planWrites(
      readBatch(concatDocuments([event('insert', ids[0], { _id: ids[0] }), event('insert', ids[1], { _id: ids[1] })])),
    );
    assert.equal(plan.coalesced, 0);
    assert.equal(plan.namespaces[0]!.upserts.length, 2, 'both documents are written');
  });

  it('send every event of one document to one lane, whatever its _id type', () => {
    const lanes = new Set([new Int32(7), Long.fromNumber(7), new Double(7)].map((id) => laneOf('d.c', keyOf(id), 8)));
    assert.equal(lanes.size, 1);
    const spread = new Set(Array.from({ length: 200 }, (_, i) => laneOf('d.c', keyOf(new Int32(i)), 8)));
    assert.equal(spread.size, 8, 'keys spread over every lane');
  });
});

describe('reading CRUD events', () => {
  it('reads the namespace, the _id element and the full document as bytes', () => {
    const read = readCrudEvent(event('replace', new Int32(5), { _id: new Int32(5), v: 'x' }));
    assert.equal(read.operationType, 'replace');
    assert.deepEqual([read.db, read.coll], ['d', 'c']);
    assert.deepEqual(decode(concatDocuments([Uint8Array.of(read.idElement.length + 5, 0, 0, 0), read.idElement, Uint8Array.of(0)])), {
      _id: new Int32(5),
    });
    assert.deepEqual(decode(read.fullDocument!), { _id: new Int32(5), v: 'x' });
    assert.equal(read.key, keyOf(5));
  });

  it('tells a null looked-up document from an absent one', () => {
    assert.equal(readCrudEvent(event('update', 1, null)).fullDocument, null);
    assert.equal(readCrudEvent(event('delete', 1)).fullDocument, undefined);
  });

  it('refuses an insert without its document', () => {
    assert.throws(() => readCrudEvent(event('insert', 1)), /fullDocument/);
  });
});

describe('planning the writes of a batch', () => {
  it('keeps only the last event of each document', () => {
    const events = readBatch(
      concatDocuments([
        event('insert', new Int32(1), { _id: new Int32(1), v: 1 }),
        event('update', new Int32(1), { _id: new Int32(1), v: 2 }),
        event('update', new Int32(1), { _id: new Int32(1), v: 3 }),
        event('insert', new Int32(2), { _id: new Int32(2), v: 1 }),
        event('delete', new Int32(2)),
        event('delete', new Int32(3)),
        event('insert', new Int32(3), { _id: new Int32(3), v: 9 }),
      ]),
    );
    const plan = planWrites(events);
    assert.equal(plan.events, 7);
    assert.equal(plan.coalesced, 4);
    const [writes] = plan.namespaces;
    assert.deepEqual(writes!.upserts.map(decode), [
      { q: { _id: new Int32(1) }, u: { _id: new Int32(1), v: new Int32(3) }, upsert: true },
      { q: { _id: new Int32(3) }, u: { _id: new Int32(3), v: new Int32(9) }, upsert: true },
    ]);
    assert.deepEqual(writes!.deletes.map(decode), [{ q: { _id: new Int32(2) }, limit: new Int32(1) }]);
    assert.equal(writes!.deletedIds.length, 1);
  });

  it('treats an int and a double _id of one value as one document', () => {
    const plan = planWrites(
      readBatch(concatDocuments([event('delete', new Int32(4)), event('insert', new Double(4), { _id: new Double(4) })])),
    );
    assert.equal(plan.coalesced, 1);
    assert.equal(plan.namespaces[0]!.deletes.length, 0);
    assert.equal(plan.namespaces[0]!.upserts.length, 1);
  });

  it('sets aside updates whose looked-up document was gone, with their collection UUID', () => {
    const plan = planWrites(readBatch(concatDocuments([event('insert', 'k', { _id: 'k' }), event('update', 'k', null)])));
    const [writes] = plan.namespaces;
    assert.equal(writes!.upserts.length, 0);
    assert.equal(writes!.unresolved.length, 1);
    assert.ok(uuid.equals(writes!.unresolved[0]!.collectionUUID as UUID));
  });

  it('keeps namespaces apart', () => {
    const plan = planWrites(readBatch(concatDocuments([event('insert', 1, { _id: 1 }, 'a'), event('insert', 1, { _id: 1 }, 'b')])));
    assert.deepEqual(plan.namespaces.map((n) => n.coll).sort(), ['a', 'b']);
    assert.equal(plan.coalesced, 0);
  });

  it('keeps every BSON byte of the document, types no JavaScript value has included', () => {
    // {_id: 1, u: undefined}: the deprecated undefined type (0x06) has no JavaScript value bson would write back.
    const doc = Uint8Array.from([17, 0, 0, 0, 0x10, 0x5f, 0x69, 0x64, 0, 1, 0, 0, 0, 0x06, 0x75, 0, 0]);
    const head = serialize({
      _id: { _data: '8200' },
      operationType: 'insert',
      ns: { db: 'd', coll: 'c' },
      documentKey: { _id: new Int32(1) },
    });
    const raw = concatDocuments([
      head.subarray(0, head.length - 1),
      Uint8Array.of(0x03),
      Buffer.from('fullDocument\0'),
      doc,
      Uint8Array.of(0),
    ]);
    new DataView(raw.buffer).setInt32(0, raw.length, true);
    const [writes] = planWrites(readBatch(raw)).namespaces;
    assert.ok(Buffer.from(writes!.upserts[0]!).includes(Buffer.from(doc)), 'the document bytes travel unchanged');
  });
});

describe('a sharded source’s cross-shard move (a delete and an insert, in either order)', () => {
  function keyed(operationType: string, documentKey: Document, fullDocument?: Document): Uint8Array {
    const doc = decode(event(operationType, documentKey._id, fullDocument));
    doc.documentKey = documentKey;
    return serialize(doc);
  }
  const plain = (bytes: Uint8Array) => deserialize(bytes);
  const insertNew = () => keyed('insert', { customer: 380, _id: 19 }, { _id: 19, customer: 380 });
  const deleteOld = () => keyed('delete', { customer: 19, _id: 19 });

  it('keeps the insert when the old version’s delete comes after it, and deletes that version only, first', () => {
    const variants: Record<string, { customer: 1 }>[] = [{}, { 'd.c': { customer: 1 } }];
    for (const shardKeys of variants) {
      const plan = planWrites(readBatch(concatDocuments([insertNew(), deleteOld()])), shardKeys);
      const writes = plan.namespaces[0]!;
      assert.equal(writes.upserts.length, 1, 'the new version is written');
      assert.deepEqual(plain(writes.upserts[0]!).u, { _id: 19, customer: 380 });
      const deletes = writes.deletes.map(plain);
      assert.ok(
        deletes.some((d) => d.q.customer === 19 && d.q._id === 19),
        `the old version is deleted by its key: ${JSON.stringify(deletes)}`,
      );
      assert.ok(
        deletes.every((d) => d.q.customer !== undefined || d.q.$nor !== undefined),
        'no delete by _id alone, which would remove the new version',
      );
      assert.ok(writes.movedIds.length > 0, 'deletes before upserts');
    }
  });

  it('deletes by the key the document had, in a later batch too', () => {
    const plan = planWrites(readBatch(concatDocuments([deleteOld()])));
    assert.deepEqual(plain(plan.namespaces[0]!.deletes[0]!).q, { customer: 19, _id: 19 });
  });

  it('lets a delete of the same version replace the insert, as any later event does', () => {
    const plan = planWrites(readBatch(concatDocuments([insertNew(), keyed('delete', { customer: 380, _id: 19 })])));
    assert.equal(plan.namespaces[0]!.upserts.length, 0);
    assert.equal(plan.coalesced, 1);
  });
});
