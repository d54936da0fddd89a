/**
 * The server side of MongoDB's own tools: `local.oplog.rs` read with `find` in mongod's entry
 * format (mongodump --oplog), `applyOps` (mongorestore --oplogReplay, --preserveUUID),
 * `_mergeAuthzCollections` (restoring users), and the `profile` command with `system.profile`.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { type Document, UUID } from 'mongodb';
import { conformance } from './harness.js';

conformance('tools support', (target) => {
  const db = () => target().db;
  const oplog = () => target().client.db('local').collection('oplog.rs');
  const entriesOf = (ns: string) =>
    oplog()
      .find({ ns }, { sort: { $natural: 1 } })
      .toArray();

  test('local.oplog.rs lists writes in mongod entry format', async () => {
    const coll = db().collection('tools_oplog');
    const ns = coll.namespace;
    await coll.insertOne({ _id: 1, a: 1, s: 'x' } as never);
    await coll.updateOne({ _id: 1 } as never, { $set: { a: 2 }, $unset: { s: '' } });
    await coll.replaceOne({ _id: 1 } as never, { b: 3 });
    await coll.deleteOne({ _id: 1 } as never);
    const entries = await entriesOf(ns);
    assert.deepEqual(
      entries.map((e) => e.op),
      ['i', 'u', 'u', 'd'],
    );
    const [insert, update, replace, remove] = entries;
    for (const entry of entries) {
      for (const field of ['op', 'ns', 'ui', 'o', 'ts', 't', 'v', 'wall']) assert.ok(field in entry, `${entry.op} has ${field}`);
      assert.ok(entry.ui instanceof UUID || entry.ui?.sub_type === 4, 'ui is the collection UUID');
      assert.ok(entry.wall instanceof Date);
    }
    assert.deepEqual(insert.o, { _id: 1, a: 1, s: 'x' });
    assert.deepEqual(insert.o2, { _id: 1 });
    // Each write at a later cluster time than the one before (an insert keeps its timestamp as two numbers).
    for (let i = 1; i < entries.length; i++) assert.ok(entries[i]!.ts.greaterThan(entries[i - 1]!.ts), `entry ${i} is later`);
    assert.deepEqual(update.o, { $v: 2, diff: { d: { s: false }, u: { a: 2 } } });
    assert.deepEqual(update.o2, { _id: 1 });
    assert.deepEqual(replace.o, { _id: 1, b: 3 });
    assert.deepEqual(remove.o, { _id: 1 });
    // The creation is a command entry of the database.
    const [created] = await oplog()
      .find({ ns: `${db().databaseName}.$cmd`, 'o.create': 'tools_oplog' })
      .toArray();
    assert.equal(created.op, 'c');
    assert.deepEqual(created.o.idIndex, { v: 2, key: { _id: 1 }, name: '_id_' });
  });

  test('local.oplog.rs: newest entry first with $natural: -1, and ts ranges', async () => {
    const coll = db().collection('tools_oplog_ts');
    await coll.insertOne({ n: 1 });
    const [first] = await entriesOf(coll.namespace);
    await coll.insertOne({ n: 2 });
    await coll.insertOne({ n: 3 });
    const [newest] = await oplog()
      .find({}, { sort: { $natural: -1 }, limit: 1 })
      .toArray();
    assert.ok(newest.ts.greaterThanOrEqual ? newest.ts.greaterThanOrEqual(first.ts) : newest.ts >= first.ts);
    const since = await oplog()
      .find({ $and: [{ ts: { $gt: first.ts } }, { ns: coll.namespace }] })
      .toArray();
    assert.deepEqual(
      since.map((e) => e.o.n),
      [2, 3],
    );
  });

  test('a transaction is one applyOps entry with the session fields', async () => {
    const coll = db().collection('tools_oplog_txn');
    await coll.insertOne({ setup: true });
    const session = target().client.startSession();
    try {
      await session.withTransaction(async () => {
        await coll.insertOne({ t: 1 }, { session });
        await coll.insertOne({ t: 2 }, { session });
      });
    } finally {
      await session.endSession();
    }
    const [entry] = await oplog().find({ op: 'c', 'o.applyOps.ns': coll.namespace }).toArray();
    assert.equal(entry.ns, 'admin.$cmd');
    assert.ok(entry.lsid?.id, 'lsid');
    assert.ok(entry.txnNumber !== undefined, 'txnNumber');
    assert.deepEqual(
      entry.o.applyOps.map((op: Document) => [op.op, op.ns, op.o.t]),
      [
        ['i', coll.namespace, 1],
        ['i', coll.namespace, 2],
      ],
    );
  });

  test('applyOps applies inserts, deltas, deletes and commands (a create keeps its ui)', async () => {
    const name = `${db().databaseName}.tools_apply`;
    const ui = new UUID();
    const admin = target().client.db('admin');
    const reply = await admin.command({
      applyOps: [
        { op: 'c', ns: `${db().databaseName}.$cmd`, ui, o: { create: 'tools_apply' } },
        { op: 'i', ns: name, ui, o: { _id: 1, a: 1, nested: { keep: true } } },
        { op: 'i', ns: name, ui, o: { _id: 2, a: 2 } },
        { op: 'u', ns: name, ui, o2: { _id: 1 }, o: { $v: 2, diff: { u: { a: 10 }, snested: { i: { added: 'yes' } } } } },
        { op: 'd', ns: name, ui, o: { _id: 2 } },
        // Idempotent application: an insert of an existing _id replaces it.
        { op: 'i', ns: name, ui, o: { _id: 3, a: 3 } },
        { op: 'i', ns: name, ui, o: { _id: 3, a: 33 } },
      ],
    });
    assert.equal(reply.applied, 7);
    assert.deepEqual(reply.results, [true, true, true, true, true, true, true]);
    const docs = await db()
      .collection('tools_apply')
      .find({}, { sort: { _id: 1 } })
      .toArray();
    assert.deepEqual(docs, [
      { _id: 1, a: 10, nested: { keep: true, added: 'yes' } },
      { _id: 3, a: 33 },
    ]);
    const [info] = (await db().listCollections({ name: 'tools_apply' }).toArray()) as Document[];
    assert.equal(Buffer.from(info.info.uuid.buffer).toString('hex'), Buffer.from(ui.buffer).toString('hex'));
    await assert.rejects(admin.command({ applyOps: [{ op: 'x', ns: name, o: {} }] }), { code: 2 });
  });

  test('_mergeAuthzCollections puts back users from a temporary collection', async () => {
    const dbName = db().databaseName;
    const admin = target().client.db('admin');
    await db().command({ createUser: 'tools_user', pwd: 'secret-pw', roles: [] });
    const [stored] = await admin
      .collection('system.users')
      .find({ _id: `${dbName}.tools_user` } as never)
      .toArray();
    assert.ok(stored?.credentials?.['SCRAM-SHA-256'], 'the user is stored with its credentials');
    await db().command({ dropUser: 'tools_user' });
    const temp = admin.collection(`tools_tempusers_${process.pid}`);
    try {
      await temp.insertOne(stored);
      await admin.command({ _mergeAuthzCollections: 1, tempUsersCollection: `admin.${temp.collectionName}`, drop: false, db: dbName });
      const info = await db().command({ usersInfo: 'tools_user' });
      assert.deepEqual(
        info.users.map((u: Document) => u.user),
        ['tools_user'],
      );
    } finally {
      await temp.drop().catch(() => {});
      await db()
        .command({ dropUser: 'tools_user' })
        .catch(() => {});
    }
  });

  test('profile levels 0-2 and system.profile as mongod keeps them', async () => {
    const pdb = db();
    const initial = await pdb.command({ profile: -1 });
    assert.equal(initial.was, 0);
    assert.equal(initial.slowms, 100);
    assert.equal(initial.sampleRate, 1);
    try {
      const set = await pdb.command({ profile: 2 });
      assert.equal(set.was, 0);
      const [info] = (await pdb.listCollections({ name: 'system.profile' }).toArray()) as Document[];
      assert.equal(info.options.capped, true);
      assert.equal(info.options.size, 1048576);
      const coll = pdb.collection('tools_profiled');
      await coll.insertOne({ a: 1 });
      await coll.find({ a: 1 }).toArray();
      await coll.updateOne({ a: 1 }, { $set: { b: 1 } });
      await coll.deleteOne({ a: 1 });
      await coll.countDocuments({});
      const ops = await pdb.collection('system.profile').find({ ns: coll.namespace }).toArray();
      const byOp = (op: string) => ops.find((d) => d.op === op);
      assert.equal(byOp('insert')?.ninserted, 1);
      assert.deepEqual(byOp('query')?.command?.filter, { a: 1 });
      assert.equal(byOp('query')?.nreturned, 1);
      assert.equal(byOp('update')?.nModified, 1);
      assert.equal(byOp('remove')?.ndeleted, 1);
      assert.ok(
        ops.some((d) => d.op === 'command' && d.command?.aggregate === 'tools_profiled'),
        'countDocuments is an aggregate command',
      );
      for (const doc of ops) {
        assert.equal(typeof doc.millis, 'number');
        assert.ok(doc.ts instanceof Date);
        assert.equal(doc._id, undefined, 'profile documents have no _id');
      }
      // Level 1 with a high slowms records nothing of these fast operations; level 0 nothing at all.
      assert.equal((await pdb.command({ profile: 1, slowms: 100000 })).was, 2);
      await coll.insertOne({ a: 2 });
      await pdb.command({ profile: 0 });
      await coll.insertOne({ a: 3 });
      const after = await pdb.collection('system.profile').countDocuments({ ns: coll.namespace, op: 'insert' });
      assert.equal(after, 1);
      await assert.rejects(pdb.command({ profile: 5 }), { code: 2 });
    } finally {
      await pdb.command({ profile: 0, slowms: 100 });
      await pdb
        .collection('system.profile')
        .drop()
        .catch(() => {});
    }
  });
});
