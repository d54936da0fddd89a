/**
 * Fenced writes to the metadata database: a second or stale Ferry must not act on a sync another
 * instance now holds (lease.ts). Every metadata document carries `epoch`, the lease epoch of the
 * instance that last wrote it, and every write goes through `FencedCollection`:
 *
 * - before it, the writer's lease is made sure of (`Fence.ensure`: still valid by the writer's
 *   own clock, or renewed now; a lease taken over is LeaseLost);
 * - an update, replace or delete applies only to documents whose epoch is not newer than the
 *   writer's (`epoch: {$not: {$gt: mine}}`), and stamps the writer's epoch; an update that finds
 *   its document held by a newer epoch is LeaseLost, as is an upsert that runs into one (the
 *   insert it falls back to collides on `_id`);
 * - inserted documents are stamped with the writer's epoch.
 *
 * So once a new holder has written a document, no older holder can change it: the resume
 * document, the commit record and the change-stream position are the first things a new holder
 * writes. Reads are not fenced. Worker threads, which hold no lease of their own, fence with the
 * epoch they were started with (`fixedFence`).
 */
import type {
  AnyBulkWriteOperation,
  BulkWriteOptions,
  BulkWriteResult,
  CountDocumentsOptions,
  CreateIndexesOptions,
  Collection,
  DeleteOptions,
  DeleteResult,
  Document,
  Filter,
  FindOptions,
  IndexSpecification,
  InsertManyResult,
  InsertOneOptions,
  InsertOneResult,
  OptionalUnlessRequiredId,
  ReplaceOptions,
  UpdateFilter,
  UpdateOptions,
  UpdateResult,
  WithoutId,
} from 'mongodb';
import { InternalError, LeaseLost } from '../errors/errors.js';

/** The field of every metadata document that names the epoch of its last writer. */
export const EPOCH_FIELD = 'epoch';

/** What a fenced write needs of the lease it writes under. */
export interface Fence {
  /** The epoch writes are stamped with (throws when no lease is held: a bug). */
  readonly epoch: number;
  /** Resolves when the lease is held and valid (renewing it if its time ran out); LeaseLost when another holder has it. */
  ensure(): Promise<void>;
  /** False: writes are neither stamped with the epoch nor refused on a newer one (crossClusterFence). Default true. */
  readonly stamps?: boolean;
}

/**
 * A fence for the copy of a record Ferry keeps on the sync's *other* cluster (the way back a
 * reversible commit leaves on its source, src/meta/way-back.ts). No lease of that cluster covers
 * it, and epochs of different clusters' leases cannot be compared: it is written only while this
 * instance's own lease is valid (`ensure`), and neither stamped nor filtered by epoch, so that
 * the lease a later direction takes on that cluster can replace or clear it.
 */
export function crossClusterFence(fence: Fence): Fence {
  return {
    get epoch(): number {
      return fence.epoch;
    },
    ensure: () => fence.ensure(),
    stamps: false,
  };
}

/** A fence for a worker thread: the epoch its pool was started with; the main thread keeps the lease. */
export function fixedFence(epoch: number): Fence {
  return { epoch, ensure: async () => {} };
}

/** No lease: reading only (recovery, preflight). Any write is a bug. */
export const READ_ONLY: Fence = {
  get epoch(): number {
    throw new InternalError('a metadata write without a lease (this store reads only)');
  },
  ensure: async () => {
    throw new InternalError('a metadata write without a lease (this store reads only)');
  },
};

/** Matches documents no newer holder has written. */
function notNewer(epoch: number): Document {
  return { [EPOCH_FIELD]: { $not: { $gt: epoch } } };
}

function stampUpdate(update: UpdateFilter<Document> | Document[], epoch: number): UpdateFilter<Document> | Document[] {
  if (Array.isArray(update)) return [...update, { $set: { [EPOCH_FIELD]: epoch } }];
  return { ...update, $set: { ...(update.$set ?? {}), [EPOCH_FIELD]: epoch } };
}

function isDuplicateKey(error: unknown): boolean {
  return (error as { code?: unknown } | null)?.code === 11000;
}

/** A metadata collection whose writes are fenced (see the module comment); reads pass through. */
export class FencedCollection<T extends Document> {
  constructor(
    /** The collection itself, for reads. */
    readonly raw: Collection<T>,
    readonly fence: Fence,
  ) {}

  find(filter: Filter<T>, options?: FindOptions) {
    return this.raw.find(filter, options);
  }

  findOne(filter: Filter<T>, options?: FindOptions) {
    return this.raw.findOne(filter, options);
  }

  countDocuments(filter: Filter<T>, options?: CountDocumentsOptions) {
    return this.raw.countDocuments(filter, options);
  }

