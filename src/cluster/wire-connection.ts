/**
 * Ferry's own wire connections to a replica set's primary, shared by the copy's `wire` write path
 * (src/cluster/wire-writes.ts, inserts into the destination) and its `wire` read path
 * (src/cluster/wire-reads.ts, range reads of the source): one pool per client.
 *
 * What the driver would give, kept:
 * - Server selection and failover: the primary's address comes from the driver itself (`hello`
 *   through the driver's client, whose topology follows elections); a reply that says the server
 *   is no longer primary, or a broken connection, drops every connection and asks again.
 * - Authentication: SCRAM-SHA-1/256 from the connection string's credentials (src/cluster/scram-client.ts),
 *   the mechanism negotiated as the driver does (`saslSupportedMechs`). TLS with the string's CA and
 *   client certificate options.
 *
 * Replies are read without a copy per socket chunk: on a plain TCP connection the kernel writes
 * straight into the reply's buffer (net.Socket's `onread`), a caller-supplied one for large
 * replies (a cursor batch), so reading costs no per-reply garbage; over TLS each decrypted chunk is
 * copied into it once. A reply larger than the buffer given moves to one of its own size.
 *
 * On any doubt it is not used, and the driver serves: a deployment that is not a replica set
 * (mongos, standalone, load balancer), an authentication mechanism other than SCRAM, TLS options
 * it does not know, or a first connection that fails for any reason but the network.
 */
import { readFileSync } from 'node:fs';
import { isIP, Socket, connect as netConnect } from 'node:net';
import { connect as tlsConnect, type ConnectionOptions } from 'node:tls';
import type { Document } from 'bson';
import { MongoNetworkError, MongoServerError, type MongoClient } from 'mongodb';
import { isTransient } from './errors.js';
import { DEFAULT_WIRE_LIMITS, frameRequest, parseMessage, type WireLimits } from './op-msg.js';
import { scramLogin, type ScramMechanism } from './scram-client.js';

/** Why Ferry's own connections are not used for a client (the driver serves instead). */
export class WireUnsupported extends Error {
  override readonly name = 'WireUnsupported';
}

/** TLS options of the connection string this module understands; any other makes it step aside. */
const KNOWN_TLS_OPTIONS = new Set([
  'tls',
  'tlsCAFile',
  'tlsCertificateKeyFile',
  'tlsCertificateKeyFilePassword',
  'tlsAllowInvalidCertificates',
  'tlsAllowInvalidHostnames',
]);

/** How to reach and log in to the primary (from the driver's parsed connection string; tests build one by hand). */
export interface Target {
  host: string;
  port: number;
  tls?: ConnectionOptions;
  credentials?: { user: string; password: string; source: string; mechanism: ScramMechanism | 'DEFAULT' };
  appName?: string;
  connectTimeoutMS: number;
}

/** Server codes after which the primary is looked up again (not primary, stepping down, shutting down). */
export const PRIMARY_LOST_CODES: ReadonlySet<number> = new Set([10107, 13435, 13436, 189, 11600, 11602, 91]);

/** Bytes of the smallest OP_MSG: header, flags, a kind byte and an empty document. */
const MIN_MESSAGE_BYTES = 16 + 4 + 1 + 5;
/** Room past maxMessageSizeBytes a server reply may take (mongod lets replies exceed it by its own overhead). */
const REPLY_SLACK_BYTES = 64 * 1024;
/** The connection's own buffer for small replies (hello, SCRAM, insert acknowledgements), grown as needed. */
const SCRATCH_BYTES = 64 * 1024;

let requestIds = 0;
const nextRequestId = () => (requestIds = (requestIds + 1) & 0x7fffffff);

/** A reply being received: into the caller's buffer (`into`), else the connection's scratch buffer. */
interface Receiving {
  resolve: (message: Buffer) => void;
  reject: (error: Error) => void;
  into: Buffer | undefined;
}

/** One authenticated connection to the primary; one command at a time. */
export class WireConnection {
  #socket!: Socket;
  #waiting: Receiving | undefined;
  #failure: Error | undefined;
  /** Where bytes go now, how many are there, and the message's length once its header is in. */
  #target: Buffer;
  #filled = 0;
  #expected = 0;
  #scratch = Buffer.allocUnsafeSlow(SCRATCH_BYTES);
  /**
   * Plain TCP: Node asks for the buffer of the next read right after each read, before the next
   * request says where its reply goes. Between replies it gets this header-sized one, whose bytes
   * are then copied into the reply's buffer; the rest of the reply is read in place.
   */
  readonly #head = Buffer.allocUnsafeSlow(16);
  #handedOut: Buffer | undefined;
  limits: WireLimits = DEFAULT_WIRE_LIMITS;

  private constructor() {
    this.#target = this.#scratch;
  }

