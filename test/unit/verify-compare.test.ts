// The verifier's comparisons against two running clusters (test clusters, or the real deployments
// of FERRY_TEST_CLUSTER0_URI / FERRY_TEST_CLUSTER1_URI): a range compared on both sides in `_id`
// order finds every document that is missing, extra or different (a value, a type, the order of
// fields), resumes exactly after a task's last `_id`, and honours the range's bounds; a re-check
// confirms a difference only on a second look at an unchanged source, once the change streams
// have read past its reads. A namespace's definition is read with each cluster's time of the read
// (for its confirmation), and definitions waiting for confirmation fall due as their time is applied.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Double, Int32, Long, MaxKey, MinKey, Timestamp } from 'bson';
import { MongoClient, type Collection } from 'mongodb';
import { MetadataStore, packValue, unpackValue } from '../../src/meta/store.js';
import { fixedFence } from '../../src/meta/fence.js';
import type { StartRequest } from '../../src/domain/start-request.js';
import { checkNamespace } from '../../src/verify/catalog-check.js';
import { CatalogRecheckStore } from '../../src/verify/catalog-rechecks.js';
import { compareRange, type RangeDifference, type RangeTask } from '../../src/verify/compare-range.js';
import { Rechecker } from '../../src/verify/recheck.js';
import { RecheckQueue } from '../../src/verify/recheck-queue.js';
import { RecheckStore, type StoredRecheck } from '../../src/verify/recheck-store.js';
import { startClusterPair, type ClusterPair } from '../helpers/clusters.js';

const DB = `ferry_verify_compare_${process.pid}`;

function mixedId(i: number): unknown {
  switch (i % 5) {
    case 0:
      return new Int32(i);
    case 1:
      return Long.fromNumber(2 ** 40 + i);
    case 2:
      return `s-${String(i).padStart(5, '0')}`;
    case 3:
      return { k: new Int32(i) };
    default:
      return new Date(i * 1000);
  }
}

/** How a comparison reads: through the driver, or on Ferry's own connections into lent buffers (or replies too large for them). */
interface Reading {
  name: string;
  task: Pick<RangeTask, 'readPath' | 'replyBytes'>;
  path: 'driver' | 'wire';
}
const READINGS: Reading[] = [
  { name: 'the driver', task: {}, path: 'driver' },
  { name: "Ferry's own connections", task: { readPath: 'wire' }, path: 'wire' },
  { name: "Ferry's own connections, each reply larger than the buffers", task: { readPath: 'wire', replyBytes: 1024 }, path: 'wire' },
];

/** Every difference of a whole range, task after task (`maxBytes`, `maxDifferences` small to force several). */
async function compareAll(
  source: MongoClient,
  destination: MongoClient,
  coll: string,
  limits: { maxBytes: number; maxDifferences: number },
  bounds: { min: unknown; max: unknown } = { min: new MinKey(), max: new MaxKey() },
  reading: Reading = READINGS[0]!,
  local = true,
) {
  const task: RangeTask = {
    db: DB,
    coll,
    min: packValue(bounds.min),
    max: packValue(bounds.max),
    batchSize: 50,
    ...limits,
    ...reading.task,
  };
  const differences: RangeDifference[] = [];
  const counts = { source: 0, destination: 0, tasks: 0 };
  let after: string | undefined;
  for (;;) {
    const outcome = await compareRange(source, destination, { ...task, ...(after === undefined ? {} : { after }) });
    counts.tasks++;
    counts.source += outcome.source.documents;
    counts.destination += outcome.destination.documents;
    differences.push(...outcome.differences);
    assert.ok(outcome.sourceTime !== undefined, 'the source read time is reported');
    // A real deployment Ferry's connections cannot serve (a mongos, X.509) is read through the driver.
    if (local) assert.deepEqual(outcome.readPaths, { source: reading.path, destination: reading.path });
    if (outcome.status === 'done') break;
    assert.ok(outcome.lastId !== undefined);
    after = outcome.lastId;
  }
  const described = differences.map((d) => `${JSON.stringify(unpackValue(d.id))}:${d.kind}`).sort();
  return { differences: described, counts };
}

