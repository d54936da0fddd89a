/**
 * An append-only journal file. Records are collected in memory as writes happen and written
 * (write(2)) in one go before a reply acknowledges them (`write`): from then on they survive the
 * process being killed, since the kernel holds them. `sync` (fdatasync) makes them survive the
 * machine stopping too; concurrent callers share one fdatasync (group commit, as mongod's journal).
 */
import { closeSync, fdatasync, ftruncateSync, openSync, writeSync, writevSync } from 'node:fs';
import { promisify } from 'node:util';

const fdatasyncAsync = promisify(fdatasync);
/** Buffers per writev (Linux's IOV_MAX). */
const IOV_MAX = 1024;

/** Writes all of `parts`, in order, with writev (no copy into one buffer), IOV_MAX at a time. */
export function writeParts(fd: number, parts: readonly Buffer[]): void {
  for (let i = 0; i < parts.length; i += IOV_MAX) {
    const chunk = parts.slice(i, i + IOV_MAX);
    let total = 0;
    for (const part of chunk) total += part.length;
    const done = writevSync(fd, chunk);
    // writev may write less than asked: the rest goes out with write(2).
    if (done < total) {
      const rest = Buffer.concat(chunk, total);
      for (let at = done; at < total;) at += writeSync(fd, rest, at, total - at);
    }
  }
}

export class JournalFile {
  private readonly fd: number;
  private pending: Buffer[] = [];
  private pendingBytes = 0;
  /** Bytes written to the file (by `write`). */
  private written: number;
  /** Bytes known to be on stable storage. */
  private synced: number;
  private syncing: Promise<void> | undefined;
  private closed = false;

  /** Opens `path` for appending after its first `validBytes` bytes (a torn tail is cut off). */
  constructor(
    readonly path: string,
    validBytes = 0,
  ) {
    this.fd = openSync(path, 'a+');
    ftruncateSync(this.fd, validBytes);
    this.written = validBytes;
    this.synced = validBytes;
  }

  /** Bytes in the file, plus those still to write. */
  get size(): number {
    return this.written + this.pendingBytes;
  }

  /** Whether written bytes are not yet on stable storage. */
  get unsynced(): boolean {
    return this.synced < this.written + this.pendingBytes;
  }

  append(parts: readonly Buffer[]): void {
    if (this.closed) return;
    for (const part of parts) {
      this.pending.push(part);
      this.pendingBytes += part.length;
    }
  }

  /** Writes what was appended (write(2): it survives the process, not yet the machine). */
  write(): void {
    if (this.pendingBytes === 0 || this.closed) return;
    const parts = this.pending;
    this.written += this.pendingBytes;
    this.pending = [];
    this.pendingBytes = 0;
    writeParts(this.fd, parts);
  }

  /** Writes what was appended and waits until it is on stable storage. */
  async sync(): Promise<void> {
    this.write();
    const target = this.written;
    while (this.synced < target && !this.closed) {
      this.syncing ??= this.fdatasyncOnce();
      await this.syncing;
    }
  }

  private async fdatasyncOnce(): Promise<void> {
    const upTo = this.written;
    try {
      await fdatasyncAsync(this.fd);
      this.synced = Math.max(this.synced, upTo);
    } finally {
      this.syncing = undefined;
    }
  }

  /** Writes what is pending and closes the file (after any fdatasync in flight). */
  async close(): Promise<void> {
    this.write();
    this.closed = true;
    await this.syncing?.catch(() => undefined);
    closeSync(this.fd);
  }

  /** Closes without writing what is pending (those records are in a checkpoint already). */
  closeNow(): void {
    this.closed = true;
    this.pending = [];
    this.pendingBytes = 0;
    if (this.syncing) void this.syncing.finally(() => closeSync(this.fd)).catch(() => undefined);
    else closeSync(this.fd);
  }
}
