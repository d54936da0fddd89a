// The data generator and the cluster comparison, against two test clusters (or the real
// deployments of FERRY_TEST_CLUSTER0_URI / FERRY_TEST_CLUSTER1_URI).
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { Double, Int32, MongoClient, type Document } from 'mongodb';
import { generateDataset, GeneratorTargetNotEmptyError, type GenerateReport } from '../../scripts/generate.js';
import { compareClusters, temporaryIndexForm, TEMPORARY_TTL_SECONDS } from '../../scripts/lib/compare-clusters.js';
import { compareBsonValues } from '../../src/bson/index.js';
import { createNamespaceSelector } from '../../src/plan/namespaces.js';
import { startClusterPair, type ClusterPair } from '../helpers/clusters.js';

const GENERATE_MAIN = fileURLToPath(new URL('../../scripts/generate.js', import.meta.url));
const SIZE_MB = 0.5;
const SEED = 42;

describe('data generator and cluster comparison', () => {
  let pair: ClusterPair;
  let source: MongoClient;
  let destination: MongoClient;
  let report: GenerateReport;

  before(async () => {
    pair = await startClusterPair();
    source = await MongoClient.connect(pair.cluster0);
    destination = await MongoClient.connect(pair.cluster1);
    const reports = await Promise.all([
      generateDataset({ uri: pair.cluster0, sizeMB: SIZE_MB, seed: SEED, drop: true }),
      generateDataset({ uri: pair.cluster1, sizeMB: SIZE_MB, seed: SEED, drop: true }),
    ]);
    report = reports[0];
    assert.deepEqual(reports[1], reports[0], 'one seed, one report');
  });

  after(async () => {
    await source?.close();
    await destination?.close();
    await pair?.stop();
  });

  it('writes about the requested size, and reports exactly what it wrote', async () => {
    assert.ok(report.totalBytes >= SIZE_MB * 0.9 * 2 ** 20, `${report.totalBytes} bytes`);
    assert.ok(report.totalBytes <= SIZE_MB * 1.3 * 2 ** 20, `${report.totalBytes} bytes`);
    assert.equal(
      report.totalBytes,
      report.collections.reduce((sum, c) => sum + c.bytes, 0),
    );
    for (const { ns, documents } of report.collections) {
      const [db, coll] = [ns.slice(0, ns.indexOf('.')), ns.slice(ns.indexOf('.') + 1)];
      assert.equal(await source.db(db).collection(coll).countDocuments(), documents, ns);
    }
    assert.ok(report.databases.length >= 3, 'several databases');
    assert.ok(report.views.length >= 1, 'a view');
  });

  it('creates the indexes and collection kinds a migration must carry', async () => {
    const shop = source.db('gen_shop');
    const indexes = [
      ...(await shop.collection('customers').listIndexes().toArray()),
      ...(await shop.collection('orders').listIndexes().toArray()),
      ...(await shop.collection('products').listIndexes().toArray()),
      ...(await source.db('gen_analytics').collection('pageViews').listIndexes().toArray()),
    ];
    assert.ok(
      indexes.some((i) => i.unique === true),
      'unique',
    );
    assert.ok(
      indexes.some((i) => Object.keys(i.key).length > 1),
      'compound',
    );
    assert.ok(
      indexes.some((i) => typeof i.expireAfterSeconds === 'number'),
      'TTL',
    );
    assert.ok(
      indexes.some((i) => i.hidden === true),
      'hidden',
    );
    assert.ok(
      indexes.some((i) => i.partialFilterExpression !== undefined),
      'partial',
    );
    assert.ok(
      indexes.some((i) => i.sparse === true),
      'sparse',
    );
    const collections = await shop.listCollections().toArray();
    assert.ok(
      collections.some((c) => (c as { options?: Document }).options?.capped === true),
      'capped',
    );
    assert.ok(
      collections.some((c) => c.type === 'view'),
      'view',
    );
    const mixed = await source
      .db('gen_analytics')
      .collection('mixedKeys')
      .find({}, { projection: { _id: 1 }, promoteValues: false })
      .toArray();
    const idTypes = new Set(mixed.map((d) => (d._id as { _bsontype?: string })._bsontype ?? typeof d._id));
    assert.ok(idTypes.size >= 6, `mixed _id types: ${[...idTypes]}`);
  });

  it('two datasets generated with one seed compare equal', async () => {
    assert.deepEqual(await compareClusters(pair.cluster0, pair.cluster1), []);
  });

  it('reports exactly one difference for one changed document, with its _id', async () => {
    const orders = destination.db('gen_shop').collection<{ _id: Int32 }>('orders');
    await orders.updateOne({ _id: new Int32(5) }, { $set: { status: 'lost' } });
    try {
      const differences = await compareClusters(pair.cluster0, pair.cluster1);
      assert.equal(differences.length, 1, JSON.stringify(differences));
      const [difference] = differences;
      assert.equal(difference!.kind, 'documents');
      assert.equal(difference!.ns, 'gen_shop.orders');
      const id = difference!.kind === 'documents' ? difference!.firstDifferentId : undefined;
      assert.equal((id as Int32)._bsontype, 'Int32');
      assert.equal(compareBsonValues(id, new Int32(5)), 0);
      // Leaving that namespace out makes the clusters equal again.
      const selector = createNamespaceSelector(undefined, [{ database: 'gen_shop', collections: ['orders'] }]);
      assert.deepEqual(await compareClusters(pair.cluster0, pair.cluster1, { selector }), []);
    } finally {
      const original = await source
        .db('gen_shop')
        .collection<{ _id: Int32 }>('orders')
        .findOne({ _id: new Int32(5) });
      await orders.replaceOne({ _id: new Int32(5) }, original!);
    }
    assert.deepEqual(await compareClusters(pair.cluster0, pair.cluster1), []);
  });

  it('sees a change of BSON type alone (int32 to double of equal value)', async () => {
    const products = destination.db('gen_shop').collection<{ _id: string; stock: unknown }>('products');
    const product = await products.findOne({ _id: 'SKU-000003' });
    await products.updateOne({ _id: 'SKU-000003' }, { $set: { stock: new Double((product!.stock as Int32).value) } });
    try {
      const differences = await compareClusters(pair.cluster0, pair.cluster1);
      assert.deepEqual(
        differences.map((d) => [d.kind, d.ns, d.kind === 'documents' ? d.firstDifferentId : undefined]),
        [['documents', 'gen_shop.products', 'SKU-000003']],
      );
    } finally {
      await products.updateOne({ _id: 'SKU-000003' }, { $set: { stock: product!.stock } });
    }
  });

  it('compares indexes as restored or in their temporary sync form', async () => {
    const shop = destination.db('gen_shop');
    const pageViews = destination.db('gen_analytics').collection('pageViews');
    const stock = destination.db('gen_inventory').collection('stock');
    // What Ferry builds on the destination during sync: unique → not unique, TTL → max, hidden → visible.
    await shop.collection('customers').dropIndex('email_unique');
    await shop.collection('customers').createIndex({ email: 1 }, { name: 'email_unique' });
    await stock.dropIndex('warehouse_sku_unique');
    await stock.createIndex({ warehouse: 1, sku: 1 }, { name: 'warehouse_sku_unique' });
    await pageViews.dropIndex('createdAt_ttl');
    await pageViews.createIndex({ createdAt: 1 }, { name: 'createdAt_ttl', expireAfterSeconds: TEMPORARY_TTL_SECONDS });
    await shop.collection('products').dropIndex('category_hidden');
    await shop.collection('products').createIndex({ category: 1 }, { name: 'category_hidden' });

    const exact = await compareClusters(pair.cluster0, pair.cluster1);
    assert.deepEqual(exact.map((d) => (d.kind === 'index' ? `${d.ns} ${d.name}` : d.kind)).sort(), [
      'gen_analytics.pageViews createdAt_ttl',
      'gen_inventory.stock warehouse_sku_unique',
      'gen_shop.customers email_unique',
      'gen_shop.products category_hidden',
    ]);
    assert.deepEqual(await compareClusters(pair.cluster0, pair.cluster1, { expectedIndex: temporaryIndexForm }), []);
  });

  it('reports a namespace that exists on one side only', async () => {
    await destination.db('gen_inventory').collection('labels').drop();
    const differences = await compareClusters(pair.cluster0, pair.cluster1, {
      selector: createNamespaceSelector([{ database: 'gen_inventory', collections: ['labels'] }]),
    });
    assert.deepEqual(differences, [{ kind: 'missingNamespace', ns: 'gen_inventory.labels', missingOn: 'destination' }]);
  });

  it('refuses to write over existing generator databases unless asked to drop them', async () => {
    await assert.rejects(generateDataset({ uri: pair.cluster0, sizeMB: 0.1, seed: 1 }), GeneratorTargetNotEmptyError);
  });

  it('runs from the command line and fails with one line on bad flags', () => {
    const bad = spawnSync(process.execPath, [GENERATE_MAIN, '--uri', pair.cluster0, '--sizeMB', 'lots'], {
      encoding: 'utf8',
    });
    assert.notEqual(bad.status, 0);
    assert.match(bad.stderr, /sizeMB/);
    assert.equal(bad.stderr.trim().split('\n').length, 1);

    const good = spawnSync(
      process.execPath,
      [GENERATE_MAIN, '--uri', pair.cluster0, '--sizeMB', '0.05', '--seed', '3', '--prefix', 'cli_'],
      { encoding: 'utf8' },
    );
    assert.equal(good.status, 0, good.stderr);
    const printed = JSON.parse(good.stdout) as GenerateReport;
    assert.equal(printed.seed, 3);
    assert.ok(printed.databases.every((db) => db.startsWith('cli_')));
  });
});
