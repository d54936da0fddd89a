/**
 * Applying one lane batch of raw CRUD change events to the destination, in a worker thread:
 * read each event's few fields (crud-event.ts), keep the last event per document (write-plan.ts),
 * look up again the documents of updates whose lookup found nothing (moved-documents.ts), record
 * tombstones for deletes while the initial copy runs (tombstones.ts), then send one unordered
 * `update` and one `delete` command per namespace, all namespaces at once (destination-writes.ts).
 *
 * The whole batch is idempotent, so a transient failure is retried whole under the cluster layer's
 * retry policy (src/cluster/retry.ts); anything else fails the batch and the lane reports it.
 */
import type { MongoClient } from 'mongodb';
import { documentEnd } from '../bson/index.js';
import type { ShardKeyPattern } from '../cluster/shard-key.js';
import { readCrudEvent, type CrudEvent } from './crud-event.js';
import { sendStatements } from './destination-writes.js';
import { idElementOf, lookUpMovedDocuments } from './moved-documents.js';
import { recordTombstones, tombstoneDocument } from './tombstones.js';
import { documentWrites, planWrites, type NamespaceWrites } from './write-plan.js';
import { retryTransient } from '../cluster/retry.js';

/** One batch, as the main thread hands it to a worker (plain data; `events` is transferred). */
export interface ApplyTask {
  /** Raw change events, back to back, in stream order (a buffer of its own). */
  events: Uint8Array;
  /** Leave a tombstone for each delete (the initial copy may still write documents). */
  recordTombstones: boolean;
  /** The shard keys of the collections sharded on the destination, by `db.coll` (absent: none is). */
  shardKeys?: Record<string, ShardKeyPattern>;
}

export interface ApplyOutcome {
  /** Events in the batch. */
  events: number;
  /** Events made redundant by a later one for the same document. */
  coalesced: number;
  /** Write statements sent. */
  statements: number;
  /** Documents looked up again after a null lookup (renamed collections). */
  lookedUp: number;
}

/** What applying needs from the thread it runs in. */
export interface ApplyResources {
  source: MongoClient;
  destination: MongoClient;
  /** The instance id (tombstones name it). */
  instance: string;
}

/** The events of a batch buffer, parsed. */
export function readBatch(events: Uint8Array): CrudEvent[] {
  const parsed: CrudEvent[] = [];
  for (let offset = 0; offset < events.length; offset = documentEnd(events, offset) + 1) {
    parsed.push(readCrudEvent(events, offset));
  }
  return parsed;
}

async function applyNamespace(
  writes: NamespaceWrites,
  resources: ApplyResources,
  recordDeletes: boolean,
): Promise<{ statements: number; lookedUp: number }> {
  const db = resources.destination.db(writes.db);
  const moved =
    writes.unresolved.length === 0 ? [] : await lookUpMovedDocuments(resources.source, writes.db, writes.coll, writes.unresolved);
  // Statements of a retried attempt are built again from the plan: never twice into one list.
  const all: NamespaceWrites = { ...writes, upserts: [...writes.upserts], deletes: [...writes.deletes], movedIds: [...writes.movedIds] };
  // A document found again may have changed its shard key meanwhile: its other-key copies go too.
  for (const document of moved) documentWrites(all, idElementOf(document), document, true);
  const tombstoned = recordDeletes ? [...all.deletedIds, ...all.movedIds] : [];
  if (tombstoned.length > 0) {
    const namespace = `${writes.db}.${writes.coll}`;
    await recordTombstones(
      resources.destination,
      tombstoned.map((id) => tombstoneDocument(resources.instance, namespace, id)),
    );
  }
  const upsert = () => (all.upserts.length > 0 ? sendStatements(db, 'update', writes.coll, all.upserts) : undefined);
  const remove = () => (all.deletes.length > 0 ? sendStatements(db, 'delete', writes.coll, all.deletes) : undefined);
  if (all.movedIds.length === 0) await Promise.all([upsert(), remove()]);
  else {
    // A document's copy under its old shard key goes first: on the shard that has it, the upsert
    // under the new key would otherwise meet it as a duplicate `_id`.
    await remove();
    await upsert();
  }
  return { statements: all.upserts.length + all.deletes.length, lookedUp: moved.length };
}

/** Applies one batch (see the module comment). */
export async function applyBatch(task: ApplyTask, resources: ApplyResources): Promise<ApplyOutcome> {
  const events = readBatch(task.events);
  let plan = planWrites(events, task.shardKeys);
  const apply = () =>
    retryTransient(() => Promise.all(plan.namespaces.map((writes) => applyNamespace(writes, resources, task.recordTombstones))));
  const results = await apply().catch((error: unknown) => {
    // A document's upsert met its `_id` on the shard under another key, which no event of the
    // batch said it left (a copy written before its key changed, an update looked up after a
    // later change): every document's other-key copies go first, then the batch again.
    const duplicate = (error as { serverCode?: unknown }).serverCode === 11000;
    if (!duplicate || task.shardKeys === undefined) throw error;
    plan = planWrites(events, task.shardKeys, true);
    return apply();
  });
  return {
    events: plan.events,
    coalesced: plan.coalesced,
    statements: results.reduce((sum, r) => sum + r.statements, 0),
    lookedUp: results.reduce((sum, r) => sum + r.lookedUp, 0),
  };
}