/** The documents of `aligned` whose value differs on the destination: the first and last of the range, others between. */
const ALIGNED_CHANGES: unknown[] = [new MinKey(), mixedId(1), mixedId(252), mixedId(377), mixedId(599), new MaxKey()];

describe('verifier comparisons against clusters', () => {
  let pair: ClusterPair;
  let source: MongoClient;
  let destination: MongoClient;
  const coll = (client: MongoClient, name: string): Collection<any> => client.db(DB).collection(name);

  before(async () => {
    pair = await startClusterPair();
    source = await MongoClient.connect(pair.cluster0);
    destination = await MongoClient.connect(pair.cluster1);
    const docs = Array.from({ length: 600 }, (_, i) => ({ _id: mixedId(i), a: new Int32(i), pad: 'x'.repeat(100) }));
    docs.push({ _id: new MinKey(), a: new Int32(-1), pad: 'min' }, { _id: new MaxKey(), a: new Int32(-2), pad: 'max' });
    for (const client of [source, destination]) await coll(client, 'same').insertMany(docs, { ordered: false });
    await coll(source, 'changed').insertMany(docs, { ordered: false });
    await coll(destination, 'changed').insertMany(docs, { ordered: false });
    const target = coll(destination, 'changed');
    await target.deleteOne({ _id: mixedId(10) });
    await target.insertOne({ _id: 'zz-extra', a: new Int32(0) });
    await target.updateOne({ _id: mixedId(20) }, { $set: { a: new Int32(-20) } });
    await target.updateOne({ _id: mixedId(30) }, { $set: { a: new Double(30) } }); // the same number, another type
    await target.replaceOne({ _id: mixedId(40) }, { pad: 'x'.repeat(100), a: new Int32(40) }); // fields in another order
    await target.deleteOne({ _id: new MaxKey() });
    // Equal but for one value of the same size in a few documents: every reply stays aligned.
    await coll(source, 'aligned').insertMany(docs, { ordered: false });
    await coll(destination, 'aligned').insertMany(docs, { ordered: false });
    for (const id of ALIGNED_CHANGES) await coll(destination, 'aligned').updateOne({ _id: id }, { $set: { a: new Int32(-7) } });
  });

  after(async () => {
    await Promise.allSettled([source.db(DB).dropDatabase(), destination.db(DB).dropDatabase()]);
    await Promise.allSettled([source.close(), destination.close()]);
    await pair.stop();
  });

  for (const reading of READINGS) {
    it(`finds nothing in equal collections, every document counted once across tasks, read through ${reading.name}`, async () => {
      const { differences, counts } = await compareAll(
        source,
        destination,
        'same',
        { maxBytes: 8 * 1024, maxDifferences: 10 },
        undefined,
        reading,
        pair.local,
      );
      assert.deepEqual(differences, []);
      assert.equal(counts.source, 602);
      assert.equal(counts.destination, 602);
      assert.ok(counts.tasks > 3, `several tasks (${counts.tasks})`);
    });

    it(`finds every missing, extra and different document, value, type and field order alike, read through ${reading.name}`, async () => {
      const expected = [
        `${JSON.stringify(mixedId(10))}:missing`,
        '"zz-extra":extra',
        `${JSON.stringify(mixedId(20))}:different`,
        `${JSON.stringify(mixedId(30))}:different`,
        `${JSON.stringify(mixedId(40))}:different`,
        `${JSON.stringify(new MaxKey())}:missing`,
      ].sort();
      const whole = await compareAll(
        source,
        destination,
        'changed',
        { maxBytes: 1 << 30, maxDifferences: 1000 },
        undefined,
        reading,
        pair.local,
      );
      assert.deepEqual(whole.differences, expected);
      assert.equal(whole.counts.tasks, 1);
      // Small tasks, at most two differences each: the same differences, each once.
      const pieces = await compareAll(
        source,
        destination,
        'changed',
        { maxBytes: 4 * 1024, maxDifferences: 2 },
        undefined,
        reading,
        pair.local,
      );
      assert.deepEqual(pieces.differences, expected);
      assert.equal(pieces.counts.source, 602);
      assert.equal(pieces.counts.destination, 601);
    });

    it(`finds a value changed in place in otherwise equal replies, wherever it lies, read through ${reading.name}`, async () => {
      const expected = ALIGNED_CHANGES.map((id) => `${JSON.stringify(id)}:different`).sort();
      for (const limits of [
        { maxBytes: 1 << 30, maxDifferences: 1000 },
        { maxBytes: 5 * 1024, maxDifferences: 1 },
      ]) {
        const { differences, counts } = await compareAll(source, destination, 'aligned', limits, undefined, reading, pair.local);
        assert.deepEqual(differences, expected, `limits ${JSON.stringify(limits)}`);
        assert.equal(counts.source, 602);
        assert.equal(counts.destination, 602);
      }
    });

    it(`reads only its range: a difference outside the bounds is not seen, read through ${reading.name}`, async () => {
      const { differences, counts } = await compareAll(
        source,
        destination,
        'changed',
        { maxBytes: 1 << 30, maxDifferences: 1000 },
        { min: new Int32(15), max: new Int32(35) },
        reading,
        pair.local,
      );
      // Numbers 15 (incl.) to 35 (excl.) of the mixed `_id`s: those with i % 5 === 0 (Int32) in range, 20 and 30 differ.
      assert.deepEqual(differences, [`${JSON.stringify(mixedId(20))}:different`, `${JSON.stringify(mixedId(30))}:different`].sort());
      assert.equal(counts.source, 4);
    });
  }

  it('a re-check confirms a difference on a second look at an unchanged source, and clears an equal document', async () => {
    const saved: StoredRecheck[] = [];
    const store = {
      save: async (rechecks: StoredRecheck[]) => void saved.push(...rechecks),
      remove: async () => {},
    } as unknown as RecheckStore;
    const queue = new RecheckQueue(store, 100);
    const far = new Timestamp({ t: 0xffffffff, i: 0 });
    let positions: { source?: Timestamp; destination?: Timestamp } = {};
    const checker = new Rechecker({ source, destination, queue, store, streamPositions: () => positions });
    const ns = `${DB}.changed`;
    const equal = queue.touch(ns, packValue(mixedId(5)), undefined);
    const different = queue.touch(ns, packValue(mixedId(20)), undefined);
    const missing = queue.touch(ns, packValue(mixedId(10)), undefined);

    const first = await checker.check([equal, different, missing]);
    assert.deepEqual(first.equal, [equal]);
    assert.equal(first.differences.length, 0, 'one look proves nothing: the destination may trail');
    assert.equal(different.attempts, 1);
    assert.ok(different.dueAt !== undefined, 'checked again once events through the source read are applied');

    // Second look, but the streams have not read past the reads yet: still undecided.
    const second = await checker.check([different, missing]);
    assert.equal(second.differences.length, 0);
    positions = { source: far, destination: far };
    const third = await checker.check([different, missing]);
    assert.deepEqual(
      third.differences.map((d) => [d.entry, d.kind]),
      [
        [different, 'different'],
        [missing, 'missing'],
      ],
    );
    assert.match(third.differences[0]!.detail, /field "a" differs/);
    assert.equal(queue.size, 0, 'decided entries leave the queue');

    // A document touched while it is checked is left to its next check; one changed after commit is not verifiable.
    const touched = queue.touch(ns, packValue(mixedId(40)), undefined);
    touched.attempts = 1;
    const checking = checker.check([touched]);
    queue.touch(ns, packValue(mixedId(40)), undefined);
    const during = await checking;
    assert.equal(during.differences.length + during.equal.length + during.notVerified.length, 0);
    assert.equal(touched.attempts, 0, 'a touch starts confirmation over');
    touched.afterCommit = true;
    const late = await checker.check([touched]);
    assert.deepEqual(late.notVerified, [touched]);
  });
  it('stored re-checks: due once events through their time are applied, and every one once nothing more will be', async () => {
    const store = new RecheckStore(new MetadataStore(destination, `recheck-store-${process.pid}`, fixedFence(1)));
    const at = (t: number) => new Timestamp({ t, i: 1 });
    await store.save([
      { ns: `${DB}.c`, id: packValue(1), attempts: 0, dueAt: at(1_700_000_000) },
      { ns: `${DB}.c`, id: packValue(2), attempts: 0, dueAt: at(1_800_000_000) },
      { ns: `${DB}.c`, id: packValue(3), attempts: 0 },
    ]);
    const ids = (rechecks: StoredRecheck[]) => rechecks.map((r) => Number(unpackValue(r.id))).sort();
    assert.deepEqual(ids(await store.due(undefined, 10)), [3]);
    assert.deepEqual(ids(await store.due(at(1_750_000_000), 10)), [1, 3]);
    assert.deepEqual(ids(await store.due('all', 10)), [1, 2, 3], 'after commit every stored re-check is due');
    await store.remove([1, 2, 3].map((id) => ({ ns: `${DB}.c`, id: packValue(id) })));
    assert.equal(await store.count(), 0);
  });
  it('a definition check reads each cluster with its time, and sees what differs', async () => {
    await source.db(DB).createCollection('defined', { validator: { a: { $type: 'int' } } });
    await destination.db(DB).createCollection('defined', { validator: { a: { $type: 'int' } } });
    await coll(source, 'defined').createIndex({ a: 1 }, { name: 'a_1' });
    await coll(destination, 'defined').createIndex({ a: 1 }, { name: 'a_1' });
    const request = { buildIndexes: 'always' } as unknown as StartRequest;
    const ns = { db: DB, coll: 'defined' };
    const before = (await source.db('admin').command({ ping: 1 })).operationTime as Timestamp;
    const clean = await checkNamespace(source, destination, ns, request, 'temporary');
    assert.deepEqual(clean.differences, []);
    assert.ok(
      clean.sourceTime !== undefined && !before.greaterThan(clean.sourceTime),
      'the source read time is at or after what came before',
    );
    assert.ok(clean.destinationTime !== undefined, 'the destination read time is known');
    await source.db(DB).command({ collMod: 'defined', validationAction: 'warn' });
    await coll(destination, 'defined').dropIndex('a_1');
    const changed = await checkNamespace(source, destination, ns, request, 'temporary');
    assert.deepEqual(changed.differences.map((d) => `${d.subject}:${d.kind}`).sort(), ['index:a_1:index', 'options:option']);
    assert.ok(changed.sourceTime!.greaterThan(clean.sourceTime!), 'the later read, the later time (the collMod is between)');
  });

  it('definitions waiting for confirmation: due once their time is applied, all of them up to the largest time', async () => {
    const store = new CatalogRecheckStore(new MetadataStore(destination, `catalog-rechecks-${process.pid}`, fixedFence(1)));
    const at = (t: number, i = 1) => new Timestamp({ t, i });
    const difference = (ns: string) => ({ ns, subject: 'options', kind: 'option' as const, detail: 'differs' });
    await store.save({ ns: 'd.early', dueAt: at(1_700_000_000), differences: [difference('d.early')] });
    await store.save({ ns: 'd.late', dueAt: at(0xfffffff0), differences: [difference('d.late')] });
    await store.save({ ns: 'd.now', differences: [difference('d.now')] });
    assert.deepEqual((await store.due(undefined, 10)).sort(), ['d.now']);
    assert.deepEqual((await store.due(at(1_750_000_000), 10)).sort(), ['d.early', 'd.now']);
    assert.deepEqual((await store.due(at(0xffffffff, 0xffffffff), 10)).sort(), ['d.early', 'd.late', 'd.now']);
    assert.deepEqual((await store.due('all', 10)).sort(), ['d.early', 'd.late', 'd.now']);
    assert.deepEqual((await store.get('d.early'))?.differences, [difference('d.early')]);
    await store.save({ ns: 'd.early', dueAt: at(1_800_000_000), differences: [] });
    assert.equal(await store.get('d.early'), undefined, 'nothing found: the namespace is forgotten');
    assert.equal(await store.count(), 2);
  });
});
