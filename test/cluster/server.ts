/**
 * The TCP side of a test-cluster node: accepts connections, frames messages, runs each request
 * in order per connection and writes the reply. A message longer than maxMessageSizeBytes (or
 * shorter than a header) closes the connection, as mongod does; other malformed requests get an
 * error reply and the connection keeps serving.
 */
import net from 'node:net';
import { ServerError } from './errors.js';
import { Instance, type InstanceOptions } from './instance.js';
import { dispatch } from './commands/dispatch.js';
import type { ConnectionInfo } from './commands/registry.js';
import { MAX_MESSAGE_SIZE_BYTES } from './commands/handshake.js';
import { encodeDocument } from './raw.js';
import { KEPT_REPLY_MIN_BYTES, ReplyBuffers } from './reply-buffers.js';
import { assembleRequest } from './storage/memory.js';
import { MsgFlag, decodeBody, encodeLegacyReply, encodeMsgReply, opensHelloStream, parseMessage, streamHelloReplies } from './wire.js';
import { installValidation } from './validation.js';
import { startTtlMonitor } from './ttl.js';
import { installAccessControl, type AccessOptions } from './auth/access.js';
import { installFailPoints } from './failpoints/commands.js';
import { installClusterRole, type ClusterRoleOptions } from './sharding/role.js';
import './commands/index.js';

export interface ServerOptions extends InstanceOptions, AccessOptions, ClusterRoleOptions {
  /** TCP port (default 0: any free port). */
  port?: number;
  /** Interface to listen on (default 127.0.0.1). */
  host?: string;
}

/** Codes after which mongod drops the connection instead of replying. */
const CONNECTION_FATAL = new Set([223, 233, 288]);
/** Commands served over legacy OP_QUERY (the handshake only, as in mongod 6.0+). */
const OP_QUERY_COMMANDS = new Set(['hello', 'isMaster', 'ismaster']);

export class ClusterServer {
  readonly instance: Instance;
  private readonly server: net.Server;
  private readonly sockets = new Set<net.Socket>();
  private nextConnectionId = 1;
  private nextRequestId = 1;
  /** Buffers of large replies, used again once written. */
  private readonly replyBuffers = new ReplyBuffers();

  constructor(private readonly options: ServerOptions = {}) {
    this.instance = new Instance(options);
    installValidation(this.instance);
    installAccessControl(this.instance, options);
    startTtlMonitor(this.instance);
    installFailPoints(this.instance);
    installClusterRole(this.instance, options);
    this.server = net.createServer((socket) => this.accept(socket));
  }

  /** Starts listening; resolves with the port. */
  async listen(): Promise<number> {
    await new Promise<void>((resolve, reject) => {
      this.server.once('error', reject);
      this.server.listen(this.options.port ?? 0, this.options.host ?? '127.0.0.1', () => resolve());
    });
    const port = (this.server.address() as net.AddressInfo).port;
    this.instance.host = `127.0.0.1:${port}`;
    this.instance.startBackgroundTasks();
    return port;
  }

