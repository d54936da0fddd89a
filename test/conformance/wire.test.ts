/**
 * Malformed wire messages over raw sockets: mongod's error replies for OP_MSG parse errors
 * (the connection keeps serving), connection close for fatal ones (oversized or undersized
 * lengths, unknown required flag bits), legacy OP_QUERY limited to the handshake, and other
 * connections unaffected throughout. Large cursor batches stay whole while their connection's
 * client is slow to read and other connections are served meanwhile.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import { BSON } from 'mongodb';
import { conformance } from './harness.js';

const OP_REPLY = 1;
const OP_QUERY = 2004;
const OP_MSG = 2013;
let nextRequestId = 1;

function frame(opCode: number, payload: Buffer, declaredLength?: number): Buffer {
  const header = Buffer.alloc(16);
  header.writeInt32LE(declaredLength ?? 16 + payload.length, 0);
  header.writeInt32LE(nextRequestId++, 4);
  header.writeInt32LE(0, 8);
  header.writeInt32LE(opCode, 12);
  return Buffer.concat([header, payload]);
}

function bson(doc: object): Buffer {
  return Buffer.from(BSON.serialize(doc));
}

function cstring(s: string): Buffer {
  return Buffer.from(`${s}\0`, 'utf8');
}

/** An OP_MSG made of explicit sections (kind byte + bytes). */
function opMsg(sections: Buffer[], flags = 0): Buffer {
  const flagBytes = Buffer.alloc(4);
  flagBytes.writeUInt32LE(flags >>> 0, 0);
  return frame(OP_MSG, Buffer.concat([flagBytes, ...sections]));
}

function body(doc: object): Buffer {
  return Buffer.concat([Buffer.from([0]), bson(doc)]);
}

function sequence(identifier: string, docs: object[]): Buffer {
  const content = Buffer.concat([cstring(identifier), ...docs.map(bson)]);
  const size = Buffer.alloc(4);
  size.writeInt32LE(4 + content.length, 0);
  return Buffer.concat([Buffer.from([1]), size, content]);
}

/** A raw connection that reads one reply per request. */
class RawConnection {
  private buffered = Buffer.alloc(0);
  private waiting: (() => void) | undefined;
  readonly closed: Promise<void>;

  private constructor(private readonly socket: net.Socket) {
    socket.on('data', (chunk: Buffer) => {
      this.buffered = Buffer.concat([this.buffered, chunk]);
      this.waiting?.();
    });
    this.closed = new Promise((resolve) => socket.once('close', () => resolve()));
    this.closed.then(() => this.waiting?.());
    socket.on('error', () => {});
  }

  static async open(host: string, port: number): Promise<RawConnection> {
    const socket = net.connect(port, host);
    await new Promise<void>((resolve, reject) => {
      socket.once('connect', resolve);
      socket.once('error', reject);
    });
    return new RawConnection(socket);
  }

  get isClosed(): boolean {
    return this.socket.destroyed;
  }

  /** Sends a message and returns the reply's document (OP_MSG or OP_REPLY), or undefined if closed. */
  async request(message: Buffer): Promise<Record<string, unknown> | undefined> {
    this.socket.write(message);
    return this.reply();
  }

  /** Sends bytes (one or several messages) without waiting for a reply. */
  send(bytes: Buffer): void {
    this.socket.write(bytes);
  }

  /** The next reply's document, or undefined if closed. */
  async reply(): Promise<Record<string, unknown> | undefined> {
    for (;;) {
      if (this.buffered.length >= 4) {
        const length = this.buffered.readInt32LE(0);
        if (this.buffered.length >= length) {
          const reply = this.buffered.subarray(0, length);
          this.buffered = this.buffered.subarray(length);
          const opCode = reply.readInt32LE(12);
          const docAt = opCode === OP_REPLY ? 16 + 20 : 16 + 4 + 1;
          return BSON.deserialize(reply.subarray(docAt)) as Record<string, unknown>;
        }
      }
      if (this.socket.destroyed) return undefined;
      await new Promise<void>((resolve) => (this.waiting = resolve));
    }
  }

  /** Stops reading the socket (replies wait in the kernel's buffers and then the server's). */
  pause(): void {
    this.socket.pause();
  }

