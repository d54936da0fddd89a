// The test cluster's record tree (documents by `_id` and by record id) holds what a sorted map
// holds through any mix of inserts, appends in several ascending runs (a copy's load), deletes and
// clones, and a clone never sees the other tree's later writes (transaction snapshots stand on it).
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { RecordTree } from '../../test/cluster/storage/record-tree.js';

const byNumber = (a: number, b: number) => a - b;

/** The reference: a Map, read in key order. */
class Model {
  constructor(readonly entries = new Map<number, string>()) {}
  sorted(): [number, string][] {
    return [...this.entries].sort((a, b) => a[0] - b[0]);
  }
}

type Op =
  | { kind: 'set'; key: number; overwrite: boolean }
  | { kind: 'run'; from: number; count: number; step: number }
  | { kind: 'delete'; key: number }
  | { kind: 'deleteRange'; from: number; count: number }
  | { kind: 'clone' }
  | { kind: 'switch'; to: number };

const KEYS = 20_000;
const op: fc.Arbitrary<Op> = fc.oneof(
  {
    weight: 5,
    arbitrary: fc.record({ kind: fc.constant('set' as const), key: fc.integer({ min: 0, max: KEYS }), overwrite: fc.boolean() }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constant('run' as const),
      from: fc.integer({ min: 0, max: KEYS }),
      count: fc.integer({ min: 1, max: 3000 }),
      step: fc.integer({ min: 1, max: 4 }),
    }),
  },
  { weight: 3, arbitrary: fc.record({ kind: fc.constant('delete' as const), key: fc.integer({ min: 0, max: KEYS }) }) },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant('deleteRange' as const),
      from: fc.integer({ min: 0, max: KEYS }),
      count: fc.integer({ min: 1, max: 5000 }),
    }),
  },
  { weight: 1, arbitrary: fc.constant({ kind: 'clone' as const }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('switch' as const), to: fc.nat() }) },
);

function assertSame(tree: RecordTree<number, string>, model: Model, probes: readonly number[]): void {
  const expected = model.sorted();
  assert.equal(tree.size, expected.length);
  assert.deepEqual(
    [...tree.values()],
    expected.map(([, v]) => v),
  );
  assert.equal(tree.minKey(), expected[0]?.[0]);
  assert.equal(tree.maxKey(), expected.at(-1)?.[0]);
  for (const key of probes) {
    assert.equal(tree.get(key), model.entries.get(key), `get(${key})`);
    assert.equal(tree.has(key), model.entries.has(key), `has(${key})`);
    const reversed = [...take(tree.entriesReversed(key), 70)];
    assert.deepEqual(
      reversed,
      expected
        .filter(([k]) => k <= key)
        .reverse()
        .slice(0, 70),
      `entriesReversed(${key})`,
    );
    const high = key + 300;
    for (const includeHigh of [true, false]) {
      const seen: [number, string][] = [];
      tree.forRange(key, high, includeHigh, (k, v) => {
        seen.push([k, v]);
        return seen.length >= 100;
      });
      const want = expected.filter(([k]) => k >= key && (includeHigh ? k <= high : k < high)).slice(0, 100);
      assert.deepEqual(seen, want, `forRange(${key}, ${high}, ${includeHigh})`);
    }
  }
  assert.deepEqual([...tree.entriesReversed()], expected.slice().reverse());
}

function* take<T>(items: Iterable<T>, n: number): Iterable<T> {
  if (n <= 0) return;
  for (const item of items) {
    yield item;
    if (--n === 0) return;
  }
}

describe('test cluster: record tree', () => {
  it('agrees with a sorted map through inserts, ascending runs, deletes and clones, each clone on its own', () => {
    fc.assert(
      fc.property(
        fc.array(op, { maxLength: 60 }),
        fc.array(fc.integer({ min: -1, max: KEYS + 1 }), { minLength: 3, maxLength: 6 }),
        (ops, probes) => {
          const trees = [{ tree: new RecordTree<number, string>(byNumber), model: new Model() }];
          let current = 0;
          let version = 0;
          const set = (key: number, overwrite: boolean) => {
            const { tree, model } = trees[current]!;
            const value = `${key}@${version++}`;
            const added = tree.set(key, value, overwrite);
            assert.equal(added, !model.entries.has(key));
            if (added || overwrite) model.entries.set(key, value);
          };
          for (const o of ops) {
            const { tree, model } = trees[current]!;
            switch (o.kind) {
              case 'set':
                set(o.key, o.overwrite);
                break;
              case 'run':
                for (let i = 0; i < o.count; i++) set(o.from + i * o.step, false);
                break;
              case 'delete':
                assert.equal(tree.delete(o.key), model.entries.delete(o.key));
                break;
              case 'deleteRange':
                for (let key = o.from; key < o.from + o.count; key++) assert.equal(tree.delete(key), model.entries.delete(key));
                break;
              case 'clone':
                trees.push({ tree: tree.clone(), model: new Model(new Map(model.entries)) });
                break;
              case 'switch':
                current = o.to % trees.length;
                break;
            }
          }
          for (const { tree, model } of trees) assertSame(tree, model, probes);
        },
      ),
      { numRuns: 60 },
    );
  });

  it('holds a load of four interleaved ascending runs in order and empties again, a clone taken before keeping all', () => {
    const tree = new RecordTree<number, number>(byNumber);
    const perRun = 25_000;
    for (let i = 0; i < perRun; i++) for (let run = 0; run < 4; run++) assert.equal(tree.set(run * 1_000_000 + i, i, false), true);
    assert.equal(tree.size, 4 * perRun);
    let previous = -1;
    let count = 0;
    tree.forRange(0, Number.MAX_SAFE_INTEGER, true, (key) => {
      assert.ok(key > previous);
      previous = key;
      count++;
      return false;
    });
    assert.equal(count, 4 * perRun);
    assert.equal(tree.set(1_000_000 + 7, -1, false), false, 'a key already there is refused');
    assert.equal(tree.get(1_000_007), 7);
    const snapshot = tree.clone();
    for (let run = 0; run < 4; run++) for (let i = 0; i < perRun; i++) tree.delete(run * 1_000_000 + i);
    assert.equal(tree.size, 0);
    assert.equal(tree.minKey(), undefined);
    assert.deepEqual([...tree.values()], []);
    assert.equal(snapshot.size, 4 * perRun, 'the clone kept every entry');
    assert.equal(snapshot.get(3_000_000 + perRun - 1), perRun - 1);
  });
});
