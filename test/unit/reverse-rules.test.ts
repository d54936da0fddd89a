/**
 * The rules of reverse that need no cluster:
 * - which clusters a reversible sync may run between (versions, shard counts, topologies: the
 *   kinds of cluster the test cluster cannot be);
 * - which recorded sync a restart continues when both clusters hold one of this instance;
 * - the `collMod`s that put an index or a collection in its final form into the temporary form a
 *   sync's destination holds: they reach exactly what the forward sync creates (indexes.ts,
 *   collection-options.ts), do nothing when already there, and commit's restore (src/commit/
 *   restore.ts) brings the original back from them.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import type { Document } from 'bson';
import { cappedSteps, collectionTtlSteps, indexSteps } from '../../src/commit/restore.js';
import type { ClusterEndpoint } from '../../src/domain/clusters.js';
import type { StartRequest } from '../../src/domain/start-request.js';
import type { FerryError } from '../../src/errors/errors.js';
import type { ResumeDocument } from '../../src/meta/resume.js';
import { createPlan } from '../../src/plan/collection-options.js';
import { temporaryIndex } from '../../src/plan/indexes.js';
import { checkReversible, checkTopologies, type ReversibleFacts } from '../../src/plan/preflight.js';
import { indexToTemporary, optionsToTemporary } from '../../src/plan/temporary-forms.js';
import { chooseRecordedSync, type RecordedSync } from '../../src/recovery/find-sync.js';

const clusters: Record<'cluster0' | 'cluster1', ClusterEndpoint> = {
  cluster0: { name: 'cluster0', uri: 'mongodb://a.example:27017', address: 'a.example:27017' },
  cluster1: { name: 'cluster1', uri: 'mongodb://b.example:27017', address: 'b.example:27017' },
};
const REVERSIBLE = {
  source: 'cluster0',
  destination: 'cluster1',
  buildIndexes: 'afterDataCopy',
  reversible: true,
  enableUserWriteBlocking: 'sourceAndDestination',
  verification: { enabled: true },
} as StartRequest;

function refusal(check: () => void): FerryError {
  try {
    check();
  } catch (error) {
    return error as FerryError;
  }
  assert.fail('expected a refusal');
}

const replicaSet = (version: number[]): ReversibleFacts => ({ topology: 'replicaSet', version });
const sharded = (version: number[], shards: number): ReversibleFacts => ({ topology: 'sharded', version, shards });

describe('which clusters a reversible sync may run between', () => {
  it('two replica sets, or two sharded clusters with as many shards, of one major version from 6.0 on', () => {
    checkReversible(REVERSIBLE, { source: replicaSet([7, 0, 2]), destination: replicaSet([7, 0, 12]) }, clusters);
    checkReversible(REVERSIBLE, { source: sharded([8, 0, 0], 3), destination: sharded([8, 0, 4], 3) }, clusters);
  });

  it('sharded clusters whose shard counts differ → ReversibleNotSupported naming both', () => {
    const error = refusal(() => checkReversible(REVERSIBLE, { source: sharded([8, 0], 2), destination: sharded([8, 0], 3) }, clusters));
    assert.equal(error.code, 'ReversibleNotSupported');
    assert.equal(error.status, 422);
    assert.match(error.message, /cluster0 \(a\.example:27017\) has 2, cluster1 \(b\.example:27017\) 3/);
  });

  it('different major versions, or a cluster older than 6.0 → ReversibleNotSupported', () => {
    const majors = refusal(() => checkReversible(REVERSIBLE, { source: replicaSet([7, 0]), destination: replicaSet([8, 0]) }, clusters));
    assert.equal(majors.code, 'ReversibleNotSupported');
    assert.match(majors.message, /same major version/);
    const old = refusal(() => checkReversible(REVERSIBLE, { source: replicaSet([5, 0, 9]), destination: replicaSet([5, 0, 9]) }, clusters));
    assert.equal(old.code, 'ReversibleNotSupported');
    assert.match(old.message, /runs MongoDB 5\.0\.9; a reversible sync needs 6\.0 or later/);
  });

  it('a sync that is not reversible is not held to these rules', () => {
    const plain = { ...REVERSIBLE, reversible: false };
    checkReversible(plain, { source: sharded([5, 0], 2), destination: sharded([8, 0], 3) }, clusters);
  });

  it('replica set → sharded cluster cannot be reversible', () => {
    const sharding = { createSupportingIndexes: false, shardingEntries: [] };
    const error = refusal(() => checkTopologies({ ...REVERSIBLE, sharding }, 'replicaSet', 'sharded', clusters));
    assert.equal(error.code, 'ReversibleNotSupported');
  });
});

function found(cluster: 'cluster0' | 'cluster1', destination: 'cluster0' | 'cluster1', reversals?: number): RecordedSync {
  const source = destination === 'cluster0' ? 'cluster1' : 'cluster0';
  const doc = { request: { ...REVERSIBLE, source, destination }, state: 'COMMITTED' } as ResumeDocument;
  if (reversals !== undefined) doc.reversals = reversals;
  return { cluster, doc };
}

describe('which recorded sync a restart continues', () => {
  it('the latest direction when both clusters hold one on its own destination', () => {
    const forward = found('cluster1', 'cluster1'); // written before reverse existed: no count, 0
    const reversed = found('cluster0', 'cluster0', 1);
    assert.equal(chooseRecordedSync([forward, reversed]).chosen, reversed);
    assert.equal(chooseRecordedSync([reversed, forward]).chosen, reversed);
    const twice = found('cluster1', 'cluster1', 2);
    assert.equal(chooseRecordedSync([reversed, twice]).chosen, twice);
  });

  it('one that is not on its own destination is reported only when nothing else is found', () => {
    const misplaced = found('cluster0', 'cluster1', 3);
    assert.deepEqual(chooseRecordedSync([misplaced]), { misplaced });
    const placed = found('cluster1', 'cluster1', 0);
    assert.equal(chooseRecordedSync([misplaced, placed]).chosen, placed);
    assert.deepEqual(chooseRecordedSync([]), {});
  });
});

/** What `collMod` index changes do to a listed index (mongod's documented effect, enough for these options). */
function applyIndexChange(index: Document, change: Document): Document {
  const next = { ...index };
  const { name: _name, ...options } = change.index as Document;
  for (const [option, value] of Object.entries(options)) {
    if (option === 'forceNonUnique') delete next.unique;
    else if (option === 'unique' && value === true) next.unique = true;
    else if (value === false) delete next[option];
    else next[option] = value;
  }
  return next;
}

