// Checkpointed and planned `_id`s must serialize back to their own bytes: JavaScript moves
// integer-like keys ("0", "1") of an object first, which would turn a resume point
// `{a: null, "1": "s"}` into `{"1": "s", a: null}`, a different `_id` that sorts elsewhere, and the
// documents between the two would never be copied.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { Code, Int32, MaxKey, serialize } from 'bson';
import { compareBsonValues, findId, readId, valueBytes } from '../../src/bson/index.js';
import { packValue, unpackValue } from '../../src/meta/store.js';
import { partitionContains, partitionFindOptions, planPartitions } from '../../src/plan/partitions.js';
import { bsonScalar } from './bson-arbitraries.js';

/** A document in a given field order (a Map: `bson` serializes it in insertion order). */
const ordered = (...entries: [string, unknown][]) => new Map<string, unknown>(entries);

/** The bytes of a document whose `_id` is `id` (and a body, as stored documents have). */
const docWithId = (id: unknown) => serialize({ _id: id, body: 'x' } as never);

/** The raw bytes of the `_id` value of a stored document. */
const idBytes = (doc: Uint8Array) => Buffer.from(valueBytes(doc, findId(doc)));

/** The `_id` value bytes that `value`, used as `_id`, serializes to. */
const bytesAsId = (value: unknown) => idBytes(serialize({ _id: value } as never));

const FLAT = ordered(['a', null], ['1', 's']);
const NESTED = ordered(
  ['k', ordered(['z', new Int32(1)], ['2', 'two'], ['10', ordered(['b', true], ['0', null])])],
  ['list', [ordered(['x', 1.5], ['3', 'three']), { plain: 1 }]],
  ['code', new Code('f()', ordered(['s', 1], ['7', 2]) as never)],
  ['5', 'last'],
);

describe('_id field order through the copy checkpoint', () => {
  for (const [name, id] of [
    ['flat', FLAT],
    ['nested', NESTED],
  ] as const) {
    it(`keeps a ${name} _id with integer-like field names byte-identical: readId → packValue → unpackValue → find bound`, () => {
      const doc = docWithId(id);
      const original = idBytes(doc);
      const read = readId(doc);
      assert.ok(bytesAsId(read).equals(original), 'readId serializes back to the stored bytes');
      const unpacked = unpackValue(packValue(read));
      assert.ok(bytesAsId(unpacked).equals(original), 'the checkpoint serializes back to the stored bytes');
      assert.ok(unpackValue(packValue(unpacked)) !== undefined);
      assert.equal(packValue(unpacked), packValue(read), 'packing again gives the same checkpoint');
      // The resumed `find` uses the checkpoint as its inclusive `min` bound.
      const options = partitionFindOptions({ min: unpacked, max: new MaxKey() });
      assert.ok(bytesAsId(options.min!._id).equals(original), 'the find min bound is the stored _id');
      // The copier skips the checkpointed document itself, found by comparison.
      assert.equal(compareBsonValues(readId(doc), unpacked), 0);
    });
  }

  it('orders _ids by their stored field order, as the index does', () => {
    // Stored {a: null, "1": "s"} sorts before stored {"1": "s", a: null}: null < string.
    const first = readId(docWithId(ordered(['a', null], ['1', 's'])));
    const second = readId(docWithId(ordered(['1', 's'], ['a', null])));
    assert.equal(compareBsonValues(first, second), -1);
    assert.equal(compareBsonValues(second, first), 1);
    // Resuming after `second` must not skip `first`'s neighbour: they are different documents.
    const resumeAt = unpackValue(packValue(second));
    assert.notEqual(compareBsonValues(first, resumeAt), 0);
    assert.equal(compareBsonValues(second, resumeAt), 0);
    // Nested: {k: {b: 1, "0": 1}} against {k: {"0": 1, b: 1}}: "b" > "0" at the first field.
    const nestedB = readId(docWithId(ordered(['k', ordered(['b', 1], ['0', 1])])));
    const nested0 = readId(docWithId(ordered(['k', ordered(['0', 1], ['b', 1])])));
    assert.equal(compareBsonValues(nested0, nestedB), -1);
  });

  it('plans boundaries that are sampled _ids, byte for byte', () => {
    const sampled = Array.from({ length: 40 }, (_, i) => ordered(['a', new Int32(i)], ['1', 's']));
    const stored = new Set(sampled.map((id) => bytesAsId(id).toString('hex')));
    const ids = sampled.map((id) => readId(docWithId(id)));
    const plan = planPartitions({ count: 40, size: 40 * 1000 }, ids, { partitionBytes: 4000 });
    assert.ok(plan.partitions.length > 2);
    for (const partition of plan.partitions.slice(1)) {
      assert.ok(stored.has(bytesAsId(partition.min).toString('hex')), 'a boundary is a stored _id');
      assert.ok(stored.has(bytesAsId(unpackValue(packValue(partition.min))).toString('hex')), 'and stays one once persisted');
    }
    for (const id of ids) {
      assert.equal(plan.partitions.filter((p) => partitionContains(p, id)).length, 1, 'each _id is in exactly one range');
    }
  });

  it('decodes documents without integer-like field names as plain objects', () => {
    assert.deepEqual(readId(docWithId({ a: new Int32(1), b: { c: 'd' } })), { a: new Int32(1), b: { c: 'd' } });
  });
});

/** Field names including integer-like ones, which JavaScript would reorder. */
const anyFieldName = fc.oneof(
  fc.string({ unit: 'grapheme-ascii', minLength: 1, maxLength: 3 }).filter((s) => !s.includes('\0') && s !== '__proto__'),
  fc.nat({ max: 200 }).map(String),
);

/** Documents (Maps in a generated order) and arrays, nested, with integer-like field names. */
const orderedValue: fc.Arbitrary<unknown> = fc.letrec<{ value: unknown; doc: Map<string, unknown> }>((tie) => ({
  value: fc.oneof({ depthSize: 'small', withCrossShrink: true }, bsonScalar, tie('doc'), fc.array(tie('value'), { maxLength: 3 })),
  doc: fc
    .uniqueArray(fc.tuple(anyFieldName, tie('value')), { selector: ([name]) => name, maxLength: 4 })
    .map((entries) => new Map(entries)),
})).doc;

describe('_id decoding keeps BSON bytes (property)', () => {
  it('decode → serialize is byte-identical for documents as _id, also through packValue/unpackValue', () => {
    fc.assert(
      fc.property(orderedValue, (id) => {
        const doc = docWithId(id);
        const original = idBytes(doc);
        const read = readId(doc);
        assert.ok(bytesAsId(read).equals(original));
        assert.ok(bytesAsId(unpackValue(packValue(read))).equals(original));
      }),
      { numRuns: 500 },
    );
  });

  it('compares decoded _ids as their stored field order dictates', () => {
    fc.assert(
      fc.property(orderedValue, orderedValue, (a, b) => {
        assert.equal(compareBsonValues(readId(docWithId(a)), readId(docWithId(b))), compareBsonValues(a, b));
        assert.equal(compareBsonValues(readId(docWithId(a)), a), 0);
      }),
      { numRuns: 500 },
    );
  });
});
