/**
 * Access control on a test cluster started with users (a real deployment's users are not
 * ours to create): SCRAM-SHA-256 and SCRAM-SHA-1 through the driver, failures, Unauthorized
 * for unauthenticated and unprivileged commands, built-in roles, and user management.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { Binary, MongoClient } from 'mongodb';
import { readdir } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { spawnCluster, startCluster, type ClusterHandle } from '../cluster/index.js';

describe('access control [test cluster]', () => {
  let cluster: ClusterHandle;
  let host: string;
  const clients: MongoClient[] = [];

  async function connect(user: string, password: string, extra = ''): Promise<MongoClient> {
    const client = await MongoClient.connect(
      `mongodb://${encodeURIComponent(user)}:${encodeURIComponent(password)}@${host}/?replicaSet=rs0${extra}`,
      {
        serverSelectionTimeoutMS: 3000,
      },
    );
    clients.push(client);
    return client;
  }

  before(async () => {
    cluster = await startCluster({
      users: [
        { user: 'root', password: 'r00t pässword', roles: ['root'] },
        { user: 'reader', db: 'shop', password: 'reader-pw', roles: ['read'] },
        { user: 'legacy', password: 'legacy-pw', roles: ['readWriteAnyDatabase'], mechanisms: ['SCRAM-SHA-1'] },
      ],
    });
    host = new URL(cluster.uri).host;
  });

  after(async () => {
    for (const client of clients) await client.close();
    await cluster?.stop();
  });

  test('the driver authenticates with SCRAM-SHA-256 and SCRAM-SHA-1', async () => {
    for (const mechanism of ['SCRAM-SHA-256', 'SCRAM-SHA-1']) {
      const client = await connect('root', 'r00t pässword', `&authMechanism=${mechanism}`);
      const status = await client.db('admin').command({ connectionStatus: 1 });
      assert.deepEqual(status.authInfo.authenticatedUsers, [{ user: 'root', db: 'admin' }]);
      assert.deepEqual(status.authInfo.authenticatedUserRoles, [{ role: 'root', db: 'admin' }]);
    }
    // Negotiated: a user with SHA-1 credentials only is offered just that mechanism.
    const legacy = await connect('legacy', 'legacy-pw');
    assert.equal((await legacy.db('admin').command({ ping: 1 })).ok, 1);
  });

  test('hello lists the mechanisms a user has credentials for', async () => {
    const client = await connect('root', 'r00t pässword');
    const hello = await client.db('admin').command({ hello: 1, saslSupportedMechs: 'admin.legacy' });
    assert.deepEqual(hello.saslSupportedMechs, ['SCRAM-SHA-1']);
    const both = await client.db('admin').command({ hello: 1, saslSupportedMechs: 'shop.reader' });
    assert.deepEqual([...both.saslSupportedMechs].sort(), ['SCRAM-SHA-1', 'SCRAM-SHA-256']);
    const unknown = await client.db('admin').command({ hello: 1, saslSupportedMechs: 'admin.nobody' });
    assert.equal(unknown.saslSupportedMechs, undefined);
  });

  test('a wrong password or unknown user fails with AuthenticationFailed', async () => {
    await assert.rejects(connect('root', 'wrong'), { code: 18, codeName: 'AuthenticationFailed' });
    await assert.rejects(connect('nobody', 'whatever'), { code: 18, codeName: 'AuthenticationFailed' });
  });

  test('unauthenticated commands fail with Unauthorized; the handshake does not', async () => {
    const anonymous = await MongoClient.connect(cluster.uri);
    clients.push(anonymous);
    assert.equal((await anonymous.db('admin').command({ ping: 1 })).ok, 1);
    await assert.rejects(anonymous.db('shop').collection('items').findOne(), { code: 13, codeName: 'Unauthorized' });
    await assert.rejects(anonymous.db('shop').command({ listCollections: 1 }), { code: 13 });
    await assert.rejects(anonymous.db('admin').command({ saslStart: 1, mechanism: 'PLAIN', payload: new Binary(Buffer.from('\0u\0p')) }), {
      code: 334,
      codeName: 'MechanismUnavailable',
    });
  });

  test('built-in roles grant what they name and nothing more', async () => {
    const root = await connect('root', 'r00t pässword');
    await root
      .db('shop')
      .collection('items')
      .insertOne({ _id: 1 } as never);
    const reader = await MongoClient.connect(`mongodb://reader:reader-pw@${host}/shop?replicaSet=rs0`);
    clients.push(reader);
    assert.deepEqual(await reader.db('shop').collection('items').find().toArray(), [{ _id: 1 }]);
    await assert.rejects(
      reader
        .db('shop')
        .collection('items')
        .insertOne({ _id: 2 } as never),
      { code: 13 },
    );
    await assert.rejects(reader.db('other').collection('items').findOne(), { code: 13 });
    await assert.rejects(reader.db('admin').command({ serverStatus: 1 }), { code: 13 });
    const visible = await reader.db('admin').command({ listDatabases: 1, nameOnly: true });
    assert.deepEqual(
      visible.databases.map((d: { name: string }) => d.name),
      ['shop'],
      'only the databases it has privileges on',
    );
    await assert.rejects(reader.db('admin').command({ listDatabases: 1, authorizedDatabases: false }), { code: 13 });
    const legacy = await connect('legacy', 'legacy-pw');
    await legacy.db('anywhere').collection('x').insertOne({ ok: true });
    await assert.rejects(legacy.db('admin').command({ setUserWriteBlockMode: 1, global: true }), { code: 13 });
  });

  test('createUser, usersInfo and dropUser manage users', async () => {
    const root = await connect('root', 'r00t pässword');
    const shop = root.db('shop');
    await shop.command({ createUser: 'clerk', pwd: 'clerk-pw', roles: ['readWrite'] });
    await assert.rejects(shop.command({ createUser: 'clerk', pwd: 'again', roles: [] }), { code: 51003 });
    await assert.rejects(shop.command({ createUser: 'ghost', pwd: 'x', roles: ['noSuchRole'] }), { code: 31, codeName: 'RoleNotFound' });
    const info = await shop.command({ usersInfo: 'clerk' });
    assert.equal(info.users.length, 1);
    assert.equal(info.users[0]._id, 'shop.clerk');
    assert.deepEqual(info.users[0].roles, [{ role: 'readWrite', db: 'shop' }]);
    assert.deepEqual([...info.users[0].mechanisms].sort(), ['SCRAM-SHA-1', 'SCRAM-SHA-256']);
    const clerk = await MongoClient.connect(`mongodb://clerk:clerk-pw@${host}/shop?replicaSet=rs0`);
    clients.push(clerk);
    await clerk.db('shop').collection('items').insertOne({ by: 'clerk' });
    await shop.command({ dropUser: 'clerk' });
    await assert.rejects(shop.command({ dropUser: 'clerk' }), { code: 11, codeName: 'UserNotFound' });
    await assert.rejects(MongoClient.connect(`mongodb://clerk:clerk-pw@${host}/shop?replicaSet=rs0&serverSelectionTimeoutMS=2000`), {
      code: 18,
    });
  });

  test('a spawned cluster gets its users through a file it does not leave behind', async () => {
    const leftovers = async () => (await readdir(tmpdir())).filter((name) => name.startsWith('ferry-cluster-users-'));
    const before = await leftovers();
    const child = await spawnCluster({ users: [{ user: 'ops', password: 'ops-pw', roles: ['clusterMonitor'] }] });
    try {
      const client = await MongoClient.connect(`mongodb://ops:ops-pw@${new URL(child.uri).host}/?replicaSet=rs0`);
      clients.push(client);
      assert.equal((await client.db('admin').command({ serverStatus: 1 })).ok, 1);
      await assert.rejects(client.db('x').collection('y').insertOne({}), { code: 13 });
      assert.deepEqual(await leftovers(), before, 'the users file is gone once the child listens');
    } finally {
      await child.stop();
    }
  });
});
