import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { Binary, Decimal128, Double, EJSON, Int32, Long, MaxKey, MinKey, ObjectId, Timestamp, UUID } from 'bson';
import { compareBsonValues } from '../../src/bson/index.js';
import {
  partitionContains,
  partitionFindOptions,
  planPartitions,
  wantedPartitions,
  type PartitionPlan,
} from '../../src/plan/partitions.js';
import { idValue } from './bson-arbitraries.js';
import { InvalidPartitionRequest } from '../../src/errors/errors.js';

const MB = 1024 * 1024;

/** The structural promises of every plan: MinKey..MaxKey, contiguous, strictly increasing. */
function assertWellFormed(plan: PartitionPlan): void {
  const { partitions } = plan;
  assert.ok(partitions.length >= 1);
  assert.ok(partitions[0]!.min instanceof MinKey, 'first min is MinKey');
  assert.ok(partitions.at(-1)!.max instanceof MaxKey, 'last max is MaxKey');
  for (let i = 0; i < partitions.length; i++) {
    assert.equal(compareBsonValues(partitions[i]!.min, partitions[i]!.max), -1, `range ${i} is not empty`);
    if (i > 0) assert.equal(partitions[i - 1]!.max, partitions[i]!.min, `range ${i} starts where ${i - 1} ends`);
  }
}

/** Asserts every id falls in exactly one partition; returns how many ids each partition holds. */
function assertCoveredOnce(plan: PartitionPlan, ids: readonly unknown[]): number[] {
  const counts = plan.partitions.map(() => 0);
  for (const id of ids) {
    const holders = plan.partitions.flatMap((p, i) => (partitionContains(p, id) ? [i] : []));
    assert.equal(holders.length, 1, `id ${EJSON.stringify(id as never)} is in partitions [${holders}]`);
    counts[holders[0]!]!++;
  }
  return counts;
}

/** A deterministic pseudo-random sample (with replacement) of `ids`. */
function sampleOf<T>(ids: readonly T[], size: number, seed = 1): T[] {
  let state = seed;
  const out: T[] = [];
  for (let i = 0; i < size; i++) {
    state = (state * 1103515245 + 12345) % 2 ** 31;
    out.push(ids[state % ids.length]!);
  }
  return out;
}

function statsFor(ids: readonly unknown[], avgBytes: number) {
  return { count: ids.length, size: ids.length * avgBytes };
}

describe('partition planning: whole collections', () => {
  it('an empty collection is one partition', () => {
    const plan = planPartitions({ count: 0, size: 0 }, [], { partitionBytes: MB });
    assertWellFormed(plan);
    assert.equal(plan.partitions.length, 1);
    assert.equal(plan.order, 'id');
  });

  it('a collection smaller than the target is one partition, whatever the sample says', () => {
    const ids = Array.from({ length: 1000 }, (_, i) => new Int32(i));
    const plan = planPartitions(statsFor(ids, 100), ids, { partitionBytes: MB });
    assert.equal(plan.partitions.length, 1);
    assert.equal(plan.partitions[0]!.estimatedCount, 1000);
  });

  it('a capped collection is one partition copied in natural order', () => {
    const ids = Array.from({ length: 1000 }, (_, i) => new Int32(i));
    const plan = planPartitions({ ...statsFor(ids, MB), capped: true }, ids, { partitionBytes: MB });
    assert.equal(plan.order, 'natural');
    assert.equal(plan.partitions.length, 1);
  });

  it('one giant document is one partition', () => {
    const giant = new ObjectId();
    const plan = planPartitions({ count: 1, size: 16 * MB }, [giant, giant, giant], { partitionBytes: MB });
    assertWellFormed(plan);
    assert.equal(plan.partitions.length, 1);
    assertCoveredOnce(plan, [giant]);
  });

  it('a few giant documents give at most one partition each, none empty', () => {
    const ids = [new Int32(1), new Int32(2), new Int32(3)];
    assert.equal(wantedPartitions({ count: 3, size: 48 * MB }, { partitionBytes: MB }), 3);
    const plan = planPartitions({ count: 3, size: 48 * MB }, sampleOf(ids, 30), { partitionBytes: MB });
    assertWellFormed(plan);
    const counts = assertCoveredOnce(plan, ids);
    assert.ok(plan.partitions.length >= 2 && plan.partitions.length <= 3);
    assert.ok(
      counts.every((c) => c >= 1),
      `every partition holds a document: ${counts}`,
    );
  });
});