const indexSpec = fc
  .record({
    unique: fc.boolean(),
    hidden: fc.boolean(),
    prepareUnique: fc.boolean(),
    ttl: fc.option(fc.integer({ min: 0, max: 10 * 365 * 86_400 }), { nil: undefined }),
    sparse: fc.boolean(),
  })
  .map(({ unique, hidden, prepareUnique, ttl, sparse }) => {
    const spec: Document = { v: 2, key: { field: 1 }, name: 'field_1' };
    if (unique) spec.unique = true;
    if (hidden) spec.hidden = true;
    if (prepareUnique && !unique) spec.prepareUnique = true;
    if (ttl !== undefined) spec.expireAfterSeconds = ttl;
    if (sparse) spec.sparse = true;
    return spec;
  });

const ns = { db: 'shop', coll: 'orders' };

describe('putting final forms into temporary form', () => {
  it('an index reaches the temporary form a forward sync builds, and commit restores the original from it', () => {
    fc.assert(
      fc.property(indexSpec, (original) => {
        const { v: _v, ...target } = temporaryIndex(original).temporary;
        const temporary = indexToTemporary(ns, original, target).reduce((index, step) => applyIndexChange(index, step.change), original);
        const { v: _tv, ...reached } = temporary;
        assert.deepEqual(reached, target);
        assert.deepEqual(indexToTemporary(ns, temporary, target), [], 'nothing left to do once there');
        const restored = indexSteps(ns, original, temporary).reduce((index, step) => applyIndexChange(index, step.change), temporary);
        assert.deepEqual({ ...restored, prepareUnique: undefined }, { ...original, prepareUnique: undefined });
      }),
    );
  });

  it('each change is its own collMod, named', () => {
    const original = { v: 2, key: { email: 1 }, name: 'email_1', unique: true, hidden: true, expireAfterSeconds: 60 };
    assert.deepEqual(
      indexToTemporary(ns, original, temporaryIndex(original).temporary).map((step) => [step.what, step.change]),
      [
        ['unique', { index: { name: 'email_1', forceNonUnique: true } }],
        ['expireAfterSeconds', { index: { name: 'email_1', expireAfterSeconds: 2147483647 } }],
        ['hidden', { index: { name: 'email_1', hidden: false } }],
      ],
    );
  });

  it('a capped collection loses its limits and a clustered one its TTL; commit gives them back', () => {
    const capped = { capped: true, size: 65_536, max: 30 };
    assert.deepEqual(
      optionsToTemporary(ns, capped, createPlan('collection', capped).options).map((step) => step.change),
      [{ cappedSize: 1024 ** 5, cappedMax: 0 }],
    );
    const cappedNoMax = { capped: true, size: 65_536 };
    assert.deepEqual(
      optionsToTemporary(ns, cappedNoMax, createPlan('collection', cappedNoMax).options).map((step) => step.change),
      [{ cappedSize: 1024 ** 5 }],
    );
    const lifted = { capped: true, size: 1024 ** 5, max: 0x7fffffff };
    assert.deepEqual(optionsToTemporary(ns, lifted, createPlan('collection', capped).options), [], 'already lifted');
    assert.deepEqual(
      cappedSteps(ns, capped, lifted).map((step) => step.change),
      [{ cappedSize: 65_536, cappedMax: 30 }],
    );

    const clustered = { clusteredIndex: { key: { _id: 1 }, unique: true }, expireAfterSeconds: 3600 };
    const withoutTtl = createPlan('collection', clustered).options;
    assert.deepEqual(
      optionsToTemporary(ns, clustered, withoutTtl).map((step) => step.change),
      [{ expireAfterSeconds: 'off' }],
    );
    assert.deepEqual(optionsToTemporary(ns, withoutTtl, withoutTtl), []);
    assert.deepEqual(
      collectionTtlSteps(ns, clustered, withoutTtl).map((step) => step.change),
      [{ expireAfterSeconds: 3600 }],
    );
  });
});
