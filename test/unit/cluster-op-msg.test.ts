// OP_MSG framing of the wire write path (src/cluster/op-msg.ts): a batch's documents become the
// `documents` sequence in the room the batcher left before them (no copy), the message is
// [header + command, section], and the server's limits hold: a 16 MiB document fits, one byte more
// does not; a message of exactly 48,000,000 bytes goes, one byte more is refused before sending.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Binary, serialize, type Document } from 'bson';
import { Batcher } from '../../src/copy/batcher.js';
import {
  DEFAULT_WIRE_LIMITS,
  DOCUMENTS_SECTION_HEADER_BYTES,
  documentsSection,
  frameRequest,
  parseMessage,
  WireMessageTooLarge,
  type FramedDocuments,
} from '../../src/cluster/op-msg.js';

const MiB = 1024 * 1024;
const COMMAND: Document = { insert: 'c', ordered: false, $db: 'app' };

/** A document of exactly `size` bytes: `{_id, d: <binary>}`. */
function documentOf(size: number, id: number): Buffer {
  const overhead = serialize({ _id: id, d: new Binary(Buffer.alloc(0)) }).length;
  const bytes = Buffer.from(serialize({ _id: id, d: new Binary(Buffer.alloc(size - overhead, id)) }));
  assert.equal(bytes.length, size);
  return bytes;
}

/** The documents as the copy batches them (one buffer, room before the documents). */
function batchOf(documents: Buffer[]): FramedDocuments {
  const total = documents.reduce((sum, doc) => sum + doc.length, 0);
  const batcher = new Batcher({ maxBytes: total, maxDocuments: documents.length });
  for (const doc of documents) batcher.add(doc, 0, doc.length);
  return batcher.flush()!;
}

const join = (buffers: Buffer[]) => Buffer.concat(buffers);

describe('OP_MSG framing of raw documents', () => {
  it('frames a batch in place and reads back the same documents, byte for byte', () => {
    const documents = [documentOf(100, 1), documentOf(5000, 2), documentOf(37, 3)];
    const batch = batchOf(documents);
    const section = documentsSection(batch);
    // The section is a view of the batch's own buffer: the documents were not copied.
    assert.equal(section.buffer, batch.buffer.buffer);
    assert.equal(section.byteOffset + DOCUMENTS_SECTION_HEADER_BYTES, batch.bytes.byteOffset);
    const buffers = frameRequest(7, COMMAND, [section]);
    assert.equal(buffers.length, 2);
    assert.equal(buffers[1], section);
    const message = parseMessage(join(buffers));
    assert.equal(message.requestId, 7);
    assert.equal(message.opCode, 2013);
    assert.deepEqual(message.body, COMMAND);
    assert.deepEqual(
      message.sequences.get('documents')!.map((doc) => Buffer.from(doc).toString('hex')),
      documents.map((doc) => doc.toString('hex')),
    );
  });

  it('takes a document of exactly 16 MiB and refuses one byte more', () => {
    const largest = documentOf(16 * MiB, 1);
    const message = parseMessage(join(frameRequest(1, COMMAND, [documentsSection(batchOf([largest]))])));
    assert.equal(message.sequences.get('documents')![0]!.length, 16 * MiB);
    assert.ok(Buffer.from(message.sequences.get('documents')![0]!).equals(largest));
    assert.throws(() => documentsSection(batchOf([documentOf(16 * MiB + 1, 2)])), WireMessageTooLarge);
  });

  it('sends a message of exactly maxMessageSizeBytes (48,000,000) and refuses one byte more', () => {
    const limit = DEFAULT_WIRE_LIMITS.maxMessageSizeBytes;
    assert.equal(limit, 48_000_000);
    const head = frameRequest(1, COMMAND, [])[0]!.length;
    const documentsBytes = limit - head - DOCUMENTS_SECTION_HEADER_BYTES;
    const last = documentsBytes - 2 * 16 * MiB;
    const fits = batchOf([documentOf(16 * MiB, 1), documentOf(16 * MiB, 2), documentOf(last, 3)]);
    const buffers = frameRequest(1, COMMAND, [documentsSection(fits)]);
    assert.equal(join(buffers).length, limit);
    assert.equal(join(buffers).readInt32LE(0), limit);
    assert.equal(parseMessage(join(buffers)).sequences.get('documents')!.length, 3);
    const over = batchOf([documentOf(16 * MiB, 1), documentOf(16 * MiB, 2), documentOf(last + 1, 3)]);
    assert.throws(() => frameRequest(1, COMMAND, [documentsSection(over)]), WireMessageTooLarge);
    // A server announcing smaller limits is held to them.
    assert.throws(
      () =>
        frameRequest(1, COMMAND, [documentsSection(batchOf([documentOf(1000, 1)]))], {
          maxBsonObjectSize: 16 * MiB,
          maxMessageSizeBytes: 1000,
        }),
      WireMessageTooLarge,
    );
  });

  it('refuses documents whose lengths do not add up, or without room for the section header', () => {
    // Documents framed as they are (not put together by the copy's batcher, which checks each one as it joins).
    const batch = { ...batchOf([documentOf(100, 1)]), checked: false };
    batch.bytes[0] = 200; // claims more bytes than the batch holds
    assert.throws(() => documentsSection(batch), /malformed document at byte 0/);
    const tight = Buffer.alloc(100);
    assert.throws(() => documentsSection({ buffer: tight, bytes: tight.subarray(4) }), /need 15 bytes of room/);
  });
});
