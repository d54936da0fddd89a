// The order the verifier's first pass takes its ranges in: the most source bytes left first, so
// that the pass ends on small ranges compared side by side rather than one large one alone.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { byRemainingBytes, type RangeRow } from '../../src/verify/partitions.js';

function row(ns: string, index: number, estimatedBytes: number, comparedBytes = 0): RangeRow {
  const [db, coll] = ns.split('.') as [string, string];
  return {
    db,
    coll,
    key: { instance: 'ferry', ns, index },
    min: '',
    max: '',
    status: comparedBytes > 0 ? 'in progress' : 'not started',
    source: { documents: 0, bytes: comparedBytes },
    destination: { documents: 0, bytes: comparedBytes },
    differences: 0,
    estimatedCount: 1,
    estimatedBytes,
  };
}

describe('verifier ranges: first-pass order', () => {
  it('takes the ranges with the most bytes left first, across collections, counting what a restart finds compared', () => {
    const rows = [
      row('a.small', 0, 10_000_000),
      row('b.large', 0, 64_000_000),
      row('b.large', 1, 64_000_000, 60_000_000),
      row('c.mid', 0, 30_000_000),
      row('c.mid', 1, 2_000_000, 5_000_000),
    ];
    const order = rows.sort(byRemainingBytes).map((r) => `${r.key.ns}#${r.key.index}`);
    assert.deepEqual(order, ['b.large#0', 'c.mid#0', 'a.small#0', 'b.large#1', 'c.mid#1']);
  });
});
