import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { BatchBuffers, IdleBatchBuffers } from '../../src/cluster/batch-buffers.js';
import { Batcher, batchLimits, documentStarts, MESSAGE_OVERHEAD_BYTES, SECTION_ROOM_BYTES, type RawBatch } from '../../src/copy/batcher.js';

/** A stand-in document: its size as an int32 prefix (as BSON has), then bytes telling it apart. */
function doc(size: number, tag = 0): Uint8Array {
  const bytes = new Uint8Array(size).fill((tag % 250) + 1);
  new DataView(bytes.buffer).setInt32(0, size, true);
  return bytes;
}

/** Feeds documents (each at an offset inside a larger "reply") through a batcher; returns every batch. */
function batchAll(sizes: number[], maxBytes: number, maxDocuments: number): { batches: RawBatch[]; documents: Uint8Array[] } {
  const batcher = new Batcher({ maxBytes, maxDocuments });
  const documents = sizes.map((size, i) => doc(size, i));
  const batches: RawBatch[] = [];
  for (const document of documents) {
    const reply = new Uint8Array(document.length + 7);
    reply.set(document, 3);
    if (!batcher.fits(document.length)) batches.push(batcher.flush()!);
    batcher.add(reply, 3, document.length);
  }
  const last = batcher.flush();
  if (last) batches.push(last);
  return { batches, documents };
}

/** The documents of a batch, split at their length prefixes. */
const split = (batch: RawBatch) =>
  documentStarts(batch).map((start) =>
    Uint8Array.from(
      batch.bytes.subarray(start, start + new DataView(batch.bytes.buffer, batch.bytes.byteOffset + start).getInt32(0, true)),
    ),
  );

describe('Batcher', () => {
  it('closes a batch before the document that would take it past the byte limit', () => {
    const { batches } = batchAll([400, 400, 400, 400], 1000, 100);
    assert.deepEqual(
      batches.map((b) => b.count),
      [2, 2],
    );
    assert.deepEqual(
      batches.map((b) => b.bytes.byteLength),
      [800, 800],
    );
  });

  it('fills a batch exactly to the byte limit', () => {
    const { batches } = batchAll([500, 500, 500], 1000, 100);
    assert.deepEqual(
      batches.map((b) => b.bytes.byteLength),
      [1000, 500],
    );
  });

  it('closes a batch at the document count limit', () => {
    const { batches } = batchAll(Array(7).fill(10), 1_000_000, 3);
    assert.deepEqual(
      batches.map((b) => b.count),
      [3, 3, 1],
    );
  });

  it('sends a document larger than the byte limit alone (a 16 MiB document with small batches)', () => {
    const { batches } = batchAll([100, 16 * 1024 * 1024, 100], 4096, 100);
    assert.deepEqual(
      batches.map((b) => b.count),
      [1, 1, 1],
    );
    assert.equal(batches[1]!.bytes.byteLength, 16 * 1024 * 1024);
  });

  it('points at its last document, whose _id a checkpoint records', () => {
    const { batches } = batchAll([40, 60, 80], 1000, 100);
    assert.equal(batches[0]!.lastStart, 100);
  });

  it('holds copies, not views of the reply it read from', () => {
    const batcher = new Batcher({ maxBytes: 100, maxDocuments: 10 });
    const reply = doc(20, 1);
    batcher.add(reply, 0, 20);
    reply.fill(0);
    assert.deepEqual(split(batcher.flush()!)[0], doc(20, 1));
  });

  it('refuses a document that does not fit until the batch is flushed', () => {
    const batcher = new Batcher({ maxBytes: 100, maxDocuments: 10 });
    batcher.add(doc(60), 0, 60);
    assert.equal(batcher.fits(60), false);
    assert.throws(() => batcher.add(doc(60), 0, 60), RangeError);
    assert.equal(batcher.flush()!.count, 1);
    assert.equal(batcher.fits(60), true);
  });

  it('fills a released batch buffer again, and never one whose batch is still held', () => {
    const buffers = new BatchBuffers(SECTION_ROOM_BYTES + 100, 2);
    const batcher = new Batcher({ maxBytes: 100, maxDocuments: 10 }, buffers);
    const fill = (tag: number) => {
      batcher.add(doc(50, tag), 0, 50);
      return batcher.flush()!;
    };
    const first = fill(1);
    const second = fill(2);
    assert.notEqual(second.buffer, first.buffer);
    batcher.release(first);
    const third = fill(3);
    assert.equal(third.buffer, first.buffer, 'the released buffer is reused');
    assert.deepEqual(split(second)[0], doc(50, 2), 'the batch still held is untouched');
    assert.equal(buffers.allocated, 2);
  });

  it('leaves room before the documents for the header that frames them', () => {
    const batcher = new Batcher({ maxBytes: 100, maxDocuments: 10 });
    batcher.add(doc(20, 4), 0, 20);
    const batch = batcher.flush()!;
    assert.equal(batch.bytes.buffer, batch.buffer.buffer);
    assert.equal(batch.bytes.byteOffset - batch.buffer.byteOffset, SECTION_ROOM_BYTES);
  });

  it('flush of an empty batcher gives nothing', () => {
    assert.equal(new Batcher({ maxBytes: 10, maxDocuments: 1 }).flush(), undefined);
  });

  it('refuses limits that are not positive', () => {
    assert.throws(() => new Batcher({ maxBytes: 0, maxDocuments: 1 }), RangeError);
    assert.throws(() => new Batcher({ maxBytes: 1, maxDocuments: 0 }), RangeError);
  });

  it('keeps every document once, in order, byte for byte, within both limits (property)', () => {
    fc.assert(
      fc.property(
        fc.array(fc.integer({ min: 5, max: 3000 }), { maxLength: 200 }),
        fc.integer({ min: 1, max: 5000 }),
        fc.integer({ min: 1, max: 20 }),
        (sizes, maxBytes, maxDocuments) => {
          const { batches, documents } = batchAll(sizes, maxBytes, maxDocuments);
          assert.deepEqual(batches.flatMap(split), documents);
          for (const batch of batches) {
            assert.ok(batch.count >= 1 && batch.count <= maxDocuments);
            assert.equal(batch.lastStart, documentStarts(batch).at(-1));
            assert.ok(batch.bytes.byteLength <= maxBytes || batch.count === 1, 'over the byte limit only when alone');
          }
        },
      ),
    );
  });
});

