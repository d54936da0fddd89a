/**
 * Message framing for the sharding side of the test cluster (the mongos server and the internal
 * client nodes use to talk to each other): cuts a TCP byte stream into whole wire-protocol
 * messages, and builds OP_MSG messages whose documents are sent as raw bytes.
 */
import type { Socket } from 'node:net';
import { MAX_MESSAGE_SIZE_BYTES } from '../commands/handshake.js';
import { OP_MSG } from '../wire.js';

/**
 * Calls `onMessage` with each complete message received on `socket` (a view of the whole
 * message, header included). Closes the socket on a length outside 16 bytes – 48 MB, as mongod.
 */
export function readMessages(socket: Socket, onMessage: (message: Buffer) => void): void {
  let pending: Buffer[] = [];
  let pendingBytes = 0;
  let expected = 0;
  socket.on('data', (chunk: Buffer) => {
    pending.push(chunk);
    pendingBytes += chunk.length;
    for (;;) {
      if (expected === 0) {
        if (pendingBytes < 4) return;
        if (pending[0]!.length < 4) pending = [Buffer.concat(pending)];
        expected = pending[0]!.readInt32LE(0);
        if (expected < 16 || expected > MAX_MESSAGE_SIZE_BYTES) {
          socket.destroy();
          return;
        }
      }
      if (pendingBytes < expected) return;
      const all = pending.length === 1 ? pending[0]! : Buffer.concat(pending, pendingBytes);
      const message = all.subarray(0, expected);
      const rest = all.subarray(expected);
      pending = rest.length > 0 ? [rest] : [];
      pendingBytes = rest.length;
      expected = 0;
      onMessage(message);
    }
  });
}

/** A kind-1 section: raw documents sent as a document sequence. */
export interface DocumentSequence {
  name: string;
  docs: readonly Buffer[];
}

/**
 * One OP_MSG: a body (already BSON) and optional document sequences, whose documents are copied
 * into the message as they are: a router forwards the bytes it received without decoding them.
 * `scratch`, when large enough, is written into (and a view of it returned) instead of new memory.
 */
export function buildMessage(
  requestId: number,
  responseTo: number,
  body: Buffer,
  sequences: readonly DocumentSequence[] = [],
  scratch?: Buffer,
): Buffer {
  const length = messageLength(body, sequences);
  const names = sequences.map((s) => Buffer.from(`${s.name}\0`, 'utf8'));
  const out = scratch && scratch.length >= length ? scratch.subarray(0, length) : Buffer.allocUnsafe(length);
  out.writeInt32LE(length, 0);
  out.writeInt32LE(requestId, 4);
  out.writeInt32LE(responseTo, 8);
  out.writeInt32LE(OP_MSG, 12);
  out.writeUInt32LE(0, 16);
  out[20] = 0;
  let at = 21 + body.copy(out, 21);
  sequences.forEach((s, i) => {
    out[at++] = 1;
    const sizeAt = at;
    at += 4;
    at += names[i]!.copy(out, at);
    for (const d of s.docs) at += d.copy(out, at);
    out.writeInt32LE(at - sizeAt, sizeAt);
  });
  return out;
}

/** The length of the OP_MSG `buildMessage` makes. */
export function messageLength(body: Buffer, sequences: readonly DocumentSequence[]): number {
  let length = 16 + 4 + 1 + body.length;
  for (const s of sequences) {
    length += 1 + 4 + Buffer.byteLength(s.name) + 1;
    for (const d of s.docs) length += d.length;
  }
  return length;
}

/** The body section of an OP_MSG reply (replies carry a body only). */
export function replyBody(message: Buffer): Buffer {
  if (message.readInt32LE(12) !== OP_MSG) throw new Error(`unexpected reply opCode ${message.readInt32LE(12)}`);
  const flags = message.readUInt32LE(16);
  const end = flags & 1 ? message.length - 4 : message.length;
  let at = 20;
  while (at < end) {
    const kind = message[at++];
    const size = message.readInt32LE(at);
    if (kind === 0) return message.subarray(at, at + size);
    at += size;
  }
  throw new Error('reply without a body');
}
