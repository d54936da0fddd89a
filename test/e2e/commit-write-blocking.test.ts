/**
 * User write blocking through the real `ferry` process, on test clusters started with users
 * (with access control off every client bypasses blocking, as on mongod): Ferry connects as a
 * `root` user (it bypasses blocking), the application as a `readWriteAnyDatabase` user.
 *
 * - `sourceAndDestination`: the application cannot write to the destination during the whole
 *   sync, nor to the source once commit is received (it stays blocked: the application has
 *   moved); the destination takes its writes once COMMITTED. Ferry's own writes always go through.
 * - `destinationOnly` (the default): the destination is blocked until COMMITTED, the source never.
 * - A Ferry user who cannot bypass write blocking is refused at start, before anything is written.
 *   (Reversible syncs, whose source stays blocked until a reverse: reverse*.test.ts.)
 * Skipped against real deployments (users cannot be created there by the test).
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { Document } from 'bson';
import { MongoClient, MongoServerError } from 'mongodb';
import { spawnCluster, type ClusterHandle } from '../cluster/index.js';
import { RUN } from './copy-fixtures.js';
import { startFerry, type FerryProcess } from './ferry-process.js';
import { METADATA_DATABASE } from '../../src/domain/namespaces.js';

const USERS = [
  { user: 'ferry', password: 'ferry-pw', roles: ['root'] },
  { user: 'app', password: 'app-pw', roles: ['readWriteAnyDatabase'] },
  { user: 'weak', password: 'weak-pw', roles: ['readWriteAnyDatabase', 'clusterMonitor', 'backup'] },
];
const local = !(process.env.FERRY_TEST_CLUSTER0_URI && process.env.FERRY_TEST_CLUSTER1_URI);

function as(uri: string, user: string, password: string): string {
  const url = new URL(uri);
  url.username = user;
  url.password = password;
  return url.toString();
}

async function refused(write: Promise<unknown>): Promise<boolean> {
  try {
    await write;
    return false;
  } catch (error) {
    if (
      error instanceof MongoServerError &&
      (error.code === 371 || error.codeName === 'UserWritesBlocked' || String(error.message).includes('User writes blocked'))
    )
      return true;
    throw error;
  }
}

describe('write blocking', { skip: local ? false : 'needs test clusters started with users' }, () => {
  let source: ClusterHandle;
  let destination: ClusterHandle;
  let appSource: MongoClient;
  let appDestination: MongoClient;

  before(async () => {
    [source, destination] = await Promise.all([spawnCluster({ users: USERS }), spawnCluster({ users: USERS })]);
    appSource = await MongoClient.connect(as(source.uri, 'app', 'app-pw'));
    appDestination = await MongoClient.connect(as(destination.uri, 'app', 'app-pw'));
  });

  after(async () => {
    await Promise.allSettled([appSource?.close(), appDestination?.close()]);
    await Promise.allSettled([source?.stop(), destination?.stop()]);
  });

  async function ferryFor(id: string, user = 'ferry', password = 'ferry-pw'): Promise<FerryProcess> {
    return startFerry([
      '--cluster0',
      as(source.uri, user, password),
      '--cluster1',
      as(destination.uri, user, password),
      '--id',
      `${id}-${RUN}`,
    ]);
  }

  it('sourceAndDestination: destination blocked during the sync, source from commit on; Ferry writes throughout', async () => {
    const db = `wb_both_${RUN}`;
    await appSource
      .db(db)
      .collection('orders')
      .insertOne({ _id: 1 } as Document);
    const ferry = await ferryFor('wb-both');
    try {
      const started = await ferry.post('start', {
        source: 'cluster0',
        destination: 'cluster1',
        enableUserWriteBlocking: 'sourceAndDestination',
        includeNamespaces: [{ database: db }],
      });
      assert.equal(started.status, 200, JSON.stringify(started.body));
      await ferry.waitForProgress((p) => p.canCommit === true, 60_000);
      assert.equal(
        await refused(
          appDestination
            .db(db)
            .collection('orders')
            .insertOne({ _id: 'early' } as Document),
        ),
        true,
        'destination blocked during the sync',
      );
      assert.equal(
        await refused(
          appSource
            .db(db)
            .collection('orders')
            .insertOne({ _id: 2 } as Document),
        ),
        false,
        'source writable before commit',
      );

      assert.equal((await ferry.post('commit', {})).status, 200);
      assert.equal(
        await refused(
          appSource
            .db(db)
            .collection('orders')
            .insertOne({ _id: 3 } as Document),
        ),
        true,
        'source blocked from commit on',
      );
      await ferry.waitForProgress((p) => p.state === 'COMMITTED', 60_000);
      assert.equal(
        await refused(
          appDestination
            .db(db)
            .collection('orders')
            .insertOne({ _id: 'after' } as Document),
        ),
        false,
        'destination writable once committed',
      );
      assert.equal(
        await refused(
          appSource
            .db(db)
            .collection('orders')
            .insertOne({ _id: 4 } as Document),
        ),
        true,
        'source stays blocked',
      );
      const ids = (await appDestination.db(db).collection('orders').find().toArray()).map((d) => d._id);
      assert.deepEqual(ids.sort(), [1, 2, 'after'].sort(), 'Ferry applied the write made before commit');
    } finally {
      assert.equal(await ferry.stop(), 0);
      const admin = await MongoClient.connect(as(source.uri, 'ferry', 'ferry-pw'));
      await admin.db('admin').command({ setUserWriteBlockMode: 1, global: false });
      await admin.close();
    }
  });

  it('destinationOnly (the default): the destination is blocked until COMMITTED, the source never', async () => {
    const db = `wb_dest_${RUN}`;
    await appSource
      .db(db)
      .collection('items')
      .insertOne({ _id: 1 } as Document);
    const ferry = await ferryFor('wb-dest');
    try {
      assert.equal(
        (await ferry.post('start', { source: 'cluster0', destination: 'cluster1', includeNamespaces: [{ database: db }] })).status,
        200,
      );
      await ferry.waitForProgress((p) => p.canCommit === true, 60_000);
      assert.equal(
        await refused(
          appDestination
            .db(db)
            .collection('items')
            .insertOne({ _id: 'early' } as Document),
        ),
        true,
      );
      assert.equal((await ferry.post('commit', {})).status, 200);
      await ferry.waitForProgress((p) => p.state === 'COMMITTED', 60_000);
      assert.equal(
        await refused(
          appSource
            .db(db)
            .collection('items')
            .insertOne({ _id: 2 } as Document),
        ),
        false,
      );
      assert.equal(
        await refused(
          appDestination
            .db(db)
            .collection('items')
            .insertOne({ _id: 3 } as Document),
        ),
        false,
      );
    } finally {
      assert.equal(await ferry.stop(), 0);
    }
  });

  it('refuses to start with a user who cannot bypass write blocking, naming the privilege, and writes nothing', async () => {
    const db = `wb_weak_${RUN}`;
    await appSource
      .db(db)
      .collection('items')
      .insertOne({ _id: 1 } as Document);
    const ferry = await ferryFor('wb-weak', 'weak', 'weak-pw');
    try {
      const started = await ferry.post('start', { source: 'cluster0', destination: 'cluster1', includeNamespaces: [{ database: db }] });
      assert.equal(started.status, 422, JSON.stringify(started.body));
      assert.equal(started.body.error, 'InsufficientPrivileges');
      assert.match(started.body.errorDescription, /bypassWriteBlockingMode/);
      assert.equal((await ferry.progress()).state, 'IDLE');
      assert.equal(
        await refused(
          appDestination
            .db(db)
            .collection('items')
            .insertOne({ _id: 'still writable' } as Document),
        ),
        false,
        'the destination was not blocked',
      );
      const root = await MongoClient.connect(as(destination.uri, 'ferry', 'ferry-pw'));
      try {
        assert.equal(
          await root
            .db(METADATA_DATABASE)
            .collection('resume')
            .countDocuments({ _id: `wb-weak-${RUN}` } as Document),
          0,
        );
      } finally {
        await root.close();
      }
    } finally {
      assert.equal(await ferry.stop(), 0);
    }
  });
});
