/**
 * MongoDB's own tools against the test cluster: generated data (plus a time-series and a
 * clustered collection) round-trips through `mongodump --archive --oplog | mongorestore --archive
 * --oplogReplay --drop --preserveUUID` while a writer keeps inserting and updating, from a source
 * started with users to a destination started with its own root user. Checked: every namespace equal
 * (documents byte for byte, options, indexes), collection UUIDs kept, the writes made during the
 * dump replayed from its oplog, and the source's users restored (they can log in).
 *
 * The tools are `../shared/peers/mongo-tools/` relative to the project root; without them the
 * test is skipped with a message. It needs two deployments, so it runs on test clusters only.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { join } from 'node:path';
import { MongoClient, type Document } from 'mongodb';
import { startCluster, type ClusterHandle } from '../cluster/index.js';
import { generateDataset } from '../../scripts/generate.js';
import { compareClusters } from '../../scripts/lib/compare-clusters.js';
import { createNamespaceSelector } from '../../src/plan/namespaces.js';

const projectRoot = fileURLToPath(new URL('../../../', import.meta.url));
const TOOLS = join(projectRoot, '..', 'shared', 'peers', 'mongo-tools');
const missing = ['mongodump', 'mongorestore'].some((tool) => !existsSync(join(TOOLS, tool)));
const skip = missing ? `MongoDB's tools are not in ${TOOLS}` : false;

const ROOT = { user: 'root', password: 'rootpw', roles: ['root'] };

function withUser(uri: string, user: string, password: string, authSource = 'admin'): string {
  const url = new URL(uri);
  url.username = user;
  url.password = password;
  url.searchParams.set('authSource', authSource);
  return url.toString();
}

/** Runs `mongodump | mongorestore` with the given flags; resolves with their exit codes and logs. */
async function dumpAndRestore(from: string, to: string, dumpFlags: string[], restoreFlags: string[]) {
  const dump = spawn(join(TOOLS, 'mongodump'), [`--uri=${from}`, '--archive', ...dumpFlags], { stdio: ['ignore', 'pipe', 'pipe'] });
  const restore = spawn(join(TOOLS, 'mongorestore'), [`--uri=${to}`, '--archive', ...restoreFlags], { stdio: ['pipe', 'ignore', 'pipe'] });
  dump.stdout.pipe(restore.stdin);
  restore.stdin.on('error', () => {}); // a failed restore closes the pipe: the exit codes say so
  let log = '';
  dump.stderr.on('data', (d) => (log += String(d)));
  restore.stderr.on('data', (d) => (log += String(d)));
  const exited = (child: ChildProcess) => new Promise<number | null>((resolve) => child.once('exit', resolve));
  const [dumpCode, restoreCode] = await Promise.all([exited(dump), exited(restore)]);
  return { dumpCode, restoreCode, log };
}

