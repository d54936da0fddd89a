/**
 * User write blocking (setUserWriteBlockMode). Who may bypass it depends on access control:
 * with it off every client bypasses (mongod: "isAuthEnabled() ? privilege : true"), with it on
 * only holders of bypassWriteBlockingMode (restore, root) do. The first part runs against any
 * target whose client is not authenticated; the second on a test cluster started with users.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { MongoClient } from 'mongodb';
import { startCluster, type ClusterHandle } from '../cluster/index.js';
import { conformance } from './harness.js';

conformance('write blocking without access control', (target) => {
  test('setUserWriteBlockMode is an admin command that toggles serverStatus.repl.userWriteBlockMode', async (t) => {
    const admin = target().client.db('admin');
    await assert.rejects(target().db.command({ setUserWriteBlockMode: 1, global: true }), { code: 13, codeName: 'Unauthorized' });
    await assert.rejects(admin.command({ setUserWriteBlockMode: 1 }), { code: 40414 });
    const status = await admin.command({ connectionStatus: 1 });
    if (status.authInfo.authenticatedUsers.length > 0) return t.skip('the target runs with access control');
    try {
      await admin.command({ setUserWriteBlockMode: 1, global: true });
      assert.equal((await admin.command({ serverStatus: 1 })).repl.userWriteBlockMode, 2);
      // Without access control every client holds bypassWriteBlockingMode.
      await target().db.collection('stillWritable').insertOne({ a: 1 });
    } finally {
      await admin.command({ setUserWriteBlockMode: 1, global: false });
    }
    assert.equal((await admin.command({ serverStatus: 1 })).repl.userWriteBlockMode, 1);
  });
});

describe('write blocking with access control [test cluster]', () => {
  let cluster: ClusterHandle;
  let root: MongoClient;
  let app: MongoClient;

  before(async () => {
    cluster = await startCluster({
      users: [
        { user: 'admin', password: 'admin-pw', roles: ['root'] },
        { user: 'app', password: 'app-pw', roles: ['readWriteAnyDatabase', 'dbAdminAnyDatabase'] },
      ],
    });
    const host = new URL(cluster.uri).host;
    root = await MongoClient.connect(`mongodb://admin:admin-pw@${host}/?replicaSet=rs0`);
    app = await MongoClient.connect(`mongodb://app:app-pw@${host}/?replicaSet=rs0`);
    await app
      .db('shop')
      .collection('orders')
      .insertOne({ _id: 1, n: 1 } as never);
  });

  after(async () => {
    await app?.close();
    await root?.close();
    await cluster?.stop();
  });

  test('a user without the privilege may not set the mode', async () => {
    await assert.rejects(app.db('admin').command({ setUserWriteBlockMode: 1, global: true }), { code: 13, codeName: 'Unauthorized' });
  });

  test('while blocked, user writes and DDL fail with UserWritesBlocked; root bypasses', async () => {
    const orders = app.db('shop').collection('orders');
    await root.db('admin').command({ setUserWriteBlockMode: 1, global: true });
    try {
      const blocked = { code: 371, codeName: 'UserWritesBlocked' };
      await assert.rejects(orders.insertOne({ _id: 2 } as never), { code: 371 });
      await assert.rejects(orders.updateOne({ _id: 1 } as never, { $set: { n: 2 } }), { code: 371 });
      await assert.rejects(orders.deleteOne({ _id: 1 } as never), { code: 371 });
      // As on mongod (an op observer refuses each write), every refused document is a write error.
      const unordered = await app.db('shop').command({ insert: 'orders', documents: [{ _id: 5 }, { _id: 6 }], ordered: false });
      assert.equal(unordered.ok, 1);
      assert.equal(unordered.n, 0);
      assert.deepEqual(
        unordered.writeErrors.map((w: { index: number; code: number }) => [w.index, w.code]),
        [
          [0, 371],
          [1, 371],
        ],
      );
      await assert.rejects(app.db('shop').createCollection('more'), blocked);
      await assert.rejects(app.db('shop').command({ drop: 'orders' }), blocked);
      await assert.rejects(app.db('shop').command({ collMod: 'orders', validator: {} }), blocked);
      await assert.rejects(orders.createIndex({ n: 1 }), blocked);
      await assert.rejects(orders.findOneAndUpdate({ _id: 1 } as never, { $set: { n: 3 } }), blocked);
      await assert.rejects(app.db('admin').command({ renameCollection: 'shop.orders', to: 'shop.renamed' }), blocked);
      assert.deepEqual(await orders.find().toArray(), [{ _id: 1, n: 1 }], 'reads still work and nothing changed');
      await root
        .db('shop')
        .collection('orders')
        .insertOne({ _id: 3 } as never);
    } finally {
      await root.db('admin').command({ setUserWriteBlockMode: 1, global: false });
    }
    await orders.insertOne({ _id: 4 } as never);
    assert.deepEqual(
      (await orders.find().sort({ _id: 1 }).toArray()).map((d) => d._id),
      [1, 3, 4],
    );
  });
});
