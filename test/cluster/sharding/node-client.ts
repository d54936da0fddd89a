/**
 * How the processes of a sharded test cluster talk to each other (mongos to shards and to the
 * config server, a donor shard to a recipient, a shard to the config server): OP_MSG commands
 * over a small pool of connections to one node, each carrying the sender's `$clusterTime` and
 * advancing its clock with the reply's, so that every process's hybrid logical clock follows the
 * largest cluster time it has seen. Documents can be sent as raw bytes (document sequences).
 */
import net from 'node:net';
import { BSON, Long, type Timestamp } from 'bson';
import type { ClusterClock } from '../clock.js';
import { ServerError } from '../errors.js';
import { decodeBody } from '../wire.js';
import { decodeElement, findElement, serialize, typed } from '../raw.js';
import { type DocumentSequence, buildMessage, messageLength, readMessages, replyBody } from './framing.js';
import { shardingError } from './errors.js';
import { scramClientConversation, type InternalCredentials } from './scram-client.js';

/** A command reply: its raw body, decoded on first use. */
export class Reply {
  private decoded: Record<string, unknown> | undefined;
  private typedDecoded: Record<string, unknown> | undefined;

  constructor(readonly raw: Buffer) {}

  get doc(): Record<string, unknown> {
    this.decoded ??= decodeBody(this.raw);
    return this.decoded;
  }

  /** The reply decoded with every BSON type kept (Int32, Long, Double wrappers): for shard keys and forwarding. */
  get typed(): Record<string, unknown> {
    this.typedDecoded ??= BSON.deserialize(this.raw, typed) as Record<string, unknown>;
    return this.typedDecoded;
  }

  get ok(): boolean {
    const el = findElement(this.raw, 'ok');
    return el !== undefined && Number(decodeElement(this.raw, el, { promoteValues: true })) === 1;
  }

  /** The error of an `{ok: 0}` reply, as the ServerError the node raised (labels included). */
  error(): ServerError {
    const d = this.doc;
    const { ok: _ok, errmsg, code, codeName, errorLabels, $clusterTime: _t, operationTime: _o, ...extra } = d;
    const error = new ServerError(
      Number(code ?? 1),
      String(errmsg ?? 'command failed'),
      extra,
      (errorLabels as string[] | undefined) ?? [],
    );
    if (typeof codeName === 'string') Object.defineProperty(error, 'codeName', { value: codeName });
    return error;
  }

  /** The reply's document, or its error thrown. */
  orThrow(): Record<string, unknown> {
    if (!this.ok) throw this.error();
    return this.doc;
  }
}

/** mongod's error for a node that cannot be reached. */
export function hostUnreachable(host: string, why: string): ServerError {
  return shardingError('HostUnreachable', `Error connecting to ${host} :: caused by :: ${why}`);
}

/** Messages from this size on are built in a buffer the connection keeps. */
const SCRATCH_MIN_BYTES = 64 * 1024;

const ZERO_SIGNATURE = { hash: Buffer.alloc(20), keyId: Long.fromNumber(0) };

export interface NodeClientOptions {
  /** The sender's clock: sent as `$clusterTime`, advanced by each reply's. */
  clock?: ClusterClock;
  /** The internal user every connection authenticates as (clusters with access control). */
  credentials?: InternalCredentials;
}

class Connection {
  private waiting: { resolve(reply: Buffer): void; reject(e: Error): void } | undefined;
  private nextRequestId = 1;
  private scratch: Buffer | undefined;
  closed = false;

  constructor(
    readonly socket: net.Socket,
    private readonly host: string,
  ) {
    readMessages(socket, (message) => {
      const w = this.waiting;
      this.waiting = undefined;
      try {
        w?.resolve(replyBody(message));
      } catch (e) {
        w?.reject(e as Error);
      }
    });
    const fail = (why: string) => {
      this.closed = true;
      const w = this.waiting;
      this.waiting = undefined;
      w?.reject(hostUnreachable(this.host, why));
    };
    socket.on('error', (e) => fail(e.message));
    socket.on('close', () => fail('connection closed'));
  }