/**
 * Feeds documents through `addDocuments` as a cursor gives them: replies of `perReply` documents,
 * each laid out as a BSON array's elements (a type byte and the index as a C string before each
 * document). Returns every batch, as `batchAll` does.
 */
function batchReplies(sizes: number[], perReply: number, maxBytes: number, maxDocuments: number) {
  const batcher = new Batcher({ maxBytes, maxDocuments });
  const documents = sizes.map((size, i) => doc(size, i));
  const batches: RawBatch[] = [];
  for (let at = 0; at < documents.length; at += perReply) {
    const parts: Uint8Array[] = [new Uint8Array(9)];
    const starts: number[] = [];
    let offset = 9;
    documents.slice(at, at + perReply).forEach((document, i) => {
      const header = Buffer.from(`\x03${i}\0`, 'latin1');
      parts.push(header, document);
      starts.push(offset + header.length);
      offset += header.length + document.length;
    });
    const reply = Buffer.concat(parts);
    let next = 0;
    while (next < starts.length) {
      next = batcher.addDocuments(reply, starts, next);
      if (next < starts.length) batches.push(batcher.flush()!);
    }
  }
  const last = batcher.flush();
  if (last) batches.push(last);
  return { batches, documents };
}

describe('Batcher.addDocuments (the documents of a reply moved together, then copied in one piece)', () => {
  it('batches exactly as adding the documents one by one does, across replies (property)', () => {
    fc.assert(
      fc.property(
        fc.array(fc.integer({ min: 5, max: 3000 }), { maxLength: 200 }),
        fc.integer({ min: 1, max: 50 }),
        fc.integer({ min: 1, max: 5000 }),
        fc.integer({ min: 1, max: 20 }),
        (sizes, perReply, maxBytes, maxDocuments) => {
          const byReplies = batchReplies(sizes, perReply, maxBytes, maxDocuments);
          const oneByOne = batchAll(sizes, maxBytes, maxDocuments);
          assert.deepEqual(byReplies.batches.flatMap(split), byReplies.documents);
          assert.deepEqual(
            byReplies.batches.map((batch) => [batch.count, batch.lastStart, Buffer.from(batch.bytes).toString('hex')]),
            oneByOne.batches.map((batch) => [batch.count, batch.lastStart, Buffer.from(batch.bytes).toString('hex')]),
          );
        },
      ),
    );
  });

  it('takes nothing into a batch that is full, and a lone document larger than the limit into an empty one', () => {
    const batcher = new Batcher({ maxBytes: 100, maxDocuments: 10 });
    const reply = Buffer.concat([Buffer.from('\x030\0', 'latin1'), doc(80), Buffer.from('\x031\0', 'latin1'), doc(300, 1)]);
    assert.equal(batcher.addDocuments(reply, [3, 86], 0), 1);
    assert.equal(batcher.addDocuments(reply, [3, 86], 1), 1, 'the full batch takes nothing more');
    assert.equal(batcher.flush()!.count, 1);
    assert.equal(batcher.addDocuments(reply, [3, 86], 1), 2);
    assert.equal(batcher.flush()!.bytes.byteLength, 300);
  });

  it('refuses, by name and before anything is sent, a document larger than the destination stores', () => {
    const batcher = new Batcher({ maxBytes: 1000, maxDocuments: 10, maxDocumentBytes: 200 });
    const reply = Buffer.concat([Buffer.from('\x030\0', 'latin1'), doc(150), Buffer.from('\x031\0', 'latin1'), doc(201, 1)]);
    assert.throws(() => batcher.addDocuments(reply, [3, 156], 0), {
      name: 'WireMessageTooLarge',
      message: /a document of 201 bytes exceeds the server's maxBsonObjectSize 200/,
    });
    assert.throws(() => batcher.add(reply, 156, 201), { name: 'WireMessageTooLarge' });
    // A length prefix that runs past the reply is refused too: the writer does not walk the batch again.
    const truncated = reply.subarray(0, 200);
    assert.throws(() => new Batcher({ maxBytes: 1000, maxDocuments: 10 }).addDocuments(truncated, [3, 156], 1), /malformed document/);
  });
});