  resume(): void {
    this.socket.resume();
  }

  close(): void {
    this.socket.destroy();
  }
}

conformance('wire protocol', (target) => {
  const address = (): { host: string; port: number } | undefined => {
    const uri = target().uri;
    if (!uri.startsWith('mongodb://') || /[?&](tls|ssl)=true/.test(uri)) return undefined;
    const hostPart = uri.slice('mongodb://'.length).split('/')[0].split('@').pop()!.split(',')[0];
    const [host, port] = hostPart.split(':');
    return { host, port: Number(port ?? 27017) };
  };

  async function open(t: { skip(message: string): void }): Promise<RawConnection | undefined> {
    const at = address();
    if (!at) {
      t.skip('the target is not reachable over a plain socket');
      return undefined;
    }
    return RawConnection.open(at.host, at.port);
  }

  async function stillServing(): Promise<void> {
    assert.equal((await target().client.db('admin').command({ ping: 1 })).ok, 1, 'other connections keep working');
  }

  const ping = () => opMsg([body({ ping: 1, $db: 'admin' })]);

  test('a well-formed OP_MSG gets an OP_MSG reply', async (t) => {
    const connection = await open(t);
    if (!connection) return;
    const reply = await connection.request(opMsg([body({ hello: 1, $db: 'admin' })]));
    assert.equal(reply?.ok, 1);
    assert.equal(reply?.isWritablePrimary, true);
    connection.close();
  });

  test("OP_MSG parse errors get mongod's error replies and the connection keeps serving", async (t) => {
    const connection = await open(t);
    if (!connection) return;
    const cases: [string, Buffer, number][] = [
      ['unknown section kind', opMsg([body({ ping: 1, $db: 'admin' }), Buffer.from([7, 0, 0, 0, 0])]), 40432],
      ['two bodies', opMsg([body({ ping: 1, $db: 'admin' }), body({ ping: 1, $db: 'admin' })]), 40430],
      ['no body', opMsg([sequence('documents', [{ a: 1 }])]), 40587],
      [
        'duplicate sequences',
        opMsg([body({ insert: 'x', $db: 'test' }), sequence('documents', [{ a: 1 }]), sequence('documents', [{ a: 2 }])]),
        40431,
      ],
      [
        'a field both in the body and a sequence',
        opMsg([body({ insert: 'x', documents: [], $db: 'test' }), sequence('documents', [{ a: 1 }])]),
        40433,
      ],
      ['no $db', opMsg([body({ ping: 1 })]), 40571],
    ];
    for (const [what, message, code] of cases) {
      const reply = await connection.request(message);
      assert.ok(reply, `${what}: a reply, not a closed connection`);
      assert.equal(reply.ok, 0, what);
      assert.equal(reply.code, code, what);
      assert.equal((await connection.request(ping()))?.ok, 1, `${what}: the connection still serves`);
    }
    connection.close();
  });

  test('a body that is not valid BSON gets an error reply', async (t) => {
    const connection = await open(t);
    if (!connection) return;
    const broken = bson({ ping: 1, $db: 'admin' });
    broken.writeInt32LE(broken.length + 100, 0); // claims more bytes than the section has
    const reply = await connection.request(opMsg([Buffer.concat([Buffer.from([0]), broken])]));
    assert.equal(reply?.ok, 0);
    assert.equal((await connection.request(ping()))?.ok, 1);
    connection.close();
  });

  test('fatal framing errors close the connection, and only that one', async (t) => {
    for (const [what, message] of [
      ['a length above maxMessageSizeBytes', frame(OP_MSG, Buffer.alloc(8), 48_000_001)],
      ['a length below the header size', frame(OP_MSG, Buffer.alloc(0), 8)],
      ['an unknown required flag bit', opMsg([body({ ping: 1, $db: 'admin' })], 1 << 3)],
    ] as const) {
      const connection = await open(t);
      if (!connection) return;
      const reply = await connection.request(message);
      assert.equal(reply, undefined, `${what}: no reply`);
      await connection.closed;
      assert.ok(connection.isClosed, `${what}: connection closed`);
      await stillServing();
    }
  });

  test('legacy OP_QUERY serves only the handshake', async (t) => {
    const connection = await open(t);
    if (!connection) return;
    const query = (collection: string, doc: object) =>
      frame(
        OP_QUERY,
        Buffer.concat([Buffer.alloc(4), cstring(collection), Buffer.alloc(4), Buffer.from([0xff, 0xff, 0xff, 0xff]), bson(doc)]),
      );
    const hello = await connection.request(query('admin.$cmd', { isMaster: 1 }));
    assert.equal(hello?.ok, 1);
    assert.equal(hello?.ismaster, true);
    const find = await connection.request(query('admin.$cmd', { listDatabases: 1 }));
    assert.equal(find?.ok, 0);
    assert.equal(find?.code, 352);
    assert.equal(find?.codeName, 'UnsupportedOpQueryCommand');
    connection.close();
  });

  test('an unknown opCode leaves other connections serving', async (t) => {
    const connection = await open(t);
    if (!connection) return;
    connection.request(frame(9999, Buffer.alloc(8))).catch(() => {});
    await stillServing();
    connection.close();
  });

  test('large inserts sent back to back are each stored as sent, among other large requests', async (t) => {
    const connection = await open(t);
    if (!connection) return;
    const collection = target().db.collection<{ _id: number; batch: number; pad: string }>('wire_back_to_back');
    const $db = target().db.databaseName;
    // Six inserts of 1,000 documents (~0.5 MB each, so many socket reads each), each document its
    // own bytes, in one write: messages begin and end inside socket reads. Between them, large
    // requests that store nothing (a find whose filter is as large).
    const batches = Array.from({ length: 6 }, (_, b) =>
      Array.from({ length: 1000 }, (_, i) => ({ _id: b * 1000 + i, batch: b, pad: `${b}.${i}|`.repeat(60) })),
    );
    const large = (b: number) => ({ find: collection.collectionName, filter: { pad: { $in: batches[b]!.map((doc) => doc.pad) } }, $db });
    connection.send(
      Buffer.concat(
        batches.flatMap((docs, b) => [
          opMsg([body({ insert: collection.collectionName, $db }), sequence('documents', docs)]),
          opMsg([body(large(b))]),
        ]),
      ),
    );
    for (let b = 0; b < batches.length; b++) {
      assert.equal((await connection.reply())?.n, 1000, `insert ${b}`);
      assert.equal((await connection.reply())?.ok, 1, `find ${b}`);
    }
    // Half of them deleted and inserted again: what stays and what comes back are as sent.
    assert.equal((await collection.deleteMany({ _id: { $mod: [2, 0] } })).deletedCount, 3000);
    await collection.insertMany(batches.flat().filter((doc) => doc._id % 2 === 0));
    assert.deepEqual(await collection.find({}, { sort: { _id: 1 } }).toArray(), batches.flat());
    connection.close();
  });

  test('a large batch a client is slow to read stays whole while other connections get large batches', async (t) => {
    const slow = await open(t);
    if (!slow) return;
    const collection = target().db.collection<{ _id: number; pad: string }>('wire_large_batches');
    // 2,000 documents of ~4 KB, each its own bytes: batches of ~8 MB, more than the sockets' buffers hold.
    const documents = Array.from({ length: 2000 }, (_, i) => ({ _id: i, pad: `${i}:`.repeat(4000 / `${i}:`.length) }));
    await collection.insertMany(documents);
    const find = (sort: 1 | -1) =>
      opMsg([body({ find: collection.collectionName, filter: {}, sort: { _id: sort }, batchSize: 2000, $db: target().db.databaseName })]);
    slow.pause();
    const slowReply = slow.request(find(1));
    // While the slow connection's reply waits to be written, others are served large batches.
    const others = await Promise.all(
      [-1, 1, -1].map((sort) => collection.find({}, { sort: { _id: sort as 1 | -1 }, batchSize: 2000 }).toArray()),
    );
    slow.resume();
    const reply = (await slowReply) as { cursor: { firstBatch: typeof documents } };
    assert.deepEqual(reply.cursor.firstBatch, documents, 'the slow reply arrives as it was when it was read');
    assert.deepEqual(others[0], [...documents].reverse());
    assert.deepEqual(others[1], documents);
    slow.close();
  });
});