describe('partition planning: adversarial _id distributions', () => {
  it('all one type: sequential ints split into the wanted number of even partitions', () => {
    const ids = Array.from({ length: 10_000 }, (_, i) => new Int32(i));
    const stats = statsFor(ids, 1000); // ~9.5 MB
    const plan = planPartitions(stats, sampleOf(ids, 1000), { partitionBytes: MB });
    assertWellFormed(plan);
    assert.equal(plan.partitions.length, wantedPartitions(stats, { partitionBytes: MB }));
    const counts = assertCoveredOnce(plan, ids);
    for (const count of counts) assert.ok(count > 500 && count < 1600, `balanced: ${counts}`);
  });

  it('every BSON type that can be an _id: ranges span types and cover every id once', () => {
    const ids: unknown[] = [new MinKey(), new MaxKey(), null];
    for (let i = 0; i < 40; i++) {
      ids.push(
        new Int32(i),
        Long.fromBigInt(2n ** 40n + BigInt(i)),
        new Double(i + 0.5),
        Decimal128.fromString(`${i}.25`),
        `s${String(i).padStart(3, '0')}`,
        { k: i },
        new Binary(Buffer.from([i]), 0),
        new UUID(),
        new ObjectId(),
        i % 2 === 0,
        new Date(i * 1000),
        new Timestamp({ t: i, i: 1 }),
      );
    }
    const plan = planPartitions(statsFor(ids, 10_000), sampleOf(ids, 400, 7), { partitionBytes: 500_000 });
    assertWellFormed(plan);
    assert.ok(plan.partitions.length >= 5, `split: ${plan.partitions.length}`);
    assertCoveredOnce(plan, ids);
    const boundaryTypes = new Set(plan.partitions.slice(1).map((p) => (p.min as object)?.constructor?.name ?? typeof p.min));
    assert.ok(boundaryTypes.size >= 4, `boundaries of several types: ${[...boundaryTypes]}`);
  });

  it('heavy skew: boundaries follow the sample’s quantiles, not the value range', () => {
    // 95% of ids below 1,000; 5% spread up to 10^9.
    const ids = [
      ...Array.from({ length: 9_500 }, (_, i) => new Int32(i % 1000)),
      ...Array.from({ length: 500 }, (_, i) => Long.fromNumber(1_000_000 + i * 2_000_000)),
    ];
    const plan = planPartitions(statsFor(ids, 1000), sampleOf(ids, 2000, 3), { partitionBytes: MB });
    assertWellFormed(plan);
    const counts = assertCoveredOnce(plan, ids);
    const dense = plan.partitions.filter((p) => compareBsonValues(p.max, new Int32(1000)) <= 0).length;
    assert.ok(dense >= plan.partitions.length - 2, `most ranges cut the dense region: ${dense}/${plan.partitions.length}`);
    assert.ok(Math.max(...counts) < 3 * (ids.length / plan.partitions.length), `no giant range: ${counts}`);
  });

  it('duplicates in the sample never make empty or overlapping partitions', () => {
    const ids = [new Int32(1), new Int32(2)];
    const sample = [...Array(50).fill(ids[0]), ...Array(50).fill(ids[1])];
    const plan = planPartitions({ count: 2_000, size: 100 * MB }, sample, { partitionBytes: MB });
    assertWellFormed(plan);
    assert.equal(plan.partitions.length, 2);
    assert.deepEqual(assertCoveredOnce(plan, ids), [1, 1]);

    const same = planPartitions({ count: 2_000, size: 100 * MB }, Array(100).fill('x'), { partitionBytes: MB });
    assert.equal(same.partitions.length, 1);
  });

  it('numbers of different types with equal value share a boundary, as in the _id index', () => {
    const sample = [new Int32(1), new Double(1), Long.fromNumber(1), new Int32(0), new Int32(2), new Int32(3)];
    const plan = planPartitions({ count: 6, size: 60 * MB }, sample, { partitionBytes: MB });
    assertWellFormed(plan);
    const counts = assertCoveredOnce(plan, sample);
    assert.equal(
      counts.reduce((a, b) => a + b),
      6,
    );
    assert.ok(plan.partitions.some((p) => partitionContains(p, new Int32(1)) && partitionContains(p, new Double(1))));
  });

  it('with a non-simple collation, no boundary holds a string', () => {
    const ids = [...Array.from({ length: 100 }, (_, i) => `k${i}`), ...Array.from({ length: 100 }, (_, i) => new Int32(i))];
    const plan = planPartitions({ ...statsFor(ids, MB), nonSimpleCollation: true }, ids, { partitionBytes: 10 * MB });
    assertWellFormed(plan);
    assert.ok(plan.partitions.length > 1);
    for (const p of plan.partitions.slice(1)) assert.notEqual(typeof p.min, 'string');
    assertCoveredOnce(plan, ids);
  });

  it('estimates spread the collection’s count and bytes over the partitions', () => {
    const ids = Array.from({ length: 1000 }, (_, i) => new Int32(i));
    const plan = planPartitions({ count: 1000, size: 10 * MB }, ids, { partitionBytes: MB });
    const count = plan.partitions.reduce((sum, p) => sum + p.estimatedCount, 0);
    const bytes = plan.partitions.reduce((sum, p) => sum + p.estimatedBytes, 0);
    assert.ok(Math.abs(count - 1000) <= plan.partitions.length);
    assert.ok(Math.abs(bytes - 10 * MB) <= plan.partitions.length);
  });
});

