// The `wire` read path's replies (src/cluster/wire-reads.ts, wire-connection.ts): a `find`/`getMore`
// reply is read where it lies (an empty batch, a 16 MiB document), received whole however the
// socket splits it and into the buffer lent (or one of its own when it is larger), a refusal is
// the server's own error; and the in-place packing that lets batches be slices of a reply
// (src/copy/batcher.ts `packDocuments`) never touches a slice packed before.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Socket } from 'node:net';
import { Binary, Long, serialize, Timestamp, type Document } from 'bson';
import { MongoServerError } from 'mongodb';
import { WireConnection } from '../../src/cluster/wire-connection.js';
import { parseCursorReply } from '../../src/cluster/wire-reads.js';
import { OP_MSG, parseMessage } from '../../src/cluster/op-msg.js';
import { packDocuments } from '../../src/copy/batcher.js';

const MiB = 1024 * 1024;

/** An OP_MSG reply with `body` as its one section. */
function replyOf(body: Document, responseTo = 0): Buffer {
  const bytes = serialize(body);
  const message = Buffer.alloc(21 + bytes.length);
  message.writeInt32LE(message.length, 0);
  message.writeInt32LE(1, 4);
  message.writeInt32LE(responseTo, 8);
  message.writeInt32LE(OP_MSG, 12);
  message.writeUInt32LE(0, 16);
  message[20] = 0;
  message.set(bytes, 21);
  return message;
}

/** A document of exactly `size` bytes: `{_id, d: <binary>}`. */
function documentOf(size: number, id: number): Document {
  const overhead = serialize({ _id: id, d: new Binary(Buffer.alloc(0)) }).length;
  const document = { _id: id, d: new Binary(Buffer.alloc(size - overhead, id % 251)) };
  assert.equal(serialize(document).length, size);
  return document;
}

const cursorReply = (batch: Document[], id = 0, first = true) =>
  replyOf({ cursor: { [first ? 'firstBatch' : 'nextBatch']: batch, id: Long.fromNumber(id), ns: 'app.c' }, ok: 1 });

/** The documents of a parsed reply, each as its bytes. */
const documentsOf = (reply: ReturnType<typeof parseCursorReply>) =>
  reply.starts.map((start) => Buffer.from(reply.buffer.subarray(start, start + reply.buffer.readInt32LE(start))));

describe('cursor replies read in place', () => {
  it('reads an empty batch and an exhausted cursor', () => {
    const reply = parseCursorReply(cursorReply([], 0));
    assert.deepEqual(reply.starts, []);
    assert.equal(reply.id.isZero(), true);
    assert.equal(reply.collection, 'c');
  });

  it('reads each document where it lies, and the cursor id to continue', () => {
    const docs = [documentOf(100, 1), documentOf(3000, 2), documentOf(40, 3)];
    const message = cursorReply(docs, 77, false);
    const reply = parseCursorReply(message);
    assert.equal(reply.id.toNumber(), 77);
    assert.equal(reply.buffer.buffer, message.buffer, 'the documents are views of the reply, not copies');
    assert.deepEqual(
      documentsOf(reply),
      docs.map((doc) => Buffer.from(serialize(doc))),
    );
  });

  it("reads the reply's operationTime when it has one (the verifier's source time)", () => {
    const time = new Timestamp({ t: 1_700_000_000, i: 7 });
    const withTime = parseCursorReply(
      replyOf({ cursor: { firstBatch: [documentOf(40, 1)], id: Long.fromNumber(0), ns: 'app.c' }, ok: 1, operationTime: time }),
    );
    assert.ok(withTime.operationTime?.equals(time));
    assert.equal(parseCursorReply(cursorReply([], 0)).operationTime, undefined);
  });

  it('reads a document at the 16 MiB limit', () => {
    const doc = documentOf(16 * MiB, 9);
    const reply = parseCursorReply(cursorReply([doc], 5));
    assert.equal(reply.starts.length, 1);
    assert.equal(documentsOf(reply)[0]!.length, 16 * MiB);
    assert.ok(documentsOf(reply)[0]!.equals(serialize(doc)));
  });

  it('throws the server refusal as the driver does (CursorNotFound stays code 43)', () => {
    const message = replyOf({ ok: 0, code: 43, codeName: 'CursorNotFound', errmsg: 'cursor id 5 not found' });
    assert.throws(
      () => parseCursorReply(message),
      (error: unknown) => error instanceof MongoServerError && error.code === 43 && error.codeName === 'CursorNotFound',
    );
  });

  it('refuses a reply it cannot read with MalformedCursorReply', () => {
    for (const message of [replyOf({ ok: 1 }), cursorReply([]).subarray(0, 30), replyOf({ cursor: { firstBatch: 3, id: 0 }, ok: 1 })]) {
      assert.throws(
        () => parseCursorReply(message),
        (error: unknown) => (error as { name?: string }).name === 'MalformedCursorReply',
      );
    }
  });
});

/**
 * A one-connection server that says hello as a primary, then answers every other command with
 * `reply`, written in pieces of `chunk` bytes each in its own tick (so the client reads it in many reads).
 */