describe('BatchBuffers', () => {
  it('never hands out a buffer that is lent and not released, whatever the order of acquires and releases (property)', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 4 }),
        fc.array(
          fc.oneof(
            fc.constant({ op: 'acquire' as const, bytes: 8 }),
            fc.constant({ op: 'acquire' as const, bytes: 20 }),
            fc.nat({ max: 5 }).map((n) => ({ op: 'release' as const, n })),
          ),
          { maxLength: 60 },
        ),
        (capacity, steps) => {
          const buffers = new BatchBuffers(16, capacity);
          const held: Buffer[] = [];
          for (const step of steps) {
            if (step.op === 'acquire') {
              const buffer = buffers.acquire(step.bytes);
              assert.ok(!held.includes(buffer), 'a held buffer was handed out again');
              assert.ok(buffer.length >= step.bytes);
              held.push(buffer);
            } else if (held.length > 0) {
              buffers.release(held.splice(step.n % held.length, 1)[0]!);
            }
            assert.ok(buffers.lent <= capacity);
          }
        },
      ),
    );
  });

  it('allocates no more than its capacity while batches are released as they are written', () => {
    const buffers = new BatchBuffers(16, 3);
    const held: Buffer[] = [];
    for (let i = 0; i < 100; i++) {
      held.push(buffers.acquire());
      if (held.length === 3) buffers.release(held.shift()!);
    }
    assert.equal(buffers.allocated, 3);
  });

  it('gives a larger document a buffer of its own, not kept afterwards', () => {
    const buffers = new BatchBuffers(16, 1);
    const large = buffers.acquire(1000);
    assert.ok(large.length >= 1000);
    buffers.release(large);
    assert.equal(buffers.acquire().length, 16);
    assert.equal(buffers.allocated, 2);
  });
});

describe('IdleBatchBuffers', () => {
  it('gives partitions of different collections the same buffers, one after another', () => {
    const idle = new IdleBatchBuffers();
    // Buffers sized from each collection's average document: 2.37 MB, then 2.23 MB, then 2.37 MB again.
    const first = idle.take(2_370_008, 3);
    first.acquire();
    idle.put(first);
    const second = idle.take(2_228_095, 3);
    assert.equal(second, first, 'a set large enough was not reused');
    assert.equal(second.allocated, 1, 'its buffer was allocated again');
    idle.put(second);
    assert.equal(idle.take(2_370_008, 3), first);
    assert.equal(idle.created, 1);
  });

  it('never lends one set to two partitions at once, and lends a set too small or too short to none', () => {
    const idle = new IdleBatchBuffers();
    const a = idle.take(100, 3);
    const b = idle.take(100, 3);
    assert.notEqual(a, b);
    idle.put(a);
    assert.notEqual(idle.take(101, 3), a, 'its buffers are too small');
    assert.notEqual(idle.take(100, 4), a, 'it lends too few buffers');
    assert.equal(idle.take(50, 2), a);
  });

  it('keeps no more idle sets than it had in use at once, the largest first', () => {
    const idle = new IdleBatchBuffers();
    for (let i = 1; i <= 50; i++) idle.put(idle.take(i * 1000, 3)); // one partition at a time, each needing more
    assert.equal(idle.size, 1);
    const largest = idle.take(1, 1);
    assert.equal(largest.bufferBytes, 50_000);
    idle.put(largest);
    // Three partitions at once: the first takes the idle set, the others new ones.
    const sets = [idle.take(10, 3), idle.take(20, 3), idle.take(30, 3)];
    for (const set of sets) idle.put(set);
    assert.equal(idle.size, 3);
    idle.put(idle.take(1_000_000, 3));
    assert.equal(idle.size, 3);
    assert.deepEqual(
      [idle.take(1, 1), idle.take(1, 1), idle.take(1, 1)].map((set) => set.bufferBytes).sort((x, y) => x - y),
      [30, 50_000, 1_000_000],
    );
  });
});

describe('batchLimits', () => {
  it('keeps batches within one 48 MB message and one write command', () => {
    const limits = batchLimits(64 * 1024 * 1024);
    assert.equal(limits.maxBytes, 48_000_000 - MESSAGE_OVERHEAD_BYTES);
    assert.equal(limits.maxDocuments, 100_000);
  });

  it('uses batchBytes when it is smaller, and the server’s own limits when it reports them', () => {
    assert.deepEqual(
      batchLimits(8 * 1024 * 1024, { maxMessageSizeBytes: 48_000_000, maxWriteBatchSize: 1000, maxBsonObjectSize: 1_000_000 }),
      {
        maxBytes: 8 * 1024 * 1024,
        maxDocuments: 1000,
        maxDocumentBytes: 1_000_000,
      },
    );
    assert.equal(batchLimits(1024).maxDocumentBytes, 16 * 1024 * 1024, "mongod's maxBsonObjectSize when the server does not say");
  });
});
