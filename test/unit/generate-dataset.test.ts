// The generator's documents, without a cluster: deterministic per seed, and valid for the
// collections' unique indexes (no duplicate _id under MongoDB's comparison, no duplicate email).
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { serialize } from 'bson';
import { COLLECTIONS } from '../../scripts/lib/dataset.js';
import { createRandom } from '../../scripts/lib/random.js';
import { compareBsonValues } from '../../src/bson/index.js';

function documents(name: string, seed: number, count: number) {
  const definition = COLLECTIONS.find((c) => c.name === name)!;
  const random = createRandom(seed);
  return Array.from({ length: count }, (_, i) => definition.document(i, random));
}

describe('generated documents', () => {
  it('are byte-identical for one seed and differ for another', () => {
    for (const { name } of COLLECTIONS) {
      const a = documents(name, 7, 50).map((d) => Buffer.from(serialize(d)));
      const b = documents(name, 7, 50).map((d) => Buffer.from(serialize(d)));
      const c = documents(name, 8, 50).map((d) => Buffer.from(serialize(d)));
      assert.deepEqual(a, b, name);
      assert.notDeepEqual(a, c, name);
    }
  });

  it('never repeat an _id, as MongoDB compares them (mixed types included)', () => {
    for (const { name } of COLLECTIONS) {
      const ids = documents(name, 1, 3000).map((d) => d._id as unknown);
      const sorted = [...ids].sort(compareBsonValues);
      for (let i = 1; i < sorted.length; i++) {
        assert.notEqual(compareBsonValues(sorted[i - 1], sorted[i]), 0, `${name}: duplicate _id at ${i}`);
      }
    }
  });

  it('mix seven _id types in the mixed-key collection', () => {
    const types = new Set(documents('mixedKeys', 1, 70).map((d) => (d._id as object).constructor.name));
    assert.deepEqual([...types].sort(), ['Double', 'Int32', 'Long', 'Object', 'ObjectId', 'String', 'UUID']);
  });

  it('respect the unique indexes they are created with', () => {
    for (const definition of COLLECTIONS) {
      for (const index of definition.indexes.filter((i) => i.options.unique)) {
        const fields = Object.keys(index.key as object);
        const keys = documents(definition.name, 3, 3000).map((d) => JSON.stringify(fields.map((f) => d[f])));
        assert.equal(new Set(keys).size, keys.length, `${definition.name}.${index.options.name}`);
      }
    }
  });
});
