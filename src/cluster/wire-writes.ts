/**
 * Ferry's own wire connections to a replica set's primary, for the copy's inserts only (the
 * `wire` write path, src/copy/write-path.ts): the batch's bytes go out as the document sequence
 * of an OP_MSG `insert`, framed once in the room before them and written with the command's
 * header in one vectored write (src/cluster/op-msg.ts), where the driver's `db.command` copies
 * the batch twice more (bench/RESULTS.md, "Copy: write path").
 *
 * What the driver would give, kept:
 * - Server selection and failover: the primary's address comes from the driver itself (`hello`
 *   through the driver's client, whose topology follows elections); a reply that says the server
 *   is no longer primary, or a broken connection, drops every connection and asks again.
 * - Authentication: SCRAM-SHA-1/256 from the connection string's credentials (src/cluster/scram-client.ts),
 *   the mechanism negotiated as the driver does (`saslSupportedMechs`). TLS with the string's CA and
 *   client certificate options.
 * - Retryable writes: every insert carries a session id and a transaction number; a network error
 *   or a retryable server error is retried once, with the same number, on a new connection to the
 *   (possibly new) primary, so the server applies it once (unless `retryWrites=false`).
 * - Write concern errors: the reply is read like the driver's (`WriteReply`); the caller decides.
 *
 * On any doubt it is not used, and the driver path serves: a deployment that is not a replica set
 * (mongos, standalone, load balancer), an authentication mechanism other than SCRAM, TLS options
 * it does not know, or a first connection that fails for any reason but the network.
 */
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { isIP, Socket, connect as netConnect } from 'node:net';
import { connect as tlsConnect, type ConnectionOptions } from 'node:tls';
import { Long, UUID, type Document } from 'bson';
import { MongoNetworkError, MongoServerError, type MongoClient } from 'mongodb';
import { MAJORITY } from './concerns.js';
import { isTransient } from './errors.js';
import { DEFAULT_WIRE_LIMITS, documentsSection, frameRequest, parseMessage, type FramedDocuments, type WireLimits } from './op-msg.js';
import type { WriteReply } from './raw-writes.js';
import { scramLogin, type ScramMechanism } from './scram-client.js';

/** Why the wire path is not used for a client (the driver path serves instead). */
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

/** How to reach and log in to the primary (from the driver's parsed connection string). */
interface Target {
  host: string;
  port: number;
  tls?: ConnectionOptions;
  credentials?: { user: string; password: string; source: string; mechanism: ScramMechanism | 'DEFAULT' };
  appName?: string;
  connectTimeoutMS: number;
}

let requestIds = 0;
const nextRequestId = () => (requestIds = (requestIds + 1) & 0x7fffffff);

/** One authenticated connection to the primary; one command at a time. */
export class WireConnection {
  readonly #socket: Socket;
  #chunks: Buffer[] = [];
  #buffered = 0;
  #waiting: { resolve: (message: Buffer) => void; reject: (error: Error) => void } | undefined;
  #failure: Error | undefined;
  limits: WireLimits = DEFAULT_WIRE_LIMITS;