  send(body: Buffer, sequences: readonly DocumentSequence[]): Promise<Buffer> {
    return new Promise((resolve, reject) => {
      if (this.closed) return reject(hostUnreachable(this.host, 'connection closed'));
      this.waiting = { resolve, reject };
      // Large messages (a router's batches) reuse this connection's buffer: the previous message
      // was wholly sent, since its reply came back, before the next one is built.
      const length = messageLength(body, sequences);
      if (length >= SCRATCH_MIN_BYTES && (this.scratch?.length ?? 0) < length) this.scratch = Buffer.allocUnsafeSlow(length);
      const scratch = length >= SCRATCH_MIN_BYTES ? this.scratch : undefined;
      this.socket.write(buildMessage(this.nextRequestId++, 0, body, sequences, scratch));
    });
  }
}

/** A client of one node (`host:port`), with a pool of connections used one request at a time. */
export class NodeClient {
  private readonly idle: Connection[] = [];
  private readonly all = new Set<Connection>();
  private closing = false;

  constructor(
    readonly host: string,
    private readonly options: NodeClientOptions = {},
  ) {}

  /** Runs a command; resolves with the reply (ok or not), rejects only when the node is unreachable. */
  async run(db: string, body: Record<string, unknown>, sequences: readonly DocumentSequence[] = []): Promise<Reply> {
    const connection = await this.acquire();
    try {
      const reply = new Reply(await connection.send(this.encode(db, body), sequences));
      this.gossip(reply.raw);
      return reply;
    } finally {
      this.release(connection);
    }
  }

  /** Runs a command and returns its reply document; an `{ok: 0}` reply is thrown as its error. */
  async command(db: string, body: Record<string, unknown>, sequences: readonly DocumentSequence[] = []): Promise<Record<string, unknown>> {
    return (await this.run(db, body, sequences)).orThrow();
  }

  private encode(db: string, body: Record<string, unknown>): Buffer {
    const clock = this.options.clock;
    const out: Record<string, unknown> = { ...body, $db: db };
    if (clock) out.$clusterTime = { clusterTime: clock.current(), signature: ZERO_SIGNATURE };
    return serialize(out);
  }

  private gossip(raw: Buffer): void {
    const clock = this.options.clock;
    if (!clock) return;
    const el = findElement(raw, '$clusterTime');
    if (!el || el.type !== 0x03) return;
    const time = (decodeElement(raw, el) as { clusterTime?: Timestamp }).clusterTime;
    if (time?._bsontype === 'Timestamp') clock.advanceTo(time);
  }

  private async acquire(): Promise<Connection> {
    for (;;) {
      const connection = this.idle.pop();
      if (!connection) break;
      if (!connection.closed) return connection;
      this.all.delete(connection);
    }
    if (this.closing) throw hostUnreachable(this.host, 'client closed');
    const [hostname, port] = splitHost(this.host);
    const socket = await new Promise<net.Socket>((resolve, reject) => {
      const s = net.connect({ host: hostname, port }, () => {
        s.off('error', reject);
        resolve(s);
      });
      s.once('error', (e) => reject(hostUnreachable(this.host, e.message)));
    });
    socket.setNoDelay(true);
    const connection = new Connection(socket, this.host);
    this.all.add(connection);
    if (this.options.credentials) {
      try {
        await scramClientConversation(this.options.credentials, (db, body) =>
          connection.send(this.encode(db, body), []).then((raw) => new Reply(raw)),
        );
      } catch (e) {
        socket.destroy();
        this.all.delete(connection);
        throw e;
      }
    }
    return connection;
  }

  private release(connection: Connection): void {
    if (connection.closed || this.closing) {
      connection.socket.destroy();
      this.all.delete(connection);
    } else this.idle.push(connection);
  }

  /** Closes every connection; requests under way fail. */
  close(): void {
    this.closing = true;
    for (const connection of this.all) connection.socket.destroy();
    this.all.clear();
    this.idle.length = 0;
  }
}

/** `host:port` → [host, port]. */
export function splitHost(host: string): [string, number] {
  const colon = host.lastIndexOf(':');
  return [host.slice(0, colon), Number(host.slice(colon + 1))];
}
