/**
 * The claim of a migration's start by several instances (src/coordination/start-claim.ts), on a
 * test cluster in this process: two claims at the same instant, one wins; a live claim is never
 * overwritten; a claim a failed start released, one whose writer never started (its lease gone),
 * and one of a migration that committed do not hold back a new start.
 */
import { after, before, beforeEach, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { MongoClient } from 'mongodb';
import { startCluster } from '../cluster/index.js';
import { silentLogger } from '../helpers/phase-context.js';
import { StartClaim } from '../../src/coordination/start-claim.js';
import { Lease } from '../../src/meta/lease.js';
import { METADATA_DATABASE } from '../../src/domain/namespaces.js';
import { MetadataStore } from '../../src/meta/store.js';

const MEMBERS = ['shard01', 'shard02', 'shard03'];
let client: MongoClient;
let stop: () => Promise<void>;

before(async () => {
  const cluster = await startCluster();
  stop = cluster.stop;
  client = await MongoClient.connect(cluster.uri);
});

after(async () => {
  await client?.close();
  await stop?.();
});

beforeEach(async () => {
  await client.db(METADATA_DATABASE).dropDatabase();
});

/** Instance `id` with its lease taken, and its claim. */
async function member(id: string): Promise<{ lease: Lease; claim: StartClaim }> {
  const lease = new Lease({ client, instance: id, durationMs: 60_000, logger: silentLogger });
  await lease.acquire();
  return { lease, claim: new StartClaim(new MetadataStore(client, id, lease), MEMBERS) };
}

describe('the start claim of several instances', () => {
  it('lets exactly one of two claims made at the same instant win, and tells the other whose request won', async () => {
    const [a, b] = await Promise.all([member('shard01'), member('shard02')]);
    const outcomes = await Promise.all([a.claim.claim('{"x":1}'), b.claim.claim('{"x":2}')]);
    assert.equal(outcomes.filter((outcome) => outcome.claimed).length, 1, JSON.stringify(outcomes));
    const [won, lost] = outcomes[0]!.claimed ? ['shard01', outcomes[1]!] : ['shard02', outcomes[0]!];
    assert.deepEqual(lost, { claimed: false, by: won, request: won === 'shard01' ? '{"x":1}' : '{"x":2}' });
    // A third instance finds the same winner, whatever it asks.
    const c = await member('shard03');
    assert.equal((await c.claim.claim('{"x":3}')).claimed, false);
  });

  it('frees the claim of a start that failed, and replaces one whose writer never started', async () => {
    const a = await member('shard01');
    const b = await member('shard02');
    assert.deepEqual(await a.claim.claim('{"x":1}'), { claimed: true });
    await a.claim.release();
    assert.deepEqual(await b.claim.claim('{"x":2}'), { claimed: true });
    // shard02 died before writing its resume document and its lease went: its claim holds nothing back.
    await b.lease.discard();
    assert.deepEqual(await a.claim.claim('{"x":1}'), { claimed: true });
    const stored = await client.db(METADATA_DATABASE).collection('coordinationStart').findOne({});
    assert.equal(stored?.instance, 'shard01');
    assert.equal(stored?.request, '{"x":1}');
  });

  it('keeps the claim of an instance that started, even while it is down, and replaces it once that migration committed', async () => {
    const a = await member('shard01');
    const b = await member('shard02');
    assert.deepEqual(await a.claim.claim('{"x":1}'), { claimed: true });
    const resume = client.db(METADATA_DATABASE).collection<{ _id: string; state: string }>('resume');
    await resume.insertOne({ _id: 'shard01', state: 'RUNNING' });
    await a.lease.discard(); // down: it comes back to its resume document
    assert.deepEqual(await b.claim.claim('{"x":2}'), { claimed: false, by: 'shard01', request: '{"x":1}' });
    await resume.updateOne({ _id: 'shard01' }, { $set: { state: 'COMMITTED' } });
    assert.deepEqual(await b.claim.claim('{"x":2}'), { claimed: true });
  });
});
