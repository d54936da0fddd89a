// The test cluster's update engine on random documents of every BSON type: the edit tree gives
// back the exact bytes, an update keeps every value it does not touch byte for byte, setting
// values that are already there writes nothing, and $inc/$mul follow mongod's type rules.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { BSON, Decimal128, Double, Int32, Long, Timestamp } from 'bson';
import { CompiledUpdate } from '../cluster/query/update/compile.js';
import { DocNode, Leaf } from '../cluster/query/update/tree.js';
import { bsonValue } from './bson-arbitraries.js';

const fieldName = fc
  .string({ unit: 'grapheme-ascii', minLength: 1, maxLength: 4 })
  .filter((s) => !s.includes('\0') && !s.includes('.') && !s.startsWith('$') && !/^\d+$/.test(s) && s !== '__proto__' && s !== '_id');
const documents = fc
  .dictionary(fieldName, bsonValue, { minKeys: 1, maxKeys: 5 })
  .map((fields) => toBuffer(BSON.serialize({ _id: 1, ...fields })));
const clock = { now: new Date(0), timestamp: new Timestamp({ t: 1, i: 1 }) };

function toBuffer(bytes: Uint8Array): Buffer {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

function compile(update: object, arrayFilters?: unknown[]): CompiledUpdate {
  return CompiledUpdate.compile(new Leaf(0x03, toBuffer(BSON.serialize(update))), { arrayFilters });
}

/** Each top-level element's bytes, by name. */
function elements(raw: Buffer): Map<string, Buffer> {
  const node = DocNode.parse(raw);
  return new Map(node.names.map((name, i) => [name, (node.values[i] as Leaf).bytes]));
}

test('the edit tree re-encodes any document to the same bytes', () => {
  fc.assert(
    fc.property(documents, (raw) => {
      assert.ok(DocNode.parse(raw).toBuffer().equals(raw));
    }),
  );
});

test('an update keeps every value it does not touch byte for byte, in place', () => {
  fc.assert(
    fc.property(documents, (raw) => {
      const result = compile({ $set: { 'zz~new': new Int32(7) } }).apply(raw, undefined, clock)!;
      const before = elements(raw);
      const after = elements(result.raw);
      assert.deepEqual([...after.keys()], [...before.keys(), 'zz~new']);
      for (const [name, bytes] of before) assert.ok(after.get(name)!.equals(bytes), name);
      assert.deepEqual(result.description, { updatedFields: { 'zz~new': new Int32(7) }, removedFields: [], truncatedArrays: [] });
    }),
  );
});

test('setting every field to the value it holds changes nothing', () => {
  fc.assert(
    fc.property(documents, (raw) => {
      const node = DocNode.parse(raw);
      // The $set document carries the stored values' own bytes.
      const spec = new DocNode(false, node.names.slice(1), node.values.slice(1));
      const set = new DocNode(false, ['$set'], [spec]);
      const update = CompiledUpdate.compile(new Leaf(0x03, set.toBuffer()));
      assert.equal(update.apply(raw, undefined, clock), undefined);
    }),
  );
});

test('$inc and $mul follow mongod SafeNum types', () => {
  const cases: [unknown, unknown, string, unknown][] = [
    [new Int32(1), new Int32(2), '$inc', new Int32(3)],
    [new Int32(2147483647), new Int32(1), '$inc', Long.fromNumber(2147483648)],
    [new Int32(1), Long.fromNumber(2), '$inc', Long.fromNumber(3)],
    [Long.fromNumber(1), new Double(0.5), '$inc', new Double(1.5)],
    [new Int32(3), new Double(2), '$mul', new Double(6)],
    [new Int32(65536), new Int32(65536), '$mul', Long.fromNumber(4294967296)],
    [new Int32(1), Decimal128.fromString('1.5'), '$inc', Decimal128.fromString('2.5')],
  ];
  for (const [start, by, operator, expected] of cases) {
    const raw = toBuffer(BSON.serialize({ _id: 1, v: start }));
    const result = compile({ [operator]: { v: by } }).apply(raw, undefined, clock)!;
    const v = BSON.deserialize(result.raw, { promoteValues: false }).v;
    assert.equal(
      (v as { _bsontype: string })._bsontype,
      (expected as { _bsontype: string })._bsontype,
      `${String(start)} ${operator} ${String(by)}`,
    );
    assert.equal(String(v), String(expected));
  }
  const max = toBuffer(BSON.serialize({ _id: 1, v: Long.MAX_VALUE }));
  assert.throws(() => compile({ $inc: { v: new Int32(1) } }).apply(max, undefined, clock), { code: 2 });
});

test('$[<id>] updates the selected elements; several elements changed are described as the array', () => {
  const raw = toBuffer(BSON.serialize({ _id: 1, a: [{ k: 1 }, { k: 2 }, { k: 1 }] }));
  const one = compile({ $set: { 'a.$[x].v': 1 } }, [{ 'x.k': 2 }]).apply(raw, undefined, clock)!;
  assert.deepEqual(one.description?.updatedFields, { 'a.1.v': new Int32(1) });
  const two = compile({ $set: { 'a.$[x].v': 1 } }, [{ 'x.k': 1 }]).apply(raw, undefined, clock)!;
  assert.deepEqual(Object.keys(two.description!.updatedFields), ['a']);
});
