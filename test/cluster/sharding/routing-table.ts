/**
 * A sharded collection's routing table: its chunks (contiguous, non-overlapping key ranges that
 * cover the whole key space, each owned by one shard), as `config.chunks` lists them. Routers
 * find the owner of a key; shards find the ranges they own.
 */
import { type ObjectId, type Timestamp, UUID } from 'bson';
import { type KeyTuple, ShardKeyPattern, compareKeyValues, compareTuples } from './shard-key.js';

/** One `config.chunks` entry, with its bounds as tuples. */
export interface Chunk {
  /** The `config.chunks` `_id`. */
  id?: ObjectId;
  min: KeyTuple;
  max: KeyTuple;
  shard: string;
  /** `lastmod`: the chunk version (major = migrations, minor = splits). */
  lastmod: Timestamp;
}

/** What `config.collections` says of a sharded collection. */
export interface ShardedCollectionInfo {
  ns: string;
  uuid: UUID;
  key: Record<string, unknown>;
  unique: boolean;
  epoch: ObjectId;
  timestamp: Timestamp;
}

export class RoutingTable {
  readonly pattern: ShardKeyPattern;
  /** Sorted by `min`. */
  readonly chunks: Chunk[];

  constructor(
    readonly info: ShardedCollectionInfo,
    chunks: Chunk[],
  ) {
    this.pattern = new ShardKeyPattern(info.key);
    this.chunks = [...chunks].sort((a, b) => compareTuples(a.min, b.min));
  }

  get ns(): string {
    return this.info.ns;
  }

  /** Index of the chunk holding `key`. */
  indexOf(key: KeyTuple): number {
    let lo = 0;
    let hi = this.chunks.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >>> 1;
      if (compareTuples(this.chunks[mid]!.min, key) <= 0) lo = mid;
      else hi = mid - 1;
    }
    return lo;
  }

  /**
   * The shard owning a raw document: for a one-field key (most are), its value is compared with
   * the chunks' bounds directly, no tuple built (a router routes every document this way).
   */
  shardOfRaw(doc: Buffer): string {
    if (this.pattern.fields.length !== 1) return this.shardOf(this.pattern.keyOfRaw(doc));
    const value = this.pattern.valueOfRaw(doc, this.pattern.fields[0]!);
    let lo = 0;
    let hi = this.chunks.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >>> 1;
      if (compareKeyValues(this.chunks[mid]!.min[0], value) <= 0) lo = mid;
      else hi = mid - 1;
    }
    return this.chunks[lo]!.shard;
  }

  /** The chunk holding `key`. */
  chunkOf(key: KeyTuple): Chunk {
    return this.chunks[this.indexOf(key)]!;
  }

  /** The shard owning `key`. */
  shardOf(key: KeyTuple): string {
    return this.chunkOf(key).shard;
  }

  /** Every shard owning at least one chunk, in shard-id order. */
  shards(): string[] {
    return [...new Set(this.chunks.map((c) => c.shard))].sort();
  }

  /** The ranges one shard owns. */
  rangesOf(shard: string): Chunk[] {
    return this.chunks.filter((c) => c.shard === shard);
  }

  /** The collection version: the highest chunk version. */
  version(): Timestamp {
    let best = this.chunks[0]!.lastmod;
    for (const c of this.chunks) if (c.lastmod.greaterThan(best)) best = c.lastmod;
    return best;
  }

  /** The chunk whose bounds are exactly [min, max), if any. */
  exactChunk(min: KeyTuple, max: KeyTuple): Chunk | undefined {
    return this.chunks.find((c) => compareTuples(c.min, min) === 0 && compareTuples(c.max, max) === 0);
  }
}

/** The `_id` of a chunk document is an ObjectId in 5.0+; the collection is named by its UUID. */
export function uuidOf(value: unknown): UUID {
  if (value instanceof UUID) return value;
  const binary = value as { buffer?: Uint8Array; sub_type?: number };
  return new UUID(Buffer.from(binary.buffer!));
}