describe('partition planning: properties', () => {
  it('for random _id sets, samples and targets, every _id falls in exactly one partition', () => {
    fc.assert(
      fc.property(
        fc.array(idValue, { minLength: 1, maxLength: 60 }),
        fc.array(fc.nat(), { maxLength: 80 }),
        fc.integer({ min: 1, max: 200 }),
        (ids, picks, partitionsWanted) => {
          const sample = picks.map((p) => ids[p % ids.length]);
          const plan = planPartitions({ count: ids.length, size: partitionsWanted * 1000 }, sample, {
            partitionBytes: 1000,
          });
          assertWellFormed(plan);
          assertCoveredOnce(plan, ids);
          assert.ok(plan.partitions.length <= Math.max(1, new Set(sample).size));
        },
      ),
      { numRuns: 300 },
    );
  });
});

describe('partition reads', () => {
  it('find options omit min on the first range and max on the last, and always hint _id', () => {
    const ids = Array.from({ length: 100 }, (_, i) => new Int32(i));
    const plan = planPartitions({ count: 100, size: 3 * MB }, ids, { partitionBytes: MB });
    assert.equal(plan.partitions.length, 3);
    const [first, middle, last] = plan.partitions.map(partitionFindOptions);
    assert.deepEqual(first, { hint: { _id: 1 }, max: { _id: plan.partitions[0]!.max } });
    assert.deepEqual(middle, { hint: { _id: 1 }, min: { _id: plan.partitions[1]!.min }, max: { _id: plan.partitions[1]!.max } });
    assert.deepEqual(last, { hint: { _id: 1 }, min: { _id: plan.partitions[2]!.min } });
  });

  it('rejects nonsense statistics and targets', () => {
    assert.throws(() => wantedPartitions({ count: -1, size: 0 }, { partitionBytes: 1 }), InvalidPartitionRequest);
    assert.throws(() => planPartitions({ count: 1, size: NaN }, [], { partitionBytes: 1 }), /size/);
    assert.throws(() => planPartitions({ count: 1, size: 1 }, [], { partitionBytes: 0 }), /partitionBytes/);
  });
});
