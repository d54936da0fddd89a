/**
 * Test cluster: bulk insert and raw scan throughput, measured as the server's own CPU. The
 * cluster runs in its own process (`spawnCluster`); this process is a deliberately thin client:
 * every `insert` is an OP_MSG built before timing starts (documents as a document sequence of
 * pre-serialized 1 KiB documents), sent over a plain socket, and the scan reads `find`/`getMore`
 * replies without decoding them. Server CPU comes from /proc/<pid>/stat, memory from
 * /proc/<pid>/status (VmRSS), stored bytes from collStats.
 *
 *   npm run bench:cluster -- [megabytes=256] [connections=2] [memory|dbpath|both] [runs=1]
 *
 * `dbpath` runs the cluster with a data directory (`--dbpath`, in the temporary directory) and
 * then also times its restart after SIGKILL; `both` alternates the two, run after run, and prints
 * their medians side by side.
 *
 * FERRY_BENCH_CPU_PROF=<dir> writes a CPU profile of the cluster process there.
 * FERRY_BENCH_DOC_BYTES=<n> sets the documents' size (default 1024; Ferry's copy benchmarks'
 * generated documents average ~250). FERRY_BENCH_RETRYABLE=1 sends every insert as a retryable
 * write (an `lsid` of its own and a `txnNumber`), as copiers do: Ferry, and drivers by default.
 */
import net from 'node:net';
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { BSON, Int32, Long, ObjectId, UUID } from 'bson';
import { spawnCluster } from '../test/cluster/index.js';
import { findElement } from '../test/cluster/raw.js';

type Storage = 'memory' | 'dbpath';

const megabytes = Number(process.argv[2] ?? 256);
const connections = Number(process.argv[3] ?? 2);
const storageArg = (process.argv[4] ?? 'memory') as Storage | 'both';
if (!['memory', 'dbpath', 'both'].includes(storageArg)) throw new Error(`storage must be memory, dbpath or both, not ${storageArg}`);
const runs = Number(process.argv[5] ?? 1);
const DOC_BYTES = Number(process.env.FERRY_BENCH_DOC_BYTES ?? 1024);
const RETRYABLE = process.env.FERRY_BENCH_RETRYABLE === '1';
const BATCH_DOCS = 1000;
const CLOCK_TICKS = 100; // getconf CLK_TCK on Linux

/** CPU seconds (user + system) a process has used so far. */
function cpuSeconds(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS;
}

function rssBytes(pid: number): number {
  const line = readFileSync(`/proc/${pid}/status`, 'utf8')
    .split('\n')
    .find((l) => l.startsWith('VmRSS:'))!;
  return Number(line.split(/\s+/)[1]) * 1024;
}