  async close(): Promise<void> {
    this.instance.stop();
    for (const socket of this.sockets) socket.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private accept(socket: net.Socket): void {
    this.sockets.add(socket);
    socket.setNoDelay(true);
    const connection: ConnectionInfo = { id: this.nextConnectionId++, state: new Map(), close: () => socket.destroy() };
    this.instance.counters.connectionOpened();
    let pending: Buffer[] = [];
    let pendingBytes = 0;
    const queue: Buffer[] = [];
    let busy = false;

    const run = async () => {
      if (busy) return;
      busy = true;
      try {
        while (queue.length > 0 && !socket.destroyed) await this.handle(socket, connection, queue.shift()!);
      } finally {
        busy = false;
      }
    };

    let expected = 0; // length of the message being received, once its header has arrived
    socket.on('data', (chunk: Buffer) => {
      pending.push(chunk);
      pendingBytes += chunk.length;
      for (;;) {
        if (expected === 0) {
          if (pendingBytes < 4) break;
          if (pending[0].length < 4) pending = [Buffer.concat(pending)];
          expected = pending[0].readInt32LE(0);
          if (expected < 16 || expected > MAX_MESSAGE_SIZE_BYTES) {
            socket.destroy(); // mongod: "recv(): message msgLen is invalid", connection closed
            return;
          }
        }
        if (pendingBytes < expected) break;
        // Join the chunks once, when the whole message is here.
        const all = pending.length === 1 ? pending[0] : assembleRequest(pending, pendingBytes);
        queue.push(all.subarray(0, expected));
        const rest = all.subarray(expected);
        pending = rest.length > 0 ? [rest] : [];
        pendingBytes = rest.length;
        expected = 0;
      }
      void run();
    });
    socket.on('error', () => socket.destroy());
    socket.on('close', () => {
      this.sockets.delete(socket);
      this.instance.counters.connectionClosed();
    });
  }

  /** Writes a reply's buffers; `written` runs once they are written (or will never be). */
  private write(socket: net.Socket, buffers: Buffer[], written?: () => void): void {
    if (socket.destroyed) {
      written?.();
      return;
    }
    socket.cork();
    for (let i = 0; i < buffers.length - 1; i++) socket.write(buffers[i]);
    socket.write(buffers[buffers.length - 1], written);
    socket.uncork();
  }

  /** Encodes and writes an OP_MSG reply, a large one in a kept buffer (reply-buffers.ts) given back once written. */
  private writeMsgReply(socket: net.Socket, reply: Record<string, unknown>, requestId: number): void {
    let kept: Buffer | undefined;
    const body = encodeDocument(reply, (size) =>
      size >= KEPT_REPLY_MIN_BYTES ? (kept = this.replyBuffers.take(size)) : Buffer.allocUnsafe(size),
    );
    const written = kept === undefined ? undefined : () => this.replyBuffers.give(kept!);
    this.write(socket, encodeMsgReply(body, this.nextRequestId++, requestId), written);
  }

  private async handle(socket: net.Socket, connection: ConnectionInfo, message: Buffer): Promise<void> {
    const requestId = message.readInt32LE(4);
    let request;
    try {
      request = parseMessage(message);
    } catch (e) {
      const error = e instanceof ServerError ? e : new ServerError('ProtocolError', String(e));
      if (CONNECTION_FATAL.has(error.code) || message.readInt32LE(12) !== 2013) {
        socket.destroy();
        return;
      }
      const reply = encodeDocument({ ...error.toReply() });
      this.write(socket, encodeMsgReply(reply, this.nextRequestId++, requestId));
      return;
    }
    if (request.kind === 'query') {
      const body = decodeBody(request.queryRaw);
      const name = Object.keys(body)[0] ?? '';
      const unwrapped = (body.$query as Record<string, unknown> | undefined) ?? body;
      const command = Object.keys(unwrapped)[0] ?? name;
      let reply: Record<string, unknown>;
      if (request.fullCollectionName.endsWith('.$cmd') && OP_QUERY_COMMANDS.has(command)) {
        reply = await dispatch(this.instance, connection, request.queryRaw, new Map(), {
          ...unwrapped,
          $db: request.fullCollectionName.slice(0, -5),
        });
      } else {
        reply = new ServerError(
          352,
          `Unsupported OP_QUERY command: ${command}. The client driver may require an upgrade. For more details see https://dochub.mongodb.org/core/legacy-opcode-removal`,
        ).toReply();
      }
      this.write(socket, encodeLegacyReply(encodeDocument(reply), this.nextRequestId++, requestId));
      return;
    }
    const reply = await dispatch(this.instance, connection, request.bodyRaw, request.sequences);
    if (request.flags & MsgFlag.moreToCome) return; // fire-and-forget (w: 0): no reply
    if (opensHelloStream(request)) {
      let responseTo = requestId;
      await streamHelloReplies(
        reply,
        () => dispatch(this.instance, connection, request.bodyRaw, request.sequences),
        (next, flags) => {
          const id = this.nextRequestId++;
          this.write(socket, encodeMsgReply(encodeDocument(next), id, responseTo, flags));
          responseTo = id;
        },
        () => !socket.destroyed,
      );
      return;
    }
    this.writeMsgReply(socket, reply, requestId);
  }
}