async function fakeServer(reply: Buffer, chunk: number) {
  const server = createServer((socket: Socket) => {
    let pending = Buffer.alloc(0);
    socket.on('data', async (data: Buffer) => {
      pending = Buffer.concat([pending, data]);
      while (pending.length >= 4 && pending.length >= pending.readInt32LE(0)) {
        const request = parseMessage(pending.subarray(0, pending.readInt32LE(0)));
        pending = pending.subarray(request.length);
        if (request.body.hello !== undefined) {
          socket.write(replyOf({ isWritablePrimary: true, maxWireVersion: 21, ok: 1 }, request.requestId));
          continue;
        }
        for (let at = 0; at < reply.length; at += chunk) {
          socket.write(reply.subarray(at, at + chunk));
          await new Promise((resolve) => setImmediate(resolve));
        }
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as { port: number }).port;
  return {
    connect: () => WireConnection.open({ host: '127.0.0.1', port, connectTimeoutMS: 5000 }),
    close: () => new Promise((resolve) => server.close(resolve)),
  };
}

describe('a reply received on a wire connection', () => {
  const docs = Array.from({ length: 40 }, (_, i) => documentOf(1000 + i, i));
  const message = cursorReply(docs, 12);

  it('is received whole into the buffer lent, however many reads it takes', async () => {
    const server = await fakeServer(message, 333);
    const connection = await server.connect();
    try {
      const into = Buffer.alloc(message.length + 1000);
      const received = await connection.request('app', { find: 'c' }, [], into);
      assert.equal(received.buffer, into.buffer, 'received in the lent buffer');
      assert.ok(received.equals(message));
      // The buffer is reused for the next reply.
      const again = await connection.request('app', { getMore: Long.fromNumber(12), collection: 'c' }, [], into);
      assert.ok(again.equals(message));
      assert.equal(again.buffer, into.buffer);
    } finally {
      connection.close();
      await server.close();
    }
  });

  it('moves a reply larger than the buffer lent to one of its own', async () => {
    const server = await fakeServer(message, 4096);
    const connection = await server.connect();
    try {
      const into = Buffer.alloc(1024);
      const received = await connection.request('app', { find: 'c' }, [], into);
      assert.notEqual(received.buffer, into.buffer);
      assert.ok(received.equals(message));
      assert.deepEqual(documentsOf(parseCursorReply(received)).length, docs.length);
    } finally {
      connection.close();
      await server.close();
    }
  });

  it('fails the command with a network error when the server closes mid-reply', async () => {
    const server = createServer((socket) => {
      socket.once('data', (data: Buffer) => {
        const request = parseMessage(data.subarray(0, data.readInt32LE(0)));
        socket.write(replyOf({ isWritablePrimary: true, ok: 1 }, request.requestId));
        socket.once('data', () => {
          socket.write(message.subarray(0, 5000));
          setTimeout(() => socket.destroy(), 20);
        });
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const connection = await WireConnection.open({
      host: '127.0.0.1',
      port: (server.address() as { port: number }).port,
      connectTimeoutMS: 5000,
    });
    try {
      await assert.rejects(connection.request('app', { find: 'c' }, [], Buffer.alloc(message.length)), { name: 'MongoNetworkError' });
      assert.equal(connection.broken, true);
    } finally {
      connection.close();
      await new Promise((resolve) => server.close(resolve));
    }
  });
});

describe('packing a reply into slices in place', () => {
  it('gives slices holding the documents in order, and leaves a slice alone once packed', () => {
    const docs = Array.from({ length: 30 }, (_, i) => documentOf(200 + 37 * i, i));
    const reply = parseCursorReply(cursorReply(docs, 1));
    const expected = docs.map((doc) => Buffer.from(serialize(doc)));
    const slices: Buffer[] = [];
    const snapshots: Buffer[] = [];
    for (let next = 0; next < reply.starts.length;) {
      const start = reply.starts[next]!;
      const run = packDocuments(reply.buffer, reply.starts, next, { maxBytes: 2000, maxDocuments: 4 });
      assert.ok(run.count >= 1 && run.count <= 4);
      assert.ok(run.bytes <= 2000 || run.count === 1);
      const slice = reply.buffer.subarray(start, start + run.bytes);
      assert.equal(slice.readInt32LE(run.lastStart), expected[next + run.count - 1]!.length, 'lastStart is the last document');
      slices.push(slice);
      snapshots.push(Buffer.from(slice));
      next = run.next;
    }
    // Packing later slices did not touch earlier ones (they may be on the wire meanwhile).
    slices.forEach((slice, i) => assert.ok(slice.equals(snapshots[i]!), `slice ${i} unchanged`));
    const out: Buffer[] = [];
    for (const slice of slices)
      for (let at = 0; at < slice.length; at += slice.readInt32LE(at))
        out.push(Buffer.from(slice.subarray(at, at + slice.readInt32LE(at))));
    assert.deepEqual(out, expected);
  });

  it('puts a document larger than the byte limit in a slice of its own', () => {
    const docs = [documentOf(100, 1), documentOf(5000, 2), documentOf(100, 3)];
    const reply = parseCursorReply(cursorReply(docs));
    const counts: number[] = [];
    for (let next = 0; next < reply.starts.length;) {
      const run = packDocuments(reply.buffer, reply.starts, next, { maxBytes: 1000, maxDocuments: 100 });
      counts.push(run.count);
      next = run.next;
    }
    assert.deepEqual(counts, [1, 1, 1]);
  });
});