describe('mongodump | mongorestore round trip [test cluster]', { skip }, () => {
  let source: ClusterHandle;
  let destination: ClusterHandle;
  let sourceClient: MongoClient;
  let destinationClient: MongoClient;
  let sourceUri: string;
  let destinationUri: string;

  before(async () => {
    source = await startCluster({ users: [ROOT], noopIntervalMs: 0 });
    // With --drop the restore replaces the destination's users by the dump's: the same root on both.
    destination = await startCluster({ users: [ROOT], noopIntervalMs: 0 });
    sourceUri = withUser(source.uri, ROOT.user, ROOT.password);
    destinationUri = withUser(destination.uri, ROOT.user, ROOT.password);
    sourceClient = await MongoClient.connect(sourceUri);
    destinationClient = await MongoClient.connect(destinationUri);
  });
  after(async () => {
    await sourceClient?.close();
    await destinationClient?.close();
    await source?.stop();
    await destination?.stop();
  });

  test('data, oplog writes made during the dump, UUIDs and users arrive equal', async () => {
    await generateDataset({ uri: sourceUri, sizeMB: 2, seed: 11 });
    const extra = sourceClient.db('tools_extra');
    await extra.createCollection('readings', { timeseries: { timeField: 't', metaField: 'm' }, expireAfterSeconds: 86400 * 365 * 50 });
    await extra
      .collection('readings')
      .insertMany(Array.from({ length: 40 }, (_, i) => ({ t: new Date(Date.UTC(2024, 0, 1, 0, i)), m: { sensor: i % 3 }, v: i })));
    await extra.createCollection('events', { clusteredIndex: { key: { _id: 1 }, unique: true } } as Document);
    await extra.collection('events').insertMany([{ _id: 2 }, { _id: 1 }] as never[]);
    await sourceClient.db('tools_app').command({ createUser: 'app', pwd: 'apppw', roles: [{ role: 'readWrite', db: 'tools_app' }] });

    // A writer inserts and then updates documents for the whole dump: its writes land in the oplog.
    const live = extra.collection<{ _id: number; i: number; x?: { y: number }; tags?: number[] }>('live');
    const before = 20;
    for (let i = 0; i < before; i++) await live.insertOne({ _id: i, i });
    let writing = true;
    const writer = (async () => {
      for (let i = before; writing; i++) {
        await live.insertOne({ _id: i, i });
        await live.updateOne({ _id: i }, { $set: { 'x.y': i }, $push: { tags: i } });
      }
    })();
    const run = await dumpAndRestore(sourceUri, destinationUri, ['--oplog'], ['--oplogReplay', '--drop', '--preserveUUID']);
    writing = false;
    await writer;
    assert.equal(run.dumpCode, 0, run.log);
    assert.equal(run.restoreCode, 0, run.log);
    assert.match(run.log, /dumped [1-9]\d* oplog entr/, 'the dump captured oplog entries');

    // Everything but the live collection is exactly the source's.
    const selector = createNamespaceSelector(undefined, [{ database: 'tools_extra', collections: ['live'] }]);
    assert.deepEqual(await compareClusters(sourceUri, destinationUri, { selector }), []);

    // The time-series buckets (system collections, which the comparison leaves out) too.
    const buckets = (client: MongoClient) =>
      client
        .db('tools_extra')
        .collection('system.buckets.readings')
        .find({}, { sort: { _id: 1 } })
        .toArray();
    assert.deepEqual(await buckets(destinationClient), await buckets(sourceClient));

    // The live collection holds a prefix of the writer's documents, longer than before the dump:
    // the dump's oplog was replayed. Each but the newest (its update may postdate the dump) is the source's.
    const restored = await destinationClient
      .db('tools_extra')
      .collection('live')
      .find({}, { sort: { _id: 1 } })
      .toArray();
    assert.ok(restored.length > before, `writes made during the dump were replayed (${restored.length} documents)`);
    assert.deepEqual(
      restored.map((d) => d._id),
      restored.map((_, i) => i),
    );
    const originals = await live.find({ _id: { $lt: restored.length - 1 } }, { sort: { _id: 1 } }).toArray();
    assert.deepEqual(restored.slice(0, -1), originals);

    // UUIDs kept, users restored.
    for (const [db, name] of [
      ['gen_shop', 'orders'],
      ['tools_extra', 'events'],
    ]) {
      const uuidOf = async (client: MongoClient) =>
        ((await client.db(db).listCollections({ name }).toArray())[0] as Document).info.uuid.toString('hex');
      assert.equal(await uuidOf(destinationClient), await uuidOf(sourceClient), `${db}.${name} keeps its UUID`);
    }
    const app = await MongoClient.connect(withUser(destination.uri, 'app', 'apppw', 'tools_app'));
    try {
      const status = await app.db('tools_app').command({ connectionStatus: 1 });
      assert.deepEqual(status.authInfo.authenticatedUsers, [{ user: 'app', db: 'tools_app' }]);
    } finally {
      await app.close();
    }
  });
});