function toBuffer(bytes: Uint8Array): Buffer {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

/** A 1 KiB document shaped like application data: ObjectId, numbers, strings, an array, a sub-document. */
function makeDocument(i: number): Buffer {
  const base = {
    _id: new ObjectId(),
    n: new Int32(i),
    at: new Date(1_700_000_000_000 + i),
    total: i * 1.25,
    big: Long.fromNumber(i * 1000),
    name: `customer-${i}`,
    tags: ['a', 'b', 'c'],
    address: { city: 'Lisbon', zip: String(10000 + (i % 9000)) },
    pad: '',
  };
  const size = BSON.calculateObjectSize(base);
  base.pad = 'x'.repeat(DOC_BYTES - size);
  return toBuffer(BSON.serialize(base));
}

let requestId = 1;

/** An OP_MSG with a body section and, optionally, one document sequence. */
function opMsg(body: Record<string, unknown>, sequence?: { id: string; docs: Buffer[] }): Buffer {
  const bodyBytes = toBuffer(BSON.serialize(body));
  const parts: Buffer[] = [Buffer.alloc(16), Buffer.alloc(4), Buffer.from([0]), bodyBytes];
  if (sequence) {
    const name = Buffer.from(`${sequence.id}\0`, 'latin1');
    const size = 4 + name.length + sequence.docs.reduce((n, d) => n + d.length, 0);
    const head = Buffer.alloc(5 + name.length);
    head[0] = 1;
    head.writeInt32LE(size, 1);
    name.copy(head, 5);
    parts.push(head, ...sequence.docs);
  }
  const message = Buffer.concat(parts);
  message.writeInt32LE(message.length, 0);
  message.writeInt32LE(requestId++, 4);
  message.writeInt32LE(2013, 12);
  return message;
}

/** A socket that sends one message at a time and resolves with each reply's body bytes. */
class RawConnection {
  private pending: Buffer[] = [];
  private pendingBytes = 0;
  private waiting: ((reply: Buffer) => void) | undefined;

  private constructor(private readonly socket: net.Socket) {
    socket.on('data', (chunk: Buffer) => {
      this.pending.push(chunk);
      this.pendingBytes += chunk.length;
      if (this.pendingBytes < 4) return;
      if (this.pending[0].length < 4) this.pending = [Buffer.concat(this.pending)];
      const length = this.pending[0].readInt32LE(0);
      if (this.pendingBytes < length) return;
      // One request at a time per connection: the reply is everything received.
      const message = this.pending.length === 1 ? this.pending[0] : Buffer.concat(this.pending, this.pendingBytes);
      this.pending = [];
      this.pendingBytes = 0;
      const resolve = this.waiting!;
      this.waiting = undefined;
      resolve(message.subarray(21, length)); // header, flags, section kind
    });
  }

  static async open(port: number): Promise<RawConnection> {
    const socket = net.connect(port, '127.0.0.1');
    await new Promise<void>((resolve, reject) => socket.once('connect', resolve).once('error', reject));
    socket.setNoDelay(true);
    return new RawConnection(socket);
  }

  send(message: Buffer): Promise<Buffer> {
    return new Promise((resolve) => {
      this.waiting = resolve;
      this.socket.write(message);
    });
  }

  close(): void {
    this.socket.destroy();
  }
}

function okOf(reply: Buffer): void {
  const decoded = BSON.deserialize(reply);
  if (decoded.ok !== 1 || decoded.writeErrors) throw new Error(`command failed: ${JSON.stringify(decoded)}`);
}

/** The cursor id in a find/getMore reply, read without decoding the batch. */
function cursorIdOf(reply: Buffer): Long {
  const cursor = findElement(reply, 'cursor')!;
  const nameEnd = reply.indexOf(0, cursor.start + 1);
  const sub = reply.subarray(nameEnd + 1, cursor.end);
  const id = findElement(sub, 'id')!;
  return new Long(sub.readInt32LE(id.end - 8), sub.readInt32LE(id.end - 4));
}

const totalDocs = Math.round((megabytes * 1024 * 1024) / DOC_BYTES);

function buildBatches(): Buffer[] {
  const batches: Buffer[] = [];
  for (let first = 0; first < totalDocs; first += BATCH_DOCS) {
    const docs: Buffer[] = [];
    for (let i = first; i < Math.min(totalDocs, first + BATCH_DOCS); i++) docs.push(makeDocument(i));
    // A retryable insert: a session of its own (batches go to whichever connection is free), txnNumber 1.
    const session = RETRYABLE ? { lsid: { id: new UUID() }, txnNumber: Long.fromNumber(1) } : {};
    batches.push(opMsg({ insert: 'docs', ordered: false, ...session, $db: 'bench' }, { id: 'documents', docs }));
  }
  return batches;
}

interface RunResult {
  storage: Storage;
  insertMBPerCpu: number;
  insertMBPerWall: number;
  scanMBPerCpu: number;
  memoryRatio: number;
  /** dbpath only: seconds from SIGKILL to accepting connections again, with all the data. */
  recoverySeconds?: number;
  /** dbpath only: bytes in the data directory after the insert. */
  directoryBytes?: number;
}

function directoryBytes(dir: string): number {
  return readdirSync(dir).reduce((sum, name) => sum + statSync(join(dir, name)).size, 0);
}

async function runOnce(storage: Storage): Promise<RunResult> {
  const batches = buildBatches();
  const dbPath = storage === 'dbpath' ? mkdtempSync(join(tmpdir(), 'ferry-bench-dbpath-')) : undefined;
  const profileDir = process.env.FERRY_BENCH_CPU_PROF;
  const cluster = await spawnCluster(
    { noopIntervalMs: 0, ttlIntervalMs: 0, dbPath },
    profileDir ? ['--cpu-prof', '--cpu-prof-dir', profileDir] : [],
  );
  const clients = await Promise.all(Array.from({ length: connections }, () => RawConnection.open(cluster.port)));
  try {
    const idleRss = rssBytes(cluster.pid);

    // Insert: every connection sends its share of the batches, one at a time.
    let next = 0;
    const cpuBefore = cpuSeconds(cluster.pid);
    const started = performance.now();
    await Promise.all(
      clients.map(async (client) => {
        while (next < batches.length) okOf(await client.send(batches[next++]));
      }),
    );
    const insertWall = (performance.now() - started) / 1000;
    const insertCpu = cpuSeconds(cluster.pid) - cpuBefore;
    const insertedMB = (totalDocs * DOC_BYTES) / 1e6;
    batches.length = 0;

    const stats = BSON.deserialize(await clients[0].send(opMsg({ collStats: 'docs', $db: 'bench' })));
    const storedBytes = Number(stats.size);
    const loadedRss = rssBytes(cluster.pid);

    // Scan: find + getMore until the cursor is exhausted, replies counted, not decoded.
    const scanCpuBefore = cpuSeconds(cluster.pid);
    const scanStarted = performance.now();
    let scanned = 0;
    let reply = await clients[0].send(opMsg({ find: 'docs', batchSize: 1_000_000, $db: 'bench' }));
    scanned += reply.length;
    let id = cursorIdOf(reply);
    while (!id.isZero()) {
      reply = await clients[0].send(opMsg({ getMore: id, collection: 'docs', $db: 'bench' }));
      scanned += reply.length;
      id = cursorIdOf(reply);
    }
    const scanWall = (performance.now() - scanStarted) / 1000;
    const scanCpu = cpuSeconds(cluster.pid) - scanCpuBefore;

    const mb = (n: number) => (n / 1e6).toFixed(0);
    console.log(
      `[${storage}] inserted ${totalDocs.toLocaleString()} × ${DOC_BYTES}-byte documents${RETRYABLE ? ' (retryable)' : ''} (${insertedMB.toFixed(0)} MB) over ${connections} connections`,
    );
    console.log(
      `[${storage}] insert: ${(insertedMB / insertCpu).toFixed(0)} MB per server CPU-second ` +
        `(${insertCpu.toFixed(2)} s CPU), ${(insertedMB / insertWall).toFixed(0)} MB/s wall`,
    );
    console.log(
      `[${storage}] scan:   ${(scanned / 1e6 / scanCpu).toFixed(0)} MB per server CPU-second ` +
        `(${scanCpu.toFixed(2)} s CPU), ${(scanned / 1e6 / scanWall).toFixed(0)} MB/s wall`,
    );
    console.log(
      `[${storage}] memory: RSS ${mb(loadedRss)} MB (idle ${mb(idleRss)} MB) for ${mb(storedBytes)} MB stored: ` +
        `${(loadedRss / storedBytes).toFixed(2)}× stored, ${((loadedRss - idleRss) / storedBytes).toFixed(2)}× above idle`,
    );
    const result: RunResult = {
      storage,
      insertMBPerCpu: insertedMB / insertCpu,
      insertMBPerWall: insertedMB / insertWall,
      scanMBPerCpu: scanned / 1e6 / scanCpu,
      memoryRatio: loadedRss / storedBytes,
    };
    if (dbPath) {
      result.directoryBytes = directoryBytes(dbPath);
      for (const client of clients) client.close();
      const killed = performance.now();
      await cluster.restart({ signal: 'SIGKILL' });
      result.recoverySeconds = (performance.now() - killed) / 1000;
      const check = await RawConnection.open(cluster.port);
      const count = BSON.deserialize(await check.send(opMsg({ count: 'docs', $db: 'bench' }))).n as number;
      check.close();
      if (count !== totalDocs) throw new Error(`after SIGKILL and restart: ${count} documents, expected ${totalDocs}`);
      console.log(
        `[${storage}] directory ${mb(result.directoryBytes)} MB; ` +
          `SIGKILL → restarted with all ${count.toLocaleString()} documents in ${result.recoverySeconds.toFixed(2)} s`,
      );
    }
    return result;
  } finally {
    for (const client of clients) client.close();
    await cluster.stop();
    if (dbPath) rmSync(dbPath, { recursive: true, force: true });
  }
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

// Runs alternate between the storages, so that both see the same (noisy) machine.
const storages: Storage[] = storageArg === 'both' ? ['memory', 'dbpath'] : [storageArg];
const results: RunResult[] = [];
for (let run = 0; run < runs; run++) for (const storage of storages) results.push(await runOnce(storage));
if (results.length > 1) {
  const of = (storage: Storage, pick: (r: RunResult) => number) => results.filter((r) => r.storage === storage).map(pick);
  for (const storage of storages) {
    const inserts = of(storage, (r) => r.insertMBPerCpu);
    console.log(
      `${storage}: insert MB per server CPU-second ${inserts.map((v) => v.toFixed(0)).join(' · ')} ` +
        `(median ${median(inserts).toFixed(0)}); scan median ${median(of(storage, (r) => r.scanMBPerCpu)).toFixed(0)}; ` +
        `wall insert median ${median(of(storage, (r) => r.insertMBPerWall)).toFixed(0)} MB/s`,
    );
  }
  if (storages.length === 2) {
    const ratio = median(of('dbpath', (r) => r.insertMBPerCpu)) / median(of('memory', (r) => r.insertMBPerCpu));
    console.log(`dbpath ÷ memory, insert per CPU-second (medians): ${ratio.toFixed(2)}`);
    console.log(
      `dbpath recovery after SIGKILL: ${of('dbpath', (r) => r.recoverySeconds!)
        .map((v) => v.toFixed(2))
        .join(' · ')} s`,
    );
  }
}