  private constructor(socket: Socket) {
    this.#socket = socket;
    socket.setNoDelay(true);
    socket.on('data', (chunk: Buffer) => this.#receive(chunk));
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
    const socket = await new Promise<Socket>((resolve, reject) => {
      const options = { host: target.host, port: target.port, timeout: target.connectTimeoutMS };
      const opened =
        target.tls === undefined
          ? netConnect(options, () => resolve(opened))
          : tlsConnect({ ...options, ...target.tls }, () => resolve(opened));
      opened.once('error', (error) => reject(new MongoNetworkError(`wire connection to ${target.host}:${target.port}: ${error.message}`)));
      opened.once('timeout', () => opened.destroy(new Error('connect timed out')));
    });
    socket.setTimeout(0);
    const connection = new WireConnection(socket);
    try {
      const credentials = target.credentials;
      const hello = await connection.command('admin', {
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
      connection.limits = {
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
          (db, command) => connection.command(db, command),
          mechanism,
          credentials.source,
          credentials.user,
          credentials.password,
        );
      }
      return connection;
    } catch (error) {
      connection.close();
      throw error;
    }
  }

  get broken(): boolean {
    return this.#failure !== undefined;
  }

  /** Sends `command` to `db` (with `sequences` as its kind-1 sections) and reads the reply; ok: 0 throws MongoServerError. */
  async command(db: string, command: Document, sequences: Buffer[] = []): Promise<Document> {
    if (this.#failure !== undefined) throw this.#failure;
    if (this.#waiting !== undefined) throw new Error('wire connection: one command at a time');
    const buffers = frameRequest(nextRequestId(), { ...command, $db: db }, sequences, this.limits);
    const reply = new Promise<Buffer>((resolve, reject) => (this.#waiting = { resolve, reject }));
    // Corked writes leave as one writev: the header and the batch's own bytes, never joined.
    this.#socket.cork();
    for (const buffer of buffers) this.#socket.write(buffer);
    this.#socket.uncork();
    const body = parseMessage(await reply).body;
    if (body.ok !== 1) throw new MongoServerError(body as MongoServerError['errorResponse']);
    return body;
  }

  close(): void {
    this.#failure ??= new MongoNetworkError('wire connection closed');
    this.#socket.destroy();
  }

  #receive(chunk: Buffer): void {
    this.#chunks.push(chunk);
    this.#buffered += chunk.length;
    if (this.#buffered < 4) return;
    const head = this.#chunks.length === 1 ? this.#chunks[0]! : Buffer.concat(this.#chunks);
    const length = head.readInt32LE(0);
    if (this.#buffered < length) {
      this.#chunks = [head];
      return;
    }
    const message = head.subarray(0, length);
    const rest = head.subarray(length);
    this.#chunks = rest.length > 0 ? [rest] : [];
    this.#buffered = rest.length;
    const waiting = this.#waiting;
    this.#waiting = undefined;
    if (waiting === undefined) this.close();
    else waiting.resolve(message);
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

/** Server codes after which the primary is looked up again (not primary, stepping down, shutting down). */
const PRIMARY_LOST_CODES = new Set([10107, 13435, 13436, 189, 11600, 11602, 91]);

/** Wire connections to one client's primary, opened on demand and reused. */
export class WireWriter {
  readonly #client: MongoClient;
  #target: Promise<Target> | undefined;
  #idle: WireConnection[] = [];
  /** Server sessions not in use: one insert at a time per session, its transaction numbers rising. */
  readonly #sessions: { lsid: { id: UUID }; txnNumber: number }[] = [];
  #closed = false;
  #ready: Promise<string | undefined> | undefined;

  constructor(client: MongoClient) {
    this.#client = client;
  }

  /**
   * Undefined when the wire path serves this client, else why not (the driver path serves): asked
   * once, with one connection opened and authenticated. A transient failure is thrown and asked again.
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
    const connection = await this.#checkOut().catch((error: unknown) => {
      if (error instanceof WireUnsupported || isTransient(error)) throw error;
      throw new WireUnsupported(`first connection failed: ${(error as Error).message}`);
    });
    this.#checkIn(connection);
  }

  /** An unordered, majority-acknowledged `insert` of the framed documents into `db.coll`, validation bypassed. */
  async insert(db: string, coll: string, documents: FramedDocuments): Promise<WriteReply> {
    const session = this.#sessions.pop() ?? { lsid: { id: new UUID(randomUUID()) }, txnNumber: 0 };
    const txnNumber = Long.fromNumber(++session.txnNumber);
    const attempt = async () => {
      const connection = await this.#checkOut();
      try {
        const section = documentsSection(documents, connection.limits);
        const reply = await connection.command(
          db,
          { insert: coll, ordered: false, bypassDocumentValidation: true, writeConcern: MAJORITY, lsid: session.lsid, txnNumber },
          [section],
        );
        this.#checkIn(connection);
        return reply;
      } catch (error) {
        if (connection.broken || (error instanceof MongoServerError && PRIMARY_LOST_CODES.has(Number(error.code)))) this.#lostPrimary();
        else this.#checkIn(connection);
        throw error;
      }
    };
    let reply: Document;
    try {
      reply = await attempt();
    } catch (error) {
      if (!this.#client.options.retryWrites || !retryable(error)) throw error;
      reply = await attempt();
    } finally {
      this.#sessions.push(session);
    }
    const result: WriteReply = { n: Number(reply.n ?? 0), writeErrors: (reply.writeErrors ?? []) as WriteReply['writeErrors'] };
    if (reply.writeConcernError !== undefined) result.writeConcernError = reply.writeConcernError as WriteReply['writeConcernError'];
    return result;
  }

  close(): void {
    this.#closed = true;
    for (const connection of this.#idle.splice(0)) connection.close();
  }

  async #checkOut(): Promise<WireConnection> {
    for (let connection = this.#idle.pop(); connection !== undefined; connection = this.#idle.pop()) {
      if (!connection.broken) return connection;
    }
    if (this.#closed) throw new MongoNetworkError('wire writer closed');
    this.#target ??= this.#findPrimary();
    try {
      return await WireConnection.open(await this.#target);
    } catch (error) {
      this.#target = undefined;
      throw error;
    }
  }

  #checkIn(connection: WireConnection): void {
    if (this.#closed || connection.broken) connection.close();
    else this.#idle.push(connection);
  }

  /** Drops every connection and forgets the primary: the next write asks the driver again. */
  #lostPrimary(): void {
    this.#target = undefined;
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

// Replies that fail are thrown as the driver's own MongoServerError (its constructor is marked
// internal, but it is how the rest of Ferry reads a server's code and labels: isTransient, retries).

/** Whether an insert may be retried once, as a retryable write (the driver's rule). */
function retryable(error: unknown): boolean {
  if (error instanceof MongoNetworkError) return true;
  if (error instanceof MongoServerError)
    return error.hasErrorLabel('RetryableWriteError') || PRIMARY_LOST_CODES.has(Number(error.code)) || isTransient(error);
  return false;
}

const writers = new WeakMap<MongoClient, WireWriter>();

/** The wire writer of `client` (one per client, its connections shared by every collection written). */
export function wireWriterOf(client: MongoClient): WireWriter {
  let writer = writers.get(client);
  if (writer === undefined) {
    writer = new WireWriter(client);
    writers.set(client, writer);
    client.once('topologyClosed', () => writer!.close());
  }
  return writer;
}
