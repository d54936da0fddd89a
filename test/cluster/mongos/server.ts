/**
 * The router's TCP side (mongos): accepts connections, runs each connection's requests in order,
 * and answers every command with `$clusterTime` and `operationTime` from its hybrid logical clock,
 * which every request's `$clusterTime` advances (as every reply from a shard does).
 */
import net from 'node:net';
import { BSON, Long, type Timestamp } from 'bson';
import { ServerError } from '../errors.js';
import { encodeDocument, typed } from '../raw.js';
import { MsgFlag, decodeBody, encodeLegacyReply, encodeMsgReply, opensHelloStream, parseMessage, streamHelloReplies } from '../wire.js';
import { readMessages } from '../sharding/framing.js';
import { type RouterConnection, type RouterContext, type RouterReply, lookupRouterCommand } from './commands.js';
import { Router, type RouterOptions } from './router.js';
import { installRouterAccess, type RouterAccessOptions } from './access.js';
import { startBalancer } from './balancer.js';
import './all-commands.js';

export interface RouterServerOptions extends RouterOptions, RouterAccessOptions {}

/** Commands served over legacy OP_QUERY (the handshake only). */
const OP_QUERY_COMMANDS = new Set(['hello', 'isMaster', 'ismaster']);
const CONNECTION_FATAL = new Set([223, 233, 288]);

export class RouterServer {
  readonly router: Router;
  private readonly server: net.Server;
  private readonly sockets = new Set<net.Socket>();
  private nextConnectionId = 1;
  private nextRequestId = 1;

  constructor(private readonly options: RouterServerOptions) {
    this.router = new Router(options);
    installRouterAccess(this.router, options);
    this.server = net.createServer((socket) => this.accept(socket));
  }

  /** Loads the catalog from the config server and starts listening; resolves with the port. */
  async listen(): Promise<number> {
    await this.router.refresh();
    await new Promise<void>((resolve, reject) => {
      this.server.once('error', reject);
      this.server.listen(this.options.port ?? 0, '127.0.0.1', () => resolve());
    });
    const port = (this.server.address() as net.AddressInfo).port;
    this.router.host = `127.0.0.1:${port}`;
    startBalancer(this.router);
    return port;
  }

  async close(): Promise<void> {
    this.router.stop();
    for (const socket of this.sockets) socket.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private accept(socket: net.Socket): void {
    this.sockets.add(socket);
    socket.setNoDelay(true);
    const connection: RouterConnection = { id: this.nextConnectionId++, state: new Map() };
    this.router.counters.connectionOpened();
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
    readMessages(socket, (message) => {
      queue.push(message);
      void run();
    });
    socket.on('error', () => socket.destroy());
    socket.on('close', () => {
      this.sockets.delete(socket);
      this.router.counters.connectionClosed();
    });
  }

  private write(socket: net.Socket, buffers: Buffer[]): void {
    if (socket.destroyed) return;
    socket.cork();
    for (const b of buffers) socket.write(b);
    socket.uncork();
  }

  private async handle(socket: net.Socket, connection: RouterConnection, message: Buffer): Promise<void> {
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
      this.write(socket, encodeMsgReply(encodeDocument(error.toReply()), this.nextRequestId++, requestId));
      return;
    }
    if (request.kind === 'query') {
      const body = decodeBody(request.queryRaw);
      const unwrapped = (body.$query as Record<string, unknown> | undefined) ?? body;
      const command = Object.keys(unwrapped)[0] ?? '';
      const reply =
        request.fullCollectionName.endsWith('.$cmd') && OP_QUERY_COMMANDS.has(command)
          ? await this.dispatch(connection, request.queryRaw, new Map(), { ...unwrapped, $db: request.fullCollectionName.slice(0, -5) })
          : new ServerError(352, `Unsupported OP_QUERY command: ${command}`).toReply();
      this.write(socket, encodeLegacyReply(encodeDocument(reply), this.nextRequestId++, requestId));
      return;
    }
    const reply = await this.dispatch(connection, request.bodyRaw, request.sequences);
    if (request.flags & MsgFlag.moreToCome) return;
    if (opensHelloStream(request)) {
      let responseTo = requestId;
      await streamHelloReplies(
        reply,
        () => this.dispatch(connection, request.bodyRaw, request.sequences),
        (next, flags) => {
          const id = this.nextRequestId++;
          this.write(socket, encodeMsgReply(encodeDocument(next), id, responseTo, flags));
          responseTo = id;
        },
        () => !socket.destroyed,
      );
      return;
    }
    this.write(socket, encodeMsgReply(encodeDocument(reply), this.nextRequestId++, requestId));
  }

  /** Runs one command; never throws. */
  async dispatch(
    connection: RouterConnection,
    raw: Buffer,
    sequences: Map<string, Buffer[]>,
    override?: Record<string, unknown>,
  ): Promise<RouterReply> {
    const router = this.router;
    let reply: RouterReply;
    let counted: string | undefined;
    try {
      let body: Record<string, unknown>;
      try {
        body = override ?? (BSON.deserialize(raw, typed) as Record<string, unknown>);
      } catch (e) {
        throw new ServerError('InvalidBSON', `invalid BSON in command: ${(e as Error).message}`);
      }
      const name = Object.keys(body)[0];
      if (name === undefined) throw new ServerError('FailedToParse', 'Empty command');
      if (typeof body.$db !== 'string') throw new ServerError(40571, 'OP_MSG requests require a $db argument');
      const db = body.$db;
      const gossiped = (body.$clusterTime as { clusterTime?: Timestamp } | undefined)?.clusterTime;
      if (gossiped?._bsontype === 'Timestamp') router.clock.advanceTo(gossiped);
      const command = lookupRouterCommand(name);
      if (!command) {
        router.counters.unknownCommands++;
        throw new ServerError('CommandNotFound', `no such command: '${name}'`);
      }
      counted = command.name;
      router.counters.countCommand(name, command.name, body, sequences);
      if (command.adminOnly && db !== 'admin') throw new ServerError('Unauthorized', `${name} may only be run against the admin database.`);
      if (!command.noAuth) router.authorize?.(connection, name, db, body, sequences);
      const txnNumber = body.txnNumber === undefined ? undefined : Long.fromValue(body.txnNumber as number);
      const ctx: RouterContext = {
        router,
        db,
        body,
        raw,
        sequences,
        connection,
        lsid: body.lsid as { id: unknown } | undefined,
        txnNumber,
        inTransaction: body.autocommit === false,
      };
      reply = await command.handler(ctx);
      if (reply.ok === undefined) reply.ok = 1;
    } catch (e) {
      reply = e instanceof ServerError ? e.toReply() : new ServerError('InternalError', String((e as Error)?.message ?? e)).toReply();
    }
    if (counted !== undefined && !reply.ok) router.counters.commandFailed(counted);
    const time = router.clock.current();
    reply.$clusterTime = { clusterTime: time, signature: { hash: Buffer.alloc(20), keyId: Long.fromNumber(0) } };
    reply.operationTime = time;
    return reply;
  }
}