  async #epoch(): Promise<number> {
    await this.fence.ensure();
    return this.fence.epoch;
  }

  get #stamps(): boolean {
    return this.fence.stamps !== false;
  }

  /** `filter`, limited to documents no newer holder has written. */
  #fenced(filter: Filter<T>, epoch: number): Filter<T> {
    return this.#stamps ? ({ ...filter, ...notNewer(epoch) } as Filter<T>) : filter;
  }

  #stamped<D extends Document>(doc: D, epoch: number): D {
    return this.#stamps ? { ...doc, [EPOCH_FIELD]: epoch } : doc;
  }

  /** A write that matched nothing: LeaseLost if a newer holder has the document, else as the driver said. */
  async #explain(filter: Filter<T>, epoch: number): Promise<void> {
    const newer = await this.raw.findOne({ ...filter, [EPOCH_FIELD]: { $gt: epoch } } as Filter<T>);
    if (newer !== null) throw this.#lost(epoch, newer);
  }

  #lost(epoch: number, newer?: Document): LeaseLost {
    const by = newer === undefined ? 'a newer holder' : `a holder at epoch ${String(newer[EPOCH_FIELD])}`;
    return new LeaseLost(
      `this Ferry (lease epoch ${epoch}) may no longer write the metadata of its sync in ${this.raw.collectionName}: ` +
        `${by} has taken the sync over`,
    );
  }

  async updateOne(filter: Filter<T>, update: UpdateFilter<T> | Document[], options: UpdateOptions = {}): Promise<UpdateResult> {
    const epoch = await this.#epoch();
    let result: UpdateResult;
    try {
      const stamped = this.#stamps ? stampUpdate(update as UpdateFilter<Document>, epoch) : update;
      result = await this.raw.updateOne(this.#fenced(filter, epoch), stamped as UpdateFilter<T>, options);
    } catch (error) {
      if (options.upsert === true && isDuplicateKey(error)) throw this.#lost(epoch);
      throw error;
    }
    if (result.matchedCount === 0 && result.upsertedCount === 0) await this.#explain(filter, epoch);
    return result;
  }

  /** Updates every matching document this holder may write (documents a newer holder wrote are left alone). */
  async updateMany(filter: Filter<T>, update: UpdateFilter<T>, options: UpdateOptions = {}): Promise<UpdateResult> {
    const epoch = await this.#epoch();
    const stamped = this.#stamps ? stampUpdate(update as UpdateFilter<Document>, epoch) : update;
    return this.raw.updateMany(this.#fenced(filter, epoch), stamped as UpdateFilter<T>, options);
  }

  async replaceOne(filter: Filter<T>, replacement: WithoutId<T>, options: ReplaceOptions = {}): Promise<UpdateResult | Document> {
    const epoch = await this.#epoch();
    let result: UpdateResult | Document;
    try {
      result = await this.raw.replaceOne(this.#fenced(filter, epoch), this.#stamped(replacement, epoch), options);
    } catch (error) {
      if (options.upsert === true && isDuplicateKey(error)) throw this.#lost(epoch);
      throw error;
    }
    if ((result as UpdateResult).matchedCount === 0 && (result as UpdateResult).upsertedCount === 0) await this.#explain(filter, epoch);
    return result;
  }

  async insertOne(doc: OptionalUnlessRequiredId<T>, options?: InsertOneOptions): Promise<InsertOneResult<T>> {
    const epoch = await this.#epoch();
    return this.raw.insertOne(this.#stamped(doc, epoch), options);
  }

  async insertMany(docs: readonly OptionalUnlessRequiredId<T>[], options?: BulkWriteOptions): Promise<InsertManyResult<T>> {
    const epoch = await this.#epoch();
    return this.raw.insertMany(
      docs.map((doc) => this.#stamped(doc, epoch)),
      options,
    );
  }

  async deleteOne(filter: Filter<T>, options?: DeleteOptions): Promise<DeleteResult> {
    const epoch = await this.#epoch();
    return this.raw.deleteOne(this.#fenced(filter, epoch), options);
  }

  /**
   * Several writes in one round trip, each fenced as its single form is (updateOne, insertOne,
   * deleteOne, deleteMany). Updates that matched nothing because a newer holder wrote their
   * documents are LeaseLost.
   */
  async bulkWrite(operations: readonly AnyBulkWriteOperation<T>[], options?: BulkWriteOptions): Promise<BulkWriteResult> {
    const epoch = await this.#epoch();
    const updates: Filter<T>[] = [];
    const fenced = operations.map((operation): AnyBulkWriteOperation<T> => {
      if ('updateOne' in operation) {
        const { filter, update, ...rest } = operation.updateOne;
        if (rest.upsert !== true) updates.push(filter);
        const stamped = this.#stamps ? stampUpdate(update as UpdateFilter<Document>, epoch) : update;
        return { updateOne: { ...rest, filter: this.#fenced(filter, epoch), update: stamped as UpdateFilter<T> } };
      }
      if ('insertOne' in operation) return { insertOne: { document: this.#stamped(operation.insertOne.document, epoch) } };
      if ('deleteOne' in operation)
        return { deleteOne: { ...operation.deleteOne, filter: this.#fenced(operation.deleteOne.filter, epoch) } };
      if ('deleteMany' in operation)
        return { deleteMany: { ...operation.deleteMany, filter: this.#fenced(operation.deleteMany.filter, epoch) } };
      throw new InternalError(`a fenced bulk write of ${Object.keys(operation).join(', ')} is not supported`);
    });
    const result = await this.raw.bulkWrite(fenced, options);
    if (this.#stamps && result.matchedCount < updates.length) await this.#explain({ $or: updates } as Filter<T>, epoch);
    return result;
  }

  /** Creates an index of the metadata collection (no document is written): only while the lease is held. */
  async createIndex(spec: IndexSpecification, options?: CreateIndexesOptions): Promise<string> {
    await this.fence.ensure();
    return this.raw.createIndex(spec, options);
  }

  async deleteMany(filter: Filter<T>, options?: DeleteOptions): Promise<DeleteResult> {
    const epoch = await this.#epoch();
    return this.raw.deleteMany(this.#fenced(filter, epoch), options);
  }
}