  #attach(socket: Socket, kernelReads: boolean): void {
    this.#socket = socket;
    socket.setNoDelay(true);
    if (!kernelReads) socket.on('data', (chunk: Buffer) => this.#receiveChunk(chunk));
    const fail = (error: Error) => {
      this.#failure ??= new MongoNetworkError(`wire connection: ${error.message}`);
      this.#waiting?.reject(this.#failure);
      this.#waiting = undefined;
    };
    socket.on('error', fail);
    socket.on('close', () => fail(new Error('closed by the server')));
  }

  /** Opens, says hello and logs in; the server must be a writable primary. */
  static async open(target: Target): Promise<WireConnection> {
    const connection = new WireConnection();
    // Plain TCP: the kernel reads into the reply's own buffer (`onread`), no chunk allocated per read.
    const onread = {
      buffer: () => connection.#nextReadBuffer(),
      callback: (bytes: number, buffer: Uint8Array) => {
        connection.#onRead(bytes, buffer);
        return true;
      },
    };
    const socket = await new Promise<Socket>((resolve, reject) => {
      const options = { host: target.host, port: target.port, timeout: target.connectTimeoutMS };
      const opened =
        target.tls === undefined
          ? netConnect({ ...options, onread }, () => resolve(opened))
          : tlsConnect({ ...options, ...target.tls }, () => resolve(opened));
      connection.#attach(opened, target.tls === undefined);
      opened.once('error', (error) => reject(new MongoNetworkError(`wire connection to ${target.host}:${target.port}: ${error.message}`)));
      opened.once('timeout', () => opened.destroy(new Error('connect timed out')));
    });
    socket.setTimeout(0);
    const opened = connection;
    try {
      const credentials = target.credentials;
      const hello = await opened.command('admin', {
        hello: 1,
        client: {
          driver: { name: 'ferry-wire', version: '1' },
          os: { type: process.platform },
          ...(target.appName ? { application: { name: target.appName } } : {}),
        },
        ...(credentials?.mechanism === 'DEFAULT' ? { saslSupportedMechs: `${credentials.source}.${credentials.user}` } : {}),
      });
      if (hello.isWritablePrimary !== true)
        throw new MongoServerError({ ok: 0, code: 10107, codeName: 'NotWritablePrimary', errmsg: 'not primary' });
      opened.limits = {
        maxBsonObjectSize: Number(hello.maxBsonObjectSize ?? DEFAULT_WIRE_LIMITS.maxBsonObjectSize),
        maxMessageSizeBytes: Number(hello.maxMessageSizeBytes ?? DEFAULT_WIRE_LIMITS.maxMessageSizeBytes),
      };
      if (credentials !== undefined) {
        const offered = (hello.saslSupportedMechs ?? []) as string[];
        const mechanism =
          credentials.mechanism !== 'DEFAULT'
            ? credentials.mechanism
            : offered.includes('SCRAM-SHA-256') || offered.length === 0
              ? 'SCRAM-SHA-256'
              : 'SCRAM-SHA-1';
        await scramLogin(
          (db, command) => opened.command(db, command),
          mechanism,
          credentials.source,
          credentials.user,
          credentials.password,
        );
      }
      return opened;
    } catch (error) {
      opened.close();
      throw error;
    }
  }

  get broken(): boolean {
    return this.#failure !== undefined;
  }

  /** Sends `command` to `db` (with `sequences` as its kind-1 sections) and reads the reply; ok: 0 throws MongoServerError. */
  async command(db: string, command: Document, sequences: Buffer[] = []): Promise<Document> {
    const body = parseMessage(await this.request(db, command, sequences)).body;
    if (body.ok !== 1) throw new MongoServerError(body as MongoServerError['errorResponse']);
    return body;
  }

