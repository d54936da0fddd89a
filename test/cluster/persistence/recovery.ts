/**
 * Starting a node from its data directory: the checkpoint's records, then the journal's, are
 * replayed into a model (namespaces by key, each collection's documents by `_id` in natural
 * order), and the model becomes the node's catalog; oplog entries go straight into its oplog,
 * and its clock continues after the newest time it had handed out.
 */
import { existsSync, statSync } from 'node:fs';
import { BSON, type Timestamp, UUID } from 'bson';
import type { Instance } from '../instance.js';
import { Collection, View } from '../storage/collection.js';
import type { IndexSpec } from '../storage/indexes.js';
import { Index } from '../storage/indexes.js';
import { canonicalKey } from '../storage/keys.js';
import { ownedCopy } from '../storage/memory.js';
import { readId } from '../raw.js';
import { RecordReader, RecordType } from './records.js';
import { decodeKey, decodeNamespace, decodeOplogEntry, type NamespaceMeta, splitDocument } from './codec.js';

/** The checkpoint header's fields. */
export interface CheckpointHeader {
  format: string;
  version: number;
  /** The journal that continues this checkpoint: `journal-<generation>.bson`. */
  generation: number;
  /** The cluster time when the checkpoint was taken. */
  clusterTime: Timestamp;
  /** Newest oplog timestamp truncated before then. */
  truncatedThrough?: Timestamp;
}

export const CHECKPOINT_FORMAT = 'ferry-test-cluster';
export const CHECKPOINT_VERSION = 1;

/** A data directory's contents is not something this server wrote (or not intact). */
export class DataDirectoryError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'DataDirectoryError';
  }
}

class RecoveryModel {
  readonly namespaces = new Map<string, NamespaceMeta>();
  /** Collection UUID (hex) → canonical `_id` → document, in natural order. */
  readonly documents = new Map<string, Map<string, Buffer>>();
  header: CheckpointHeader | undefined;

  constructor(private readonly instance: Instance) {}

  apply(type: number, payload: Buffer): void {
    switch (type) {
      case RecordType.header:
        throw new DataDirectoryError('a checkpoint header in the middle of a file');
      case RecordType.namespace: {
        const { key, meta } = decodeNamespace(payload);
        this.namespaces.set(key, meta);
        break;
      }
      case RecordType.namespaceRemoved: {
        const key = decodeKey(payload);
        this.namespaces.delete(key);
        this.documents.delete(key);
        break;
      }
      case RecordType.documentPut: {
        const { uuid, doc } = splitDocument(payload);
        this.put(uuid, ownedCopy(doc));
        break;
      }
      case RecordType.documentDelete: {
        const { uuid, doc } = splitDocument(payload);
        this.documents.get(uuid)?.delete(canonicalKey(readId(doc)));
        break;
      }
      case RecordType.oplogEntry:
        this.instance.oplog.append(decodeOplogEntry(payload, ownedCopy));
        break;
      case RecordType.oplogInsert: {
        const entry = decodeOplogEntry(payload, ownedCopy);
        this.instance.oplog.append(entry);
        this.put(Buffer.from(entry.ui!.buffer).toString('hex'), entry.o as Buffer);
        break;
      }
      default:
        throw new DataDirectoryError(`unknown record type ${type}`);
    }
  }

  private put(uuid: string, doc: Buffer): void {
    let docs = this.documents.get(uuid);
    if (!docs) this.documents.set(uuid, (docs = new Map()));
    // A rewrite keeps the document's place in natural order (Map.set keeps insertion order).
    docs.set(canonicalKey(readId(doc)), doc);
  }

  /** Builds the node's catalog from the model. */
  build(): void {
    const catalog = this.instance.catalog;
    for (const [key, meta] of this.namespaces) {
      if (meta.kind === 'view') {
        catalog.move(new View(meta.db, meta.name, meta.viewOn, meta.pipeline, meta.collation), meta.db, meta.name);
        continue;
      }
      const collection = new Collection(meta.db, meta.name, {}, new UUID(meta.uuid.buffer));
      // Documents go in before the collection's options and secondary indexes: the set was valid
      // when written, so loading it must neither evict (capped) nor re-check it document by document.
      for (const raw of this.documents.get(key)?.values() ?? []) collection.insert(raw, readId(raw));
      collection.options = meta.options;
      const [idSpec, ...secondary] = meta.indexes as IndexSpec[];
      if (idSpec) collection.indexes[0] = new Index(idSpec, collection);
      for (const spec of secondary) collection.addIndex(spec);
      catalog.move(collection, meta.db, meta.name);
    }
    this.documents.clear();
    this.namespaces.clear();
  }
}

/** The header of a checkpoint file, checked. */
function readHeader(type: number, payload: Buffer): CheckpointHeader {
  if (type !== RecordType.header) throw new DataDirectoryError('the checkpoint does not start with its header');
  const header = BSON.deserialize(payload) as CheckpointHeader;
  if (header.format !== CHECKPOINT_FORMAT) throw new DataDirectoryError(`not a ${CHECKPOINT_FORMAT} checkpoint`);
  if (header.version !== CHECKPOINT_VERSION)
    throw new DataDirectoryError(`checkpoint format version ${header.version} is not ${CHECKPOINT_VERSION}`);
  return header;
}

export interface Recovered {
  generation: number;
  /** Intact bytes of the journal (appending continues there; a torn tail is cut off). */
  journalBytes: number;
}

/**
 * Replays `checkpoint` and then `journal(generation)` into the instance (whose catalog and oplog
 * are empty). Throws DataDirectoryError when the checkpoint is damaged: a checkpoint is written
 * whole and renamed into place, so it is never legitimately torn.
 */
export function recover(instance: Instance, checkpoint: string, journalPath: (generation: number) => string): Recovered {
  const model = new RecoveryModel(instance);
  const reader = new RecordReader(checkpoint);
  let first = true;
  for (const { type, payload } of reader.records()) {
    if (first) {
      model.header = readHeader(type, payload);
      first = false;
    } else model.apply(type, payload);
  }
  if (!model.header || reader.validBytes !== statSync(checkpoint).size) throw new DataDirectoryError(`${checkpoint} is damaged`);
  const header = model.header;
  const journal = journalPath(header.generation);
  let journalBytes = 0;
  if (existsSync(journal)) {
    const journalReader = new RecordReader(journal);
    for (const { type, payload } of journalReader.records()) model.apply(type, payload);
    journalBytes = journalReader.validBytes;
  }
  model.build();
  if (header.truncatedThrough) instance.oplog.restoreTruncatedThrough(header.truncatedThrough);
  instance.clock.advanceTo(header.clusterTime);
  const newest = instance.oplog.newest();
  if (newest) instance.clock.advanceTo(newest.ts);
  return { generation: header.generation, journalBytes };
}
