/**
 * The few fields the copy and change-apply paths decide on, read from raw BSON by a scan of the
 * buffer (scan.ts) and a decode of just those values (decode.ts).
 */
import type { Document, Timestamp } from 'bson';
import { BsonType, bsonTypeName } from './element-types.js';
import { decodeDocument, decodeValue } from './decode.js';
import { encodeFieldName, findElement, findElements, valueBytes, type RawElement } from './scan.js';
import { MissingBsonField, UnexpectedBsonType } from '../errors/errors.js';

const ID = encodeFieldName('_id');

/** The raw `_id` element of a document (every stored document has one). */
export function findId(doc: Uint8Array, offset = 0): RawElement {
  const element = findElement(doc, ID, offset);
  if (element === undefined) throw new MissingBsonField({ field: '_id' });
  return element;
}

/**
 * The `_id` of a raw document as a type-faithful `bson` value (an int32 `_id` is an `Int32`, an
 * int64 a `Long`, a double a `Double`), ready to be used as a query bound or checkpoint.
 */
export function readId(doc: Uint8Array, offset = 0): unknown {
  return decodeValue(doc, findId(doc, offset));
}

/** A namespace as change events report it (`coll` is absent for database-level events). */
export interface EventNamespace {
  db: string;
  coll?: string;
}

/** The fields of a change event that routing and application decide on. */
export interface ChangeEventFields {
  /** The event's `_id`: its resume token (decoded on first use; routing never needs it). */
  readonly resumeToken: Document;
  /** The resume token's raw bytes (a view into the event buffer). */
  readonly resumeTokenBytes: Uint8Array;
  /** `insert`, `update`, `replace`, `delete`, `drop`, `rename`, `dropDatabase`, `invalidate`... */
  readonly operationType: string;
  /** The namespace the event applies to (absent for `invalidate`). */
  readonly ns?: EventNamespace;
  /** The target of a `rename`. */
  readonly to?: EventNamespace;
  /**
   * `_id` (plus shard key fields on sharded collections) of the document a CRUD event touches,
   * decoded type-faithfully on first use.
   */
  readonly documentKey?: Document;
  /**
   * The raw bytes of `documentKey` (a view into the event buffer, no copy): equal keys have equal
   * bytes, so lanes can be chosen by hashing these without decoding.
   */
  readonly documentKeyBytes?: Uint8Array;
  /** The oplog time of the event. */
  readonly clusterTime?: Timestamp;
}

const EVENT_FIELDS = ['_id', 'operationType', 'ns', 'to', 'documentKey', 'clusterTime'].map(encodeFieldName);
const NAMESPACE_FIELDS = ['db', 'coll'].map(encodeFieldName);

function expectType(field: string, element: RawElement, type: number, expected: string): void {
  if (element.type !== type) throw new UnexpectedBsonType({ field: field, expected: expected, actual: bsonTypeName(element.type) });
}

/** `{db, coll}` read by a scan of the nested document (no deserialize). */
function readNamespace(event: Uint8Array, field: string, element: RawElement): EventNamespace {
  expectType(field, element, BsonType.document, 'a document');
  const [db, coll] = findElements(event, NAMESPACE_FIELDS, element.valueOffset);
  if (db === undefined) throw new MissingBsonField({ field: `${field}.db` });
  expectType(`${field}.db`, db, BsonType.string, 'a string');
  if (coll === undefined) return { db: decodeValue(event, db) as string };
  expectType(`${field}.coll`, coll, BsonType.string, 'a string');
  return { db: decodeValue(event, db) as string, coll: decodeValue(event, coll) as string };
}

/** A view of one raw change event; documents are decoded only when asked for. */
class RawChangeEvent implements ChangeEventFields {
  readonly operationType: string;
  readonly resumeTokenBytes: Uint8Array;
  readonly ns?: EventNamespace;
  readonly to?: EventNamespace;
  readonly documentKeyBytes?: Uint8Array;
  readonly clusterTime?: Timestamp;
  #resumeToken?: Document;
  #documentKey?: Document;

  constructor(event: Uint8Array, offset: number) {
    const [id, operationType, ns, to, documentKey, clusterTime] = findElements(event, EVENT_FIELDS, offset);
    if (id === undefined) throw new MissingBsonField({ field: '_id' });
    if (operationType === undefined) throw new MissingBsonField({ field: 'operationType' });
    expectType('_id', id, BsonType.document, 'a document');
    expectType('operationType', operationType, BsonType.string, 'a string');
    this.resumeTokenBytes = valueBytes(event, id);
    this.operationType = decodeValue(event, operationType) as string;
    if (ns !== undefined) this.ns = readNamespace(event, 'ns', ns);
    if (to !== undefined) this.to = readNamespace(event, 'to', to);
    if (documentKey !== undefined) {
      expectType('documentKey', documentKey, BsonType.document, 'a document');
      this.documentKeyBytes = valueBytes(event, documentKey);
    }
    if (clusterTime !== undefined) {
      expectType('clusterTime', clusterTime, BsonType.timestamp, 'a timestamp');
      this.clusterTime = decodeValue(event, clusterTime) as Timestamp;
    }
  }

  get resumeToken(): Document {
    return (this.#resumeToken ??= decodeDocument(this.resumeTokenBytes));
  }

  get documentKey(): Document | undefined {
    if (this.documentKeyBytes === undefined) return undefined;
    return (this.#documentKey ??= decodeDocument(this.documentKeyBytes));
  }
}

/**
 * Reads the routing fields of a raw change event in one pass over its top-level elements
 * (`resumeToken` and `documentKey` are decoded lazily). Throws `MissingBsonField` without
 * `_id` or `operationType`, and `UnexpectedBsonType` when a field has the wrong type.
 */
export function readChangeEvent(event: Uint8Array, offset = 0): ChangeEventFields {
  return new RawChangeEvent(event, offset);
}