  /**
   * Sends `command` to `db` and resolves with the whole reply message, unparsed. With `into`, the
   * reply is received in it (from its first byte; a reply larger than `into` is received in a
   * buffer of its own, which is what the returned view is of); else the reply is a copy of its own.
   */
  request(db: string, command: Document, sequences: readonly Buffer[] = [], into?: Buffer): Promise<Buffer> {
    if (this.#failure !== undefined) return Promise.reject(this.#failure);
    if (this.#waiting !== undefined) return Promise.reject(new Error('wire connection: one command at a time'));
    const buffers = frameRequest(nextRequestId(), { ...command, $db: db }, sequences, this.limits);
    const reply = new Promise<Buffer>((resolve, reject) => (this.#waiting = { resolve, reject, into }));
    if (this.#filled === 0) this.#target = into ?? this.#scratch;
    // Corked writes leave as one writev: the header and the batch's own bytes, never joined.
    this.#socket.cork();
    for (const buffer of buffers) this.#socket.write(buffer);
    this.#socket.uncork();
    return reply;
  }

  close(): void {
    this.#failure ??= new MongoNetworkError('wire connection closed');
    this.#socket.destroy();
  }

  #nextReadBuffer(): Buffer {
    this.#handedOut = this.#waiting !== undefined || this.#filled > 0 ? this.#space() : this.#head;
    return this.#handedOut;
  }

  #onRead(bytes: number, buffer: Uint8Array): void {
    if (buffer === this.#handedOut && buffer !== this.#head) this.#received(bytes);
    else this.#receiveChunk(Buffer.from(buffer.buffer, buffer.byteOffset, bytes));
  }

  /** Where the next bytes read go: the rest of the message being received (never past its end). */
  #space(): Buffer {
    const end = this.#expected > 0 ? this.#expected : this.#target.length;
    return this.#target.subarray(this.#filled, end);
  }

  #receiveChunk(chunk: Buffer): void {
    for (let at = 0; at < chunk.length && this.#failure === undefined;) {
      const space = this.#space();
      const bytes = Math.min(space.length, chunk.length - at);
      chunk.copy(space, 0, at, at + bytes);
      at += bytes;
      this.#received(bytes);
    }
  }

  /** `bytes` more of the message are in its buffer: once its header is in, make room for all of it; once whole, deliver it. */
  #received(bytes: number): void {
    this.#filled += bytes;
    if (this.#expected === 0) {
      if (this.#filled < 4) return;
      const length = this.#target.readInt32LE(0);
      if (length < MIN_MESSAGE_BYTES || length > this.limits.maxMessageSizeBytes + REPLY_SLACK_BYTES || this.#filled > length) {
        this.#protocolError(`a reply of ${length} bytes (${this.#filled} read)`);
        return;
      }
      this.#expected = length;
      if (length > this.#target.length) {
        const larger = Buffer.allocUnsafeSlow(length);
        this.#target.copy(larger, 0, 0, this.#filled);
        if (this.#target === this.#scratch) this.#scratch = larger;
        this.#target = larger;
      }
    }
    if (this.#filled < this.#expected) return;
    const target = this.#target;
    const message = target === this.#scratch ? Buffer.from(target.subarray(0, this.#expected)) : target.subarray(0, this.#expected);
    this.#filled = 0;
    this.#expected = 0;
    this.#target = this.#scratch;
    const waiting = this.#waiting;
    this.#waiting = undefined;
    if (waiting === undefined) this.close();
    else waiting.resolve(message);
  }

  #protocolError(what: string): void {
    const error = new MongoNetworkError(`wire connection: unexpected ${what}`);
    this.#failure ??= error;
    this.#waiting?.reject(error);
    this.#waiting = undefined;
    this.#socket.destroy();
  }
}

/** Parses what the driver parsed: where the primary is found, TLS and credentials; throws WireUnsupported otherwise. */
function targetOf(client: MongoClient, primary: string): Target {
  const options = client.options as MongoClient['options'] & Record<string, unknown>;
  if (options.loadBalanced) throw new WireUnsupported('a load-balanced deployment');
  const [host, port] = splitAddress(primary);
  const target: Target = {
    host,
    port,
    connectTimeoutMS: options.connectTimeoutMS || 10_000,
    ...(options.appName ? { appName: options.appName } : {}),
  };
  const credentials = options.credentials;
  if (credentials !== undefined && credentials.username) {
    const mechanism = credentials.mechanism as string;
    if (mechanism !== 'DEFAULT' && mechanism !== 'SCRAM-SHA-1' && mechanism !== 'SCRAM-SHA-256') {
      throw new WireUnsupported(`authentication mechanism ${mechanism}`);
    }
    target.credentials = { user: credentials.username, password: credentials.password, source: credentials.source || 'admin', mechanism };
  }
  if (options.tls === true) {
    const unknown = Object.keys(options).filter(
      (key) => key.startsWith('tls') && !KNOWN_TLS_OPTIONS.has(key) && options[key] !== undefined,
    );
    if (unknown.length > 0) throw new WireUnsupported(`TLS options ${unknown.join(', ')}`);
    const file = (key: string) => (typeof options[key] === 'string' ? readFileSync(options[key]) : undefined);
    const keyFile = file('tlsCertificateKeyFile');
    target.tls = {
      ...(isIP(host) === 0 ? { servername: host } : {}),
      ...(file('tlsCAFile') === undefined ? {} : { ca: file('tlsCAFile') }),
      ...(keyFile === undefined ? {} : { cert: keyFile, key: keyFile }),
      ...(typeof options.tlsCertificateKeyFilePassword === 'string' ? { passphrase: options.tlsCertificateKeyFilePassword } : {}),
      rejectUnauthorized: options.tlsAllowInvalidCertificates !== true,
      ...(options.tlsAllowInvalidHostnames === true ? { checkServerIdentity: () => undefined } : {}),
    };
  }
  return target;
}

function splitAddress(address: string): [string, number] {
  const colon = address.lastIndexOf(':');
  if (colon < 0) return [address, 27017];
  const host = address.slice(0, colon).replace(/^\[(.*)\]$/, '$1');
  return [host, Number(address.slice(colon + 1))];
}

/** Wire connections to one client's primary, opened on demand and reused (reads and writes alike). */
export class WirePool {
  readonly #client: MongoClient;
  #target: Promise<Target> | undefined;
  #idle: WireConnection[] = [];
  #closed = false;
  #ready: Promise<string | undefined> | undefined;

  constructor(client: MongoClient) {
    this.#client = client;
  }

  /** The client whose primary this pool reaches. */
  get client(): MongoClient {
    return this.#client;
  }

  /**
   * Undefined when Ferry's own connections serve this client, else why not (the driver serves):
   * asked once, with one connection opened and authenticated. A transient failure is thrown and asked again.
   */
  unsupported(): Promise<string | undefined> {
    this.#ready ??= this.prepare().then(
      () => undefined,
      (error: unknown) => {
        if (error instanceof WireUnsupported) return error.message;
        this.#ready = undefined;
        throw error;
      },
    );
    return this.#ready;
  }

  /**
   * Checks that the wire path can serve this client: finds the primary through the driver, opens
   * and authenticates one connection. Throws WireUnsupported (use the driver) or a transient error.
   */
  async prepare(): Promise<void> {
    const connection = await this.checkOut().catch((error: unknown) => {
      if (error instanceof WireUnsupported || isTransient(error)) throw error;
      throw new WireUnsupported(`first connection failed: ${(error as Error).message}`);
    });
    this.checkIn(connection);
  }

  /** An idle connection, or a new one to the primary. */
  async checkOut(): Promise<WireConnection> {
    for (let connection = this.#idle.pop(); connection !== undefined; connection = this.#idle.pop()) {
      if (!connection.broken) return connection;
    }
    if (this.#closed) throw new MongoNetworkError('wire connections closed');
    this.#target ??= this.#findPrimary();
    try {
      return await WireConnection.open(await this.#target);
    } catch (error) {
      this.#target = undefined;
      throw error;
    }
  }

  checkIn(connection: WireConnection): void {
    if (this.#closed || connection.broken) connection.close();
    else this.#idle.push(connection);
  }

  /**
   * Gives back a connection whose command failed with `error`: a broken connection or a server
   * that is no longer primary drops every connection and forgets the primary (the next command
   * asks the driver again); any other failure leaves the connection usable.
   */
  checkInAfter(connection: WireConnection, error: unknown): void {
    if (connection.broken || (error instanceof MongoServerError && PRIMARY_LOST_CODES.has(Number(error.code)))) {
      connection.close();
      this.#target = undefined;
      for (const idle of this.#idle.splice(0)) idle.close();
    } else {
      this.checkIn(connection);
    }
  }

  close(): void {
    this.#closed = true;
    for (const connection of this.#idle.splice(0)) connection.close();
  }

  /** The primary's address, as the driver's topology knows it (`hello` sent through the driver to the primary). */
  async #findPrimary(): Promise<Target> {
    const hello = await this.#client.db('admin').command({ hello: 1 });
    if (hello.msg === 'isdbgrid') throw new WireUnsupported('a mongos');
    if (typeof hello.setName !== 'string') throw new WireUnsupported('not a replica set');
    // The driver has not yet seen an election: a passing condition, retried like one.
    if (hello.isWritablePrimary !== true) {
      throw new MongoServerError({ ok: 0, code: 10107, codeName: 'NotWritablePrimary', errmsg: 'the primary is changing' });
    }
    const options = this.#client.options;
    // With directConnection the driver talks to the string's host as given; else to the set's own names.
    const address = options.directConnection ? options.hosts[0]!.toString() : (hello.me as string | undefined);
    if (address === undefined) throw new WireUnsupported('the primary does not say its address');
    return targetOf(this.#client, address);
  }
}

const pools = new WeakMap<MongoClient, WirePool>();

/** The wire connections of `client` (one pool per client, shared by its reads and writes). */
export function wirePoolOf(client: MongoClient): WirePool {
  let pool = pools.get(client);
  if (pool === undefined) {
    pool = new WirePool(client);
    pools.set(client, pool);
    client.once('topologyClosed', () => pool!.close());
  }
  return pool;
}

/** Whether the `wire` read path can serve `source` (false also on a failure to tell: the driver reads then). */
export async function wireReadable(source: MongoClient): Promise<boolean> {
  try {
    return (await wirePoolOf(source).unsupported()) === undefined;
  } catch {
    return false;
  }
}
